"""Per-impression credit of an interleaved log: win, tie or loss for the treatment.

An interleaved log has one row per shown result (``impression_id``, ``user_id``,
``rank``, ``doc_id``, ``team``, ``clicked``, optional ``dwell``). Each click is credited to
the team that contributed the clicked result; per impression the treatment wins when its
team got more credited clicks than the control's, loses when fewer, and ties otherwise
(an impression without a credited click is a tie). With more than two teams
(multileaving) each (treatment, control) pair is scored on its own, the other teams'
clicks ignored. Every count is a ``np.bincount`` over impression codes: no Python loop
over impressions. The team column is factorized once and compared as codes (only its
distinct values become text). Each impression's top-ranked row is its first row when the
log holds each impression's rows together in rank order (the usual layout, checked in one
pass); else it is found by a bincount over (impression, rank) cells when ranks are whole
numbers in a compact range, and by a sort otherwise.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from abrank.config.interleaved import CREDITS, credit_name
from abrank.errors import ConfigError, DataError

LOG_COLUMNS: tuple[str, ...] = ("impression_id", "user_id", "rank", "team", "clicked")
"""The columns an interleaved log must have (``dwell`` too for ``sat_clicks``)."""

OUTCOME_COLUMNS: tuple[str, ...] = (
    "impression_id",
    "user_id",
    "treatment_credit",
    "control_credit",
    "outcome",
    "clicked",
    "first_team",
)
"""The columns of :func:`impression_outcomes`, in order."""


def impression_outcomes(
    log: pd.DataFrame,
    *,
    control: str,
    treatment: str,
    credit: str = "clicks",
    sat_dwell: float = 30.0,
    method: str = "team_draft",
) -> pd.DataFrame:
    """One row per impression of an interleaved log: the credit of each team and the outcome.

    Columns: ``impression_id`` and ``user_id`` (as in the log), ``treatment_credit`` and
    ``control_credit`` (credited clicks on each team's results, int), ``outcome`` (+1: the
    treatment wins, 0: tie, -1: loss; int8), ``clicked`` (any click in the impression, on
    any team's result, whatever the credit), ``first_team`` (the team of the impression's
    top-ranked result). Impressions in the order they first appear in the log.

    ``credit="clicks"`` counts every click; ``"sat_clicks"`` counts clicks with
    ``dwell >= sat_dwell`` seconds (a click without a dwell is not satisfied). ``clicked``
    is 0/1 or bool.

    ``method="team_draft"`` (and any log with a ``team`` column only) credits each click to
    the team of its row. ``method="balanced"`` applies the balanced rule of Joachims (2003)
    as Chapelle et al. (TOIS 2012, section 2.2) state it, from the columns ``rank_<control>``
    and ``rank_<treatment>`` (each shown document's rank in each source ranking, missing when
    it does not hold it; the lists of ``abrank.interleave(method="balanced")`` carry them):
    with the lowest credited click at document ``d``, ``k = min(rank_A(d), rank_B(d))``, and
    each team's credit is the number of credited clicks on documents in its own top ``k``
    (a click may count for both teams).

    ConfigError for an unknown credit or method, equal team names or a bad ``sat_dwell``; DataError
    for missing columns, a team name not in the log, a ``clicked`` value that is not 0/1,
    a rank repeated within an impression, or an impression with two users.
    """
    credit = _check_credit(credit)
    if method not in ("team_draft", "balanced"):
        raise ConfigError(f"method: expected team_draft or balanced, got {method!r}")
    if not isinstance(control, str) or not isinstance(treatment, str) or control == treatment:
        raise ConfigError(
            f"control, treatment: expected two different team names, got "
            f"{control!r} and {treatment!r}"
        )
    if isinstance(sat_dwell, bool) or not np.isfinite(sat_dwell) or sat_dwell < 0:
        raise ConfigError(f"sat_dwell: expected a number of seconds >= 0, got {sat_dwell!r}")
    needed = LOG_COLUMNS + (("dwell",) if credit == "sat_clicks" else ())
    if method == "balanced":
        needed += (f"rank_{control}", f"rank_{treatment}")
    _need_columns(log, needed)

    codes, impressions, starts = _impression_codes(log["impression_id"])
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise DataError(f"log: row {row + 1}: impression_id: expected an id, got nothing")
    n = len(impressions)
    team_codes, team_names = _team_codes(log["team"])
    _check_teams(team_names, control, treatment)
    clicked = _clicks(log["clicked"])
    credited = clicked
    if credit == "sat_clicks":
        dwell = pd.to_numeric(log["dwell"], errors="coerce").to_numpy(dtype=float)
        credited = clicked & (dwell >= sat_dwell)  # NaN dwell: not satisfied
    if method == "balanced":
        control_credit, treatment_credit = _balanced_credit(
            log, codes, credited, n, control, treatment
        )
    else:
        on_treatment = (team_names == treatment)[team_codes]
        on_control = (team_names == control)[team_codes]
        treatment_credit = np.bincount(codes[credited & on_treatment], minlength=n)
        control_credit = np.bincount(codes[credited & on_control], minlength=n)
    first = _first_rows(codes, log, n, starts)
    users = log["user_id"].to_numpy()
    _check_one_user(codes, users, first, log, starts)
    treatment_credit = treatment_credit.astype(np.int64)
    control_credit = control_credit.astype(np.int64)
    return pd.DataFrame(
        {
            "impression_id": impressions,
            "user_id": log["user_id"].iloc[first].to_numpy(),
            "treatment_credit": treatment_credit,
            "control_credit": control_credit,
            "outcome": np.sign(treatment_credit - control_credit).astype(np.int8),
            "clicked": np.bincount(codes[clicked], minlength=n) > 0,
            "first_team": team_names[team_codes[first]],
        }
    )


def _balanced_credit(
    log: pd.DataFrame, codes: np.ndarray, credited: np.ndarray, n: int, control: str, treatment: str
) -> tuple[np.ndarray, np.ndarray]:
    """Per impression, the control's and the treatment's credit by the balanced rule: k from
    the lowest credited click (its document's higher rank in the two rankings), each team
    credited with the credited clicks on documents in its own top k."""
    ranks = pd.to_numeric(log["rank"], errors="coerce").to_numpy(dtype=float)
    source = {}
    for team in (control, treatment):
        values = pd.to_numeric(log[f"rank_{team}"], errors="coerce").to_numpy(dtype=float)
        source[team] = np.where(np.isnan(values), np.inf, values)
    rows = np.flatnonzero(credited)
    order = rows[np.lexsort((ranks[rows], codes[rows]))]
    last = order[np.r_[codes[order][1:] != codes[order][:-1], True]] if order.size else order
    k = np.full(n, -np.inf)
    k[codes[last]] = np.minimum(source[control][last], source[treatment][last])
    credits = []
    for team in (control, treatment):
        inside = credited & (source[team] <= k[codes])
        credits.append(np.bincount(codes[inside], minlength=n))
    return credits[0], credits[1]


def delta_ab(wins: int, ties: int, losses: int) -> float:
    """Δ_AB = (wins + ties / 2) / N − 1/2, with N = wins + ties + losses.

    The treatment's preference (Chapelle, Joachims, Radlinski & Yue, TOIS 2012): 0 when
    both teams are equally preferred, +1/2 when the treatment wins every impression.
    ConfigError for negative counts or N = 0.
    """
    counts = {"wins": wins, "ties": ties, "losses": losses}
    for name, value in counts.items():
        if isinstance(value, bool) or not float(value).is_integer() or value < 0:
            raise ConfigError(f"{name}: expected a whole number >= 0, got {value!r}")
    total = wins + ties + losses
    if total == 0:
        raise ConfigError("wins, ties, losses: expected at least one impression, got none")
    return (wins + ties / 2) / total - 0.5


def _check_credit(credit: str) -> str:
    name = credit_name(credit)
    if name is not None:
        return name
    raise ConfigError(f"credit: expected one of {', '.join(CREDITS)}, got {credit!r}")


def _need_columns(log: pd.DataFrame, columns: tuple[str, ...]) -> None:
    if not isinstance(log, pd.DataFrame):
        raise DataError(f"log: expected a DataFrame, got {type(log).__name__}")
    missing = [c for c in columns if c not in log.columns]
    if missing:
        raise DataError(
            f"log: columns: expected {', '.join(columns)}, got no {', '.join(missing)} "
            f"(columns: {', '.join(map(str, log.columns))})"
        )


def _impression_codes(
    column: pd.Series,
) -> tuple[np.ndarray, pd.Index | np.ndarray, np.ndarray | None]:
    """``pd.factorize(column, sort=False)`` (codes in order of first appearance, -1 for a
    missing id), and the first row of each impression when every impression's rows sit
    together (else None).

    A numeric column is factorized by its runs of equal neighbours: only the first row of
    each run is hashed, which gives the same codes (a run's id first appears at its first
    row). The runs are the impressions' blocks when there are as many runs as ids.
    """
    numeric = isinstance(column.dtype, np.dtype) and column.dtype.kind in "iuf"
    if not numeric or len(column) < 2:
        codes, uniques = pd.factorize(column, sort=False)
        return codes, uniques, None
    values = column.to_numpy()
    starts = np.flatnonzero(values[1:] != values[:-1]) + 1
    if len(starts) > len(values) // 2:  # mostly runs of one row: not worth it
        codes, uniques = pd.factorize(column, sort=False)
        return codes, uniques, None
    starts = np.r_[0, starts]
    run_codes, uniques = pd.factorize(column.iloc[starts], sort=False)
    codes = np.repeat(run_codes, np.diff(np.r_[starts, len(values)]))
    together = len(uniques) == len(starts) and not (run_codes < 0).any()
    return codes, uniques, starts if together else None


def _team_codes(column: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Each row's team as a code into the team names, the names as ``astype(str)`` writes
    them (an object array; a missing team stays NaN and matches no name).

    Only the distinct values are converted to text. A categorical's codes are used as they
    are; integers, booleans and text factorize exactly (equal text only for equal values);
    an object column that holds anything but text (``1`` and ``1.0`` are one value to a
    hash table, ``"1"`` and ``"1.0"`` as text) and a float column (``0.0`` and ``-0.0``)
    are converted row by row first.
    """
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = column.cat.codes.to_numpy()
        missing = codes < 0
        kinds = np.arange(len(dtype.categories))
        if missing.any():  # a missing team: one more name, converted with the others
            codes = np.where(missing, len(kinds), codes.astype(np.int64))
            kinds = np.r_[kinds, -1]
        values = pd.Series(pd.Categorical.from_codes(kinds, dtype=dtype))
        return codes, values.astype(str).to_numpy(dtype=object)
    exact = (
        pd.api.types.is_string_dtype(dtype)
        or pd.api.types.is_integer_dtype(dtype)
        or pd.api.types.is_bool_dtype(dtype)
    )
    if exact:
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        plain_text = pd.api.types.infer_dtype(uniques, skipna=True) in ("string", "empty")
        if not pd.api.types.is_object_dtype(dtype) or plain_text:
            names = pd.Series(uniques, dtype=dtype).astype(str).to_numpy(dtype=object)
            return codes, names
    codes, texts = pd.factorize(column.astype(str).to_numpy(dtype=object), use_na_sentinel=False)
    return codes, np.asarray(texts, dtype=object)


def _check_teams(teams: np.ndarray, control: str, treatment: str) -> None:
    """DataError when a named team never appears in the log (a misspelled arm)."""
    present = pd.unique(teams)
    for role, name in (("control", control), ("treatment", treatment)):
        if name not in set(present):
            shown = ", ".join(sorted(map(str, present))[:10]) or "none"
            raise DataError(
                f"log: team: expected the {role} team {name!r} in the log, got teams {shown}"
            )


def _clicks(values: pd.Series) -> np.ndarray:
    """The clicked column as bool; DataError naming the first value that is not 0/1."""
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.to_numpy(dtype=bool)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    bad = ~((numbers == 0) | (numbers == 1))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"log: row {row + 1}: clicked: expected 0/1 or true/false, got {_cell(values.iloc[row])!r}"
        )
    return numbers == 1


def _first_rows(
    codes: np.ndarray, log: pd.DataFrame, n: int, starts: np.ndarray | None
) -> np.ndarray:
    """Per impression, the row of its top-ranked result; DataError if a rank repeats.

    ``starts``: each impression's first row when its rows sit together (else None); when
    the ranks also rise within each block, those rows are the answer. Else whole-number
    ranks go through :func:`_first_rows_by_cells`, and the rest (or a repeat, to name it)
    through a sort.
    """
    rank = log["rank"]
    plain_integers = isinstance(rank.dtype, np.dtype) and rank.dtype.kind in "iu"
    if plain_integers and starts is not None:
        values = rank.to_numpy()
        rising = values[1:] > values[:-1]
        rising[starts[1:] - 1] = True  # a block's first row may rank anywhere
        if rising.all():
            return starts
    if plain_integers:
        first = _first_rows_by_cells(codes, rank.to_numpy(), n)  # never missing
        if first is not None:
            return first
    ranks = pd.to_numeric(rank, errors="coerce").to_numpy(dtype=float)
    if np.isnan(ranks).any():
        row = int(np.flatnonzero(np.isnan(ranks))[0])
        raise DataError(
            f"log: row {row + 1}: rank: expected a number, got {_cell(rank.iloc[row])!r}"
        )
    if not plain_integers and (ranks == np.floor(ranks)).all():
        first = _first_rows_by_cells(codes, ranks, n)
        if first is not None:
            return first
    order = np.lexsort((ranks, codes))
    c, r = codes[order], ranks[order]
    repeat = (c[1:] == c[:-1]) & (r[1:] == r[:-1])
    if repeat.any():
        row = int(order[np.flatnonzero(repeat)[0] + 1])
        raise DataError(
            f"log: row {row + 1}: rank: expected each rank once per impression, got rank "
            f"{_cell(rank.iloc[row])!r} twice in impression {_cell(log['impression_id'].iloc[row])!r}"
        )
    starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
    first = np.empty(n, dtype=np.int64)
    first[c[starts]] = order[starts]
    return first


def _first_rows_by_cells(codes: np.ndarray, ranks: np.ndarray, n: int) -> np.ndarray | None:
    """Per impression, the row of its top-ranked result, without a sort, for whole-number
    ``ranks``: None when they span more than ``4 * rows / impressions`` values (a table of
    (impression, rank) cells would be too large) or when a rank repeats within an
    impression (the caller's sort then names the repeat).

    Each row's cell is ``code * span + (rank - lowest rank)``; a bincount of the cells finds
    the repeats, the first filled cell of each impression's block is its top rank, and the
    row of each impression whose rank is its top rank is its first row.
    """
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    low, high = ranks.min().item(), ranks.max().item()
    if not -(2**52) < low <= high < 2**52:  # beyond exact whole numbers in a float
        return None
    span = int(high - low + 1)
    if span * n > 4 * len(ranks) + 1024:
        return None
    cells = codes * span
    np.add(cells, ranks, out=cells, casting="unsafe")  # whole numbers: exact in int64
    cells -= int(low)
    filled = np.bincount(cells, minlength=n * span)
    if filled.max() > 1:
        return None
    top = np.argmax(filled.reshape(n, span) > 0, axis=1)
    del filled, cells
    top_rank = (top + low).astype(ranks.dtype)
    rows = np.flatnonzero(ranks == top_rank[codes])  # one per impression: no repeats
    first = np.empty(n, dtype=np.int64)
    first[codes[rows]] = rows
    return first


def _check_one_user(
    codes: np.ndarray,
    users: np.ndarray,
    first: np.ndarray,
    log: pd.DataFrame,
    starts: np.ndarray | None,
) -> None:
    """DataError when an impression's rows name more than one user (the first row whose
    user differs from that of its impression's top-ranked row).

    With each impression's rows together (``starts``) and plain numbers for users, a
    user that changes only where a block starts is the proof that there is none.
    """
    if starts is not None and users.dtype.kind in "iub" and len(users) > 1:
        changes = users[1:] != users[:-1]
        changes[starts[1:] - 1] = False
        if not changes.any():
            return
    if users.dtype.kind in "iub":  # compared as they are; others by codes (NaN equals NaN)
        differs = users != users[first[codes]]
    else:
        user_codes = pd.factorize(users)[0]
        differs = user_codes != user_codes[first[codes]]
    if differs.any():
        row = int(np.flatnonzero(differs)[0])
        raise DataError(
            f"log: row {row + 1}: user_id: expected one user per impression, got "
            f"{_cell(log['user_id'].iloc[row])!r} and {_cell(log['user_id'].iloc[first[codes[row]]])!r} in "
            f"impression {_cell(log['impression_id'].iloc[row])!r}"
        )


def _cell(value: object) -> object:
    """A cell as a plain Python value, so that messages read ``1``, not ``np.int64(1)``."""
    return value.item() if isinstance(value, np.generic) else value
