"""Interleaved result lists from two rankings: team-draft and balanced interleaving.

Both methods run over all queries at once: each ranking becomes a padded matrix of
document codes (one row per query, one column per rank), and the merge is a loop over
the positions of the shown list, each step a few NumPy operations over every query.
The random choices of a query come from a hash of (seed, query id) only (:func:`coin_flips`),
so a seed gives the same lists whatever the order or the other queries of the input.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
import pyarrow as pa

from abrank.errors import ConfigError, DataError
from abrank.io.idcodes import text_codes
from abrank.io.subtopics import collapse_frame

METHODS: tuple[str, ...] = ("team_draft", "balanced")
"""The interleaving methods :func:`interleave` knows."""

RANKING_COLUMNS: tuple[str, ...] = ("query_id", "doc_id", "rank")
"""The columns each input rankings frame must have."""

OUTPUT_COLUMNS: tuple[str, ...] = ("query_id", "rank", "doc_id", "team")
"""The columns of the interleaved lists, in order."""

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def interleave(
    control: pd.DataFrame,
    treatment: pd.DataFrame,
    *,
    method: str = "team_draft",
    seed: int = 0,
    depth: int | None = None,
    names: tuple[str, str] = ("control", "treatment"),
    impressions: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The interleaved list of every query, or of every impression: one row per shown result.

    ``impressions`` (one row per served impression: ``impression_id`` and ``query_id``,
    other columns carried onto the impression's rows) merges the query's rankings afresh
    for every impression, its coin flips a hash of (seed, impression id): this is how an
    interleaving test must serve them. The result then starts with ``impression_id``, its
    impressions in the frame's order (an impression whose query neither ranking holds has
    no rows). Without ``impressions`` each query gets one list, seeded by its query id:
    fine for one look at a list, but reused for every visit of a query it shows the same
    team assignment again and again, and the clustered test of such a log is far too
    confident (an A/A test rejects a true null 15% to 67% of the time, not 5%).

    ``control`` and ``treatment`` are canonical rankings frames (``query_id``, ``doc_id``,
    ``rank``; other columns are ignored); within a query the order is by ``rank``, ties in
    the order of the rows. The result has ``query_id`` and ``doc_id`` as strings, ``rank``
    (1 = top, consecutive) and ``team``: ``names[0]`` for a result contributed by the
    control ranking, ``names[1]`` for one from the treatment. Queries come in the byte
    order of their ids as text (integer and text ids are the same ids: ``7`` is ``"7"``),
    ranks in order within each query.

    ``method="team_draft"`` (Radlinski, Kurup & Joachims, CIKM 2008): at each step the team
    with fewer picks so far picks next; when both have as many, a coin flip decides
    (:func:`coin_flips`: round ``j`` is the step where each team has ``j`` picks, and a
    true flip lets the control pick first). The picking team adds its highest-ranked
    document not already shown, and is credited with it: a document both rankings hold
    belongs to the team that placed it.

    ``method="balanced"`` (Joachims 2003; Chapelle et al., TOIS 2012, section 2.2): two
    pointers ``ka`` and ``kb`` into the rankings; the team whose pointer is lower moves
    next, and at equal pointers the team chosen by the query's first coin flip (round 0)
    moves first, always. The moving team adds the document at its pointer unless already
    shown, and its pointer advances either way. Credit follows the rank prefix rule for a
    click's document ``d``, with ``team`` the team that placed it (the team that ranks
    ``d`` at least as high as the other). Balanced interleaving is credited by the rule of
    Joachims (2003) as Chapelle et al. (TOIS 2012, section 2.2) state it, not by ``team``:
    ``k`` is the rank in A or B (whichever is higher) of the lowest clicked document, and
    each team is credited with the clicked documents in its own top ``k``, so a click can
    count for both (a document at the same rank in both lists always does). The lists of
    ``method="balanced"`` carry the rank of each shown document in each source ranking,
    columns ``rank_<name>`` (:func:`source_rank_column`; missing when a ranking does not
    hold it), and :func:`abrank.interleaving.impression_outcomes` with
    ``method="balanced"`` applies the rule from them.

    A query in one ranking only is interleaved with an empty list: all its results come
    from the other team. When one team's list is used up (every document shown), it stops
    picking and the other team continues, until both are used up or ``depth`` results are
    shown (``depth=None``: no limit).

    Raises ConfigError for an unknown ``method``, a bad ``depth``, ``seed`` or ``names``;
    DataError for a frame without the columns, with a rank that is not a number, or with
    a document twice in one query.
    """
    method = check_method(method)
    names = _check_names(names)
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
        raise ConfigError(f"depth: expected a whole number >= 1 or None, got {depth!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ConfigError(f"seed: expected a whole number, got {seed!r}")
    frames = [
        _check_frame(frame, f"{name} rankings")
        for frame, name in ((control, names[0]), (treatment, names[1]))
    ]
    query_codes, query_ids = _shared_codes(frames, "query_id")
    doc_codes, doc_ids = _shared_codes(frames, "doc_id")
    n_queries = len(query_ids)
    split = len(frames[0].rank)
    matrices = [
        _ranking_matrix(part, query_codes, doc_codes, frame, n_queries, depth)
        for part, frame in ((slice(0, split), frames[0]), (slice(split, None), frames[1]))
    ]
    longest = max(matrices[0].shape[1], matrices[1].shape[1])
    limit = longest * 2 if depth is None else min(depth, longest * 2)
    kernel = team_draft_codes if method == "team_draft" else balanced_codes
    rounds = max((limit + 1) // 2, 1)
    team_names = np.array(names, dtype=object)
    if impressions is not None:
        return _per_impression(
            impressions, query_ids, matrices, kernel, seed, rounds, limit, doc_ids, team_names
        )
    flips = coin_flips(query_ids, seed, rounds)
    shown, teams = kernel(matrices[0], matrices[1], flips, limit)

    filled = shown >= 0
    rows, positions = np.nonzero(filled)
    out = pd.DataFrame(
        {
            "query_id": pd.Series(query_ids.take(rows), dtype="str"),
            "rank": (positions + 1).astype(np.int64),
            "doc_id": pd.Series(doc_ids.take(shown[filled]), dtype="str"),
            "team": team_names[teams[filled]],
        }
    )
    if kernel is balanced_codes:
        out = out.assign(**_source_ranks(shown, matrices[0], matrices[1], filled, team_names))
    return out


def grades_of_shown(shown: pd.DataFrame, judgments: pd.DataFrame) -> pd.Series:
    """Each shown result's grade in ``judgments`` (canonical frame: ``query_id``,
    ``doc_id``, ``relevance``), aligned on ``shown``'s index; NaN when unjudged. Subtopic
    judgments give each document its highest grade."""
    judgments = collapse_frame(judgments)
    keys = pd.MultiIndex.from_arrays(
        [judgments["query_id"].astype(str), judgments["doc_id"].astype(str)]
    )
    at = keys.get_indexer(pd.MultiIndex.from_arrays([shown["query_id"], shown["doc_id"]]))
    grades = judgments["relevance"].to_numpy(dtype=float)
    return pd.Series(grades[at], index=shown.index).where(at >= 0)


def source_rank_column(team: str) -> str:
    """The column of a balanced interleaving's lists that holds each shown document's rank
    in ``team``'s ranking (missing when that ranking does not hold it)."""
    return f"rank_{team}"


def _source_ranks(
    shown: np.ndarray, a: np.ndarray, b: np.ndarray, filled: np.ndarray, team_names: np.ndarray
) -> dict[str, pd.Series]:
    """Each shown document's rank in each source ranking (nullable Int64, missing when
    the ranking does not hold it), the columns :func:`source_rank_column` names: the
    balanced credit rule needs them."""
    out = {}
    for matrix, team in ((a, team_names[0]), (b, team_names[1])):
        at = _positions_in(shown, _at_least_one_column(matrix))[filled]
        ranks = pd.array(np.where(at >= 0, at + 1, 0), dtype="Int64")
        ranks[at < 0] = pd.NA
        out[source_rank_column(str(team))] = pd.Series(ranks)
    return out


def _per_impression(
    impressions: pd.DataFrame,
    query_ids: pa.Array,
    matrices: list[np.ndarray],
    kernel: Callable[[np.ndarray, np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray]],
    seed: int,
    rounds: int,
    limit: int,
    doc_ids: pa.Array,
    team_names: np.ndarray,
) -> pd.DataFrame:
    """The lists of :func:`interleave` with ``impressions``: each impression takes its
    query's rows of the ranking matrices and its own coin flips."""
    if not isinstance(impressions, pd.DataFrame):
        raise DataError(f"impressions: expected a DataFrame, got {type(impressions).__name__}")
    missing = [c for c in ("impression_id", "query_id") if c not in impressions.columns]
    if missing:
        raise DataError(
            f"impressions: columns: expected impression_id, query_id, got no "
            f"{', '.join(missing)} (columns: {', '.join(map(str, impressions.columns))})"
        )
    for column in ("impression_id", "query_id"):
        empty = impressions[column].isna().to_numpy()
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            raise DataError(f"impressions: row {row + 1}: {column}: expected an id, got nothing")
    ids = impressions["impression_id"].astype(str)
    twice = ids.duplicated().to_numpy()
    if twice.any():
        row = int(np.flatnonzero(twice)[0])
        raise DataError(
            f"impressions: row {row + 1}: impression_id: expected each impression once, "
            f"got {ids.iloc[row]!r} twice"
        )
    known = pd.Index(np.asarray(query_ids.to_pylist(), dtype=object))
    at = known.get_indexer(impressions["query_id"].astype(str).to_numpy(dtype=object))
    served = np.flatnonzero(at >= 0)
    flips = coin_flips(ids.to_numpy(dtype=object)[served], seed, rounds)
    shown, teams = kernel(matrices[0][at[served]], matrices[1][at[served]], flips, limit)
    filled = shown >= 0
    rows, positions = np.nonzero(filled)
    owner = served[rows]
    out = {
        "impression_id": pd.Series(ids.to_numpy(dtype=object)[owner], dtype="str"),
        "query_id": pd.Series(query_ids.take(at[owner]), dtype="str"),
        "rank": (positions + 1).astype(np.int64),
        "doc_id": pd.Series(doc_ids.take(shown[filled]), dtype="str"),
        "team": team_names[teams[filled]],
    }
    if kernel is balanced_codes:
        a, b = matrices[0][at[served]], matrices[1][at[served]]
        out.update(_source_ranks(shown, a, b, filled, team_names))
    for column in impressions.columns:
        if column not in out:
            out[column] = impressions[column].to_numpy()[owner]
    return pd.DataFrame(out)


def check_method(method: str, field: str = "method") -> str:
    """``method`` when it names an interleaving method; ConfigError with the choices if not
    (``field`` names the option in the message)."""
    if isinstance(method, str) and method.strip().lower().replace("-", "_") in METHODS:
        return method.strip().lower().replace("-", "_")
    close = difflib.get_close_matches(str(method).lower(), METHODS, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"{field}: expected one of {', '.join(METHODS)}, got {method!r}{hint}")


def coin_flips(
    query_ids: Sequence[str] | np.ndarray | pa.Array, seed: int, rounds: int
) -> np.ndarray:
    """The coin flips of each query: a bool matrix (query x round); true: control first.

    Flip ``j`` of a query is the top bit of SplitMix64's finalizer applied to
    ``h + (j + 1) * 0x9E3779B97F4A7C15`` (mod 2**64), where ``h`` is pandas'
    ``hash_array`` of the query id as a string with a key derived from the seed (the
    first 16 hex digits of BLAKE2b of ``str(seed)``). A query's flips depend on its id and
    the seed only: not on the other queries nor their order.
    """
    key = hashlib.blake2b(str(int(seed)).encode("utf-8"), digest_size=8).hexdigest()
    if isinstance(query_ids, (pa.Array, pa.ChunkedArray)):
        query_ids = query_ids.to_numpy(zero_copy_only=False)
    texts = pd.Series(np.asarray(query_ids, dtype=object), dtype=object).astype(str)
    ids = texts.to_numpy(dtype=object)
    base = pd.util.hash_array(ids, hash_key=key, categorize=False).astype(np.uint64)
    steps = (np.arange(1, rounds + 1, dtype=np.uint64) * _GOLDEN)[None, :]
    with np.errstate(over="ignore"):
        x = base[:, None] + steps
        x = (x ^ (x >> np.uint64(30))) * _MIX1
        x = (x ^ (x >> np.uint64(27))) * _MIX2
        x = x ^ (x >> np.uint64(31))
    return (x >> np.uint64(63)).astype(bool)


def team_draft_codes(
    a: np.ndarray, b: np.ndarray, flips: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """Team-draft interleaving of two padded code matrices (query x rank, -1 = no document).

    Returns ``(shown, team)``, each query x ``depth``: the document code at each shown
    position (-1 past the end of the list) and its team (0 for ``a``, 1 for ``b``, -1
    past the end). ``flips[q, j]`` true: ``a`` picks first in round ``j`` of query ``q``.
    """
    a, b = _at_least_one_column(a), _at_least_one_column(b)
    a_in_b, b_in_a = _cross_positions(a, b)
    n = a.shape[0]
    rows = np.arange(n)
    used_a, used_b = a < 0, b < 0
    next_a, next_b = _first_unused(used_a), _first_unused(used_b)
    picks = np.zeros((2, n), dtype=np.int64)
    shown = np.full((n, depth), -1, dtype=np.int64)
    team = np.full((n, depth), -1, dtype=np.int8)
    for step in range(depth):
        has_a, has_b = next_a < a.shape[1], next_b < b.shape[1]
        a_turn = (picks[0] < picks[1]) | (
            (picks[0] == picks[1]) & flips[:, min(step // 2, flips.shape[1] - 1)]
        )
        pick_a = has_a & (a_turn | ~has_b)
        pick_b = has_b & ~pick_a
        if not (pick_a.any() or pick_b.any()):
            break
        _place(shown, team, step, rows, pick_a, a, next_a, 0, used_a, used_b, a_in_b)
        _place(shown, team, step, rows, pick_b, b, next_b, 1, used_b, used_a, b_in_a)
        picks[0] += pick_a
        picks[1] += pick_b
        _skip_used(next_a, used_a)
        _skip_used(next_b, used_b)
    return shown, team


def balanced_codes(
    a: np.ndarray, b: np.ndarray, flips: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """Balanced interleaving of two padded code matrices (query x rank, -1 = no document).

    Returns ``(shown, team)`` as :func:`team_draft_codes` does. ``flips[q, 0]`` true: ``a``
    moves first whenever the two pointers of query ``q`` are equal.
    """
    a, b = _at_least_one_column(a), _at_least_one_column(b)
    a_in_b, b_in_a = _cross_positions(a, b)
    n = a.shape[0]
    rows = np.arange(n)
    length_a, length_b = (a >= 0).sum(axis=1), (b >= 0).sum(axis=1)
    used_a, used_b = a < 0, b < 0
    ka = np.zeros(n, dtype=np.int64)
    kb = np.zeros(n, dtype=np.int64)
    count = np.zeros(n, dtype=np.int64)
    shown = np.full((n, depth), -1, dtype=np.int64)
    team = np.full((n, depth), -1, dtype=np.int8)
    a_first = flips[:, 0]
    for _ in range(a.shape[1] + b.shape[1]):
        room = count < depth
        has_a, has_b = (ka < length_a) & room, (kb < length_b) & room
        a_turn = (ka < kb) | ((ka == kb) & a_first)
        move_a = has_a & (a_turn | ~has_b)
        move_b = has_b & ~move_a
        if not (move_a.any() or move_b.any()):
            break
        at_a = np.minimum(ka, a.shape[1] - 1)
        at_b = np.minimum(kb, b.shape[1] - 1)
        add_a = move_a & ~used_a[rows, at_a]
        add_b = move_b & ~used_b[rows, at_b]
        for adds, matrix, at, code, own, other, cross in (
            (add_a, a, at_a, 0, used_a, used_b, a_in_b),
            (add_b, b, at_b, 1, used_b, used_a, b_in_a),
        ):
            q = rows[adds]
            shown[q, count[q]] = matrix[q, at[q]]
            team[q, count[q]] = code
            _mark_used(q, at[q], own, other, cross)
        count += add_a | add_b
        ka += move_a
        kb += move_b
    return shown, team


def _place(
    shown: np.ndarray,
    team: np.ndarray,
    step: int,
    rows: np.ndarray,
    picking: np.ndarray,
    matrix: np.ndarray,
    at: np.ndarray,
    code: int,
    own: np.ndarray,
    other: np.ndarray,
    cross: np.ndarray,
) -> None:
    """Show, for the queries ``picking``, the document at position ``at`` of ``matrix``."""
    q = rows[picking]
    shown[q, step] = matrix[q, at[q]]
    team[q, step] = code
    _mark_used(q, at[q], own, other, cross)


def _mark_used(
    q: np.ndarray, at: np.ndarray, own: np.ndarray, other: np.ndarray, cross: np.ndarray
) -> None:
    """Mark the shown documents as used in their own list and, when there, in the other."""
    own[q, at] = True
    there = cross[q, at]
    held = there >= 0
    other[q[held], there[held]] = True


def _skip_used(pointer: np.ndarray, used: np.ndarray) -> None:
    """Move each row's pointer past the used columns (in place), up to the width.

    Each pass touches only the rows whose pointer still stands on a used column: a
    step of the merge uses one or two columns per row, so a pass or two suffice.
    """
    rows = np.arange(len(pointer))
    width = used.shape[1]
    while rows.size:
        rows = rows[pointer[rows] < width]
        rows = rows[used[rows, pointer[rows]]]
        pointer[rows] += 1


def _first_unused(used: np.ndarray) -> np.ndarray:
    """Per row, the first column not used yet (the width when every column is used)."""
    free = ~used
    return np.where(free.any(axis=1), free.argmax(axis=1), used.shape[1])


def _at_least_one_column(matrix: np.ndarray) -> np.ndarray:
    if matrix.shape[1] > 0:
        return matrix
    return np.full((matrix.shape[0], 1), -1, dtype=np.int64)


def _cross_positions(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each cell of ``a`` its column in ``b`` (same row, same code), else -1; and back."""
    return _positions_in(a, b), _positions_in(b, a)


def _positions_in(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n, width_b = b.shape
    span = np.int64(max(int(a.max(initial=-1)), int(b.max(initial=-1))) + 1)
    rows_b = np.repeat(np.arange(n, dtype=np.int64), width_b)
    keys_b = rows_b * span + b.ravel()
    valid = b.ravel() >= 0
    keys_b, columns_b = keys_b[valid], np.tile(np.arange(width_b), n)[valid]
    order = np.argsort(keys_b, kind="stable")
    keys_b, columns_b = keys_b[order], columns_b[order]
    keys_a = np.arange(n, dtype=np.int64)[:, None] * span + a
    found = np.searchsorted(keys_b, keys_a)
    found = np.minimum(found, max(len(keys_b) - 1, 0))
    if len(keys_b) == 0:
        return np.full(a.shape, -1, dtype=np.int64)
    hit = (keys_b[found] == keys_a) & (a >= 0)
    return np.where(hit, columns_b[found], -1)


def _ranking_matrix(
    part: slice,
    query_codes: np.ndarray,
    doc_codes: np.ndarray,
    frame: _Ranking,
    n_queries: int,
    depth: int | None,
) -> np.ndarray:
    """One ranking as a padded query x position matrix of document codes (-1: no document).

    A list longer than ``depth`` is cut to ``depth``: no pick can reach past it, since
    every position a pointer passes holds a document already shown. DataError when a
    document is twice in one query.
    """
    queries, docs = query_codes[part], doc_codes[part]
    ranks = frame.rank
    order = _rank_order(queries, ranks)
    queries, docs = queries[order], docs[order]
    _check_once_per_query(queries, docs, order, frame)
    counts = np.bincount(queries, minlength=n_queries)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    positions = np.arange(len(queries)) - starts[queries]
    width = int(counts.max(initial=0))
    if depth is not None:
        width = min(width, depth)
    keep = positions < width
    matrix = np.full((n_queries, width), -1, dtype=np.int64)
    matrix[queries[keep], positions[keep]] = docs[keep]
    return matrix


def _rank_order(queries: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The rows by (query, rank), ties in row order; no sort when they already are."""
    same = queries[1:] == queries[:-1]
    if bool(((queries[1:] > queries[:-1]) | (same & (ranks[1:] >= ranks[:-1]))).all()):
        return np.arange(len(queries))
    return np.lexsort((np.arange(len(queries)), ranks, queries))


def _check_once_per_query(
    queries: np.ndarray, docs: np.ndarray, order: np.ndarray, frame: _Ranking
) -> None:
    """DataError naming the row, query and document when a document repeats in a query."""
    keys = queries.astype(np.int64) * (int(docs.max(initial=0)) + 1) + docs
    by_key = np.argsort(keys, kind="stable")
    repeats = np.flatnonzero(keys[by_key][1:] == keys[by_key][:-1])
    if repeats.size == 0:
        return
    row = int(order[by_key[repeats + 1]].min())
    raise DataError(
        f"{frame.what}: row {row + 1}: doc_id: expected each document once per "
        f"query, got {_cell(frame.doc_id.iloc[row])!r} twice in query {_cell(frame.query_id.iloc[row])!r}"
    )


def _shared_codes(frames: list[_Ranking], column: str) -> tuple[np.ndarray, pa.Array]:
    """Codes of an id column over both frames (ids as text, in byte order) and the ids."""
    both = pd.concat([getattr(frames[0], column), getattr(frames[1], column)], ignore_index=True)
    codes, ids = text_codes(both, column)
    return codes.astype(np.int64), ids


def _check_names(names: tuple[str, str]) -> tuple[str, str]:
    if (
        not isinstance(names, (tuple, list))
        or len(names) != 2
        or not all(isinstance(n, str) and n.strip() for n in names)
        or names[0] == names[1]
    ):
        raise ConfigError(f"names: expected two different non-empty team names, got {names!r}")
    return (names[0], names[1])


class _Ranking(NamedTuple):
    """One checked input ranking: its name in messages, its id columns and its ranks."""

    what: str
    query_id: pd.Series
    doc_id: pd.Series
    rank: np.ndarray


def _check_frame(frame: pd.DataFrame, what: str) -> _Ranking:
    """The frame's id columns as strings and its ranks as numbers; DataError if it cannot."""
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{what}: expected a DataFrame, got {type(frame).__name__}")
    missing = [c for c in RANKING_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(
            f"{what}: columns: expected {', '.join(RANKING_COLUMNS)}, got no "
            f"{', '.join(missing)} (columns: {', '.join(map(str, frame.columns))})"
        )
    ranks = pd.to_numeric(frame["rank"], errors="coerce")
    bad = ranks.isna().to_numpy()
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{what}: row {row + 1}: rank: expected a number, got {_cell(frame['rank'].iloc[row])!r}"
        )
    for column in ("query_id", "doc_id"):
        empty = frame[column].isna().to_numpy()
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            raise DataError(f"{what}: row {row + 1}: {column}: expected an id, got nothing")
    return _Ranking(what, frame["query_id"], frame["doc_id"], ranks.to_numpy())


def _cell(value: object) -> object:
    """A cell as a plain Python value, so that messages read ``1``, not ``np.int64(1)``."""
    return value.item() if isinstance(value, np.generic) else value
