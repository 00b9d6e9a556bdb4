"""The explanation tables of click readouts: the online A/B design and the interleaving
design (``queries.parquet`` and ``rankings.parquet``, DESIGN.md "Explanations and the
explorer"). Everything runs over whole columns (group-bys and bincounts), never a loop
over queries.

The key
-------
Where the log has a ``query`` column, each table has one row per query text: its key column
is ``query_id`` (the query text). Impressions without a query text are left out of both
tables. Where the log has no query column, the rows are per unit instead, and the key
column is named after ``analysis.unit`` (``user_id``).

Online ``queries`` (:func:`online_explanation`)
-----------------------------------------------
One row per (key, segment values): the key, then

- ``impressions:<arm>`` and ``units:<arm>``: the arm's impressions of the query (of the
  unit) and the distinct units that saw them (0 where the arm never showed it);
- ``<arm>:<metric>``: the metric's mean over those impressions, each impression scored as
  the design scores it (:func:`abrank.engines.clicks.score_impressions`; judged metrics
  leave out the impressions without a value): an arm's overall value is the same mean over
  all its impressions (Σ_u M_u / Σ_u D_u). NaN where the arm never showed the query;
- ``delta:<treatment>:<metric>``: the treatment's value minus the control's;
- ``missing_in``: the arms that never showed the query, ``;``-joined in the config's order
  (empty when every arm did). A unit belongs to one arm by design, so in per-unit rows it
  names the others;
- ``undefined``: the metrics whose value is NaN in some arm (so that their delta is),
  ``;``-joined;
- ``tags:<treatment>``: a list of what happened to the clicks (per-query rows only; empty
  lists per unit):

  - ``clicks_gained_top`` / ``clicks_lost_top``: the treatment's clicks in the top
    :data:`TOP_RANKS` results per impression are above / below the control's;
  - ``clicked_doc_entered``: a document the treatment showed in its top ``depth`` for the
    query got a click, and the control never showed it there for the query;
  - ``clicked_doc_dropped``: a document the control showed and got a click on, which the
    treatment never showed in its top ``depth`` for the query;
  - ``missing_log``: the control or the treatment never showed the query.

  The document tags look at the query over all segment values (``rankings`` has no
  segments); the others at the row's impressions;
- the segment columns.

Online ``rankings``
-------------------
One row per (arm, key, document) the arm showed in its top ``depth`` (the deepest cutoff
of the metrics, at most :data:`MAX_DEPTH`; 100 where a metric has none): ``arm``, the key,
``doc_id``, ``rank`` (the document's **mean** rank over the impressions that showed it
there, float), ``impressions`` (how many impressions showed it), ``clicks``, ``ctr``
(clicks / impressions), ``grade`` (the judgment of (query, document) where the experiment
has judgments and per-query rows, else NaN). Rows by arm (the config's order), key, mean
rank. Without a depth cut the impressions of an arm's rows sum to its log's rows.

Interleaving ``queries`` (:func:`interleaved_explanation`)
----------------------------------------------------------
One row per (key, segment values): the key, ``impressions``, ``units``, ``clicked``
(impressions with any click), ``impressions:<arm>`` (impressions to which the arm's team
contributed a result), ``<arm>:<credit>`` (the credited clicks on the team's results per
impression), per compared pair and credit ``wins:<pair>:<credit>``, ``ties:…``,
``losses:…`` (impressions the pair's treatment won, tied and lost) and
``delta:<pair>:<credit>`` (the query's preference, (wins + ties / 2) / impressions - 1/2,
as the design defines Δ_AB), ``missing_in`` (the arms whose team contributed to none of the
query's impressions), ``undefined`` (always empty: the preference is defined on every
impression, a tie where nothing was clicked), ``tags:<pair>``: ``won`` / ``lost`` (more
wins than losses / fewer, by the first credit), ``no_click`` (no impression of it was
clicked), ``missing_log`` (a team of the pair contributed none of its results); then the
segment columns.

Interleaving ``rankings``
-------------------------
As online's, with ``arm`` the team that contributed the document (a document contributed
by each team in different impressions has a row for each): ``arm``, the key, ``doc_id``,
``rank`` (mean rank in the interleaved lists), ``impressions``, ``clicks``, ``ctr``,
``grade`` (NaN).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from abrank.explain.tables import MAX_DEPTH, explanation_depth

TOP_RANKS = 3
"""The ranks whose clicks ``clicks_gained_top`` and ``clicks_lost_top`` compare."""

ONLINE_TAGS = (
    "clicks_gained_top",
    "clicks_lost_top",
    "clicked_doc_entered",
    "clicked_doc_dropped",
    "missing_log",
)
"""The tags of an online query, in the order a row lists them."""

INTERLEAVED_TAGS = ("won", "lost", "no_click", "missing_log")
"""The tags of an interleaved query, in the order a row lists them."""

RANKING_COLUMNS = ("arm", "doc_id", "rank", "impressions", "clicks", "ctr", "grade")
"""The columns of a click readout's ``rankings`` besides its key (second)."""


@dataclass(frozen=True)
class ClickExplanation:
    """The two tables of the module text, their key column and the depth of the lists."""

    queries: pd.DataFrame
    rankings: pd.DataFrame
    key: str
    depth: int


def has_queries(frames: Sequence[pd.DataFrame]) -> bool:
    """Whether every frame has a ``query`` column with some query text in it."""
    return all("query" in f.columns and bool(f["query"].notna().any()) for f in frames)


# --------------------------------------------------------------------------- online


def online_explanation(
    impressions: dict[str, pd.DataFrame],
    values: dict[str, pd.DataFrame],
    *,
    control: str,
    metrics: Sequence[str],
    unit: str,
    segments: Sequence[str] = (),
    depth: int | None = None,
    judgments: pd.DataFrame | None = None,
) -> ClickExplanation:
    """The online tables of the module text. ``impressions``: each arm's canonical
    impressions frame (control first, the config's order); ``values``: each arm's
    per-impression values as :func:`abrank.designs.online.logs.score_online` gives them
    (indexed by impression id in the order of the frame's
    :class:`~abrank.engines.clicks.ImpressionIndex`, one column per metric plus the unit
    and segment columns); ``judgments`` (query_id = query text, doc_id, relevance) grade
    the rankings."""
    from abrank.engines.clicks import ImpressionIndex, score_impressions

    arms = list(impressions)
    metrics = list(metrics)
    depth = explanation_depth(metrics) if depth is None else depth
    by_query = has_queries(list(impressions.values()))
    key = "query_id" if by_query else unit
    parts = []
    for arm, frame in impressions.items():
        index = ImpressionIndex.of(frame)
        scored = values[arm]
        if len(scored) != len(index.ids):
            raise ValueError(
                f"values[{arm!r}]: expected one row per impression ({len(index.ids):,}), "
                f"got {len(scored):,}"
            )
        top = score_impressions(frame, [f"clicks@{TOP_RANKS}"], index=index).iloc[:, 0]
        part = pd.DataFrame(
            {
                key: _text(frame["query"].take(index.head)) if by_query else _text(scored[unit]),
                "arm": arm,
                "_unit": _text(scored[unit]),
                **{metric: scored[metric].to_numpy(dtype=np.float64) for metric in metrics},
                "_top": top.to_numpy(dtype=np.float64),
                **{column: scored[column].to_numpy() for column in segments if column != unit},
            }
        )
        parts.append(part.dropna(subset=[key]))
    rows = pd.concat(parts, ignore_index=True)
    # a segment column that is the unit itself is the key's own column
    groups = [key, *[c for c in segments if c != key and c != unit]]
    aggregated = rows.groupby([*groups, "arm"], observed=True, sort=True).agg(
        impressions=("_unit", "size"),
        units=("_unit", "nunique"),
        **{metric: (metric, "mean") for metric in [*metrics, "_top"]},
    )
    wide = cast(pd.DataFrame, aggregated.unstack("arm"))
    columns: dict[str, Any] = {}
    for arm in arms:
        for count in ("impressions", "units"):
            columns[f"{count}:{arm}"] = _column(wide, count, arm).fillna(0).astype(np.int64)
    for arm in arms:
        for metric in metrics:
            columns[f"{arm}:{metric}"] = _column(wide, metric, arm)
    treatments = [arm for arm in arms if arm != control]
    for arm in treatments:
        for metric in metrics:
            columns[f"delta:{arm}:{metric}"] = (
                columns[f"{arm}:{metric}"] - columns[f"{control}:{metric}"]
            )
    queries = pd.DataFrame(columns, index=wide.index)
    absent = np.column_stack([queries[f"impressions:{arm}"].to_numpy() == 0 for arm in arms])
    queries["missing_in"] = _joined(absent, arms)
    undefined = np.column_stack(
        [
            np.column_stack([queries[f"{arm}:{metric}"].isna().to_numpy() for arm in arms]).any(
                axis=1
            )
            for metric in metrics
        ]
    )
    queries["undefined"] = _joined(undefined, metrics)
    rankings = click_rankings(
        impressions, key=key, source="query" if by_query else unit, depth=depth
    )
    if by_query and judgments is not None:
        rankings["grade"] = _grades(rankings, judgments)
    for arm in treatments:
        if by_query:
            flags = _online_tags(queries, wide, rankings, control, arm, absent, arms)
        else:
            flags = np.zeros((len(queries), len(ONLINE_TAGS)), dtype=bool)
        queries[f"tags:{arm}"] = _lists(flags, ONLINE_TAGS)
    queries = queries.reset_index()
    ordered = [key, *[c for c in queries.columns if c not in groups], *groups[1:]]
    return ClickExplanation(queries[ordered], rankings, key, depth)


def _online_tags(
    queries: pd.DataFrame,
    wide: pd.DataFrame,
    rankings: pd.DataFrame,
    control: str,
    treatment: str,
    absent: np.ndarray,
    arms: list[str],
) -> np.ndarray:
    """The rows' flags of :data:`ONLINE_TAGS` for ``treatment`` against ``control``."""
    top_c = _column(wide, "_top", control).to_numpy()
    top_t = _column(wide, "_top", treatment).to_numpy()
    keys = pd.Index(queries.index.get_level_values(0))
    shown = {
        arm: rankings.loc[rankings["arm"] == arm, ["query_id", "doc_id", "clicks"]]
        for arm in (control, treatment)
    }
    entered = _clicked_elsewhere(shown[treatment], shown[control])
    dropped = _clicked_elsewhere(shown[control], shown[treatment])
    missing = absent[:, arms.index(control)] | absent[:, arms.index(treatment)]
    with np.errstate(invalid="ignore"):
        return np.column_stack(
            [
                top_t > top_c,  # NaN compares False: a missing arm gains and loses nothing
                top_t < top_c,
                keys.isin(entered),  # a hash look-up (np.isin sorts objects)
                keys.isin(dropped),
                missing,
            ]
        )


def _clicked_elsewhere(mine: pd.DataFrame, other: pd.DataFrame) -> np.ndarray:
    """The queries where a document of ``mine`` got a click and ``other`` never showed it."""
    clicked = mine.loc[mine["clicks"] > 0, ["query_id", "doc_id"]]
    seen = other[["query_id", "doc_id"]].assign(_seen=True)
    joined = clicked.merge(seen, on=["query_id", "doc_id"], how="left")
    return pd.unique(joined.loc[joined["_seen"].isna(), "query_id"].to_numpy())


def click_rankings(
    frames: dict[str, pd.DataFrame], *, key: str, source: str, depth: int, by: str | None = None
) -> pd.DataFrame:
    """The ``rankings`` table of the module text: per frame (an arm's impressions), or per
    value of the column ``by`` of each frame (an interleaved log's ``team``), the rows of
    rank <= ``depth`` grouped by (``source`` column, doc_id); ``key`` names the source
    column in the table. ``grade`` is NaN."""
    parts = []
    for name, frame in frames.items():
        shown = frame.loc[frame["rank"].to_numpy() <= depth]
        groups = [shown[source], shown["doc_id"]]
        if by is not None:
            groups.insert(0, shown[by])
        table = (
            shown.assign(_clicked=shown["clicked"].to_numpy(dtype=np.int64))
            .groupby(groups, observed=True, sort=False)
            .agg(
                rank=("rank", "mean"),
                impressions=("rank", "size"),
                clicks=("_clicked", "sum"),
            )
        )
        table.index = table.index.set_names([*(["arm"] if by is not None else []), key, "doc_id"])
        table = table.reset_index()
        if by is None:
            table.insert(0, "arm", name)
        parts.append(table)
    table = pd.concat(parts, ignore_index=True)
    out = pd.DataFrame(
        {
            "arm": _text(table["arm"]),
            key: _text(table[key]),
            "doc_id": _text(table["doc_id"]),
            "rank": table["rank"].to_numpy(dtype=np.float64),
            "impressions": table["impressions"].to_numpy(dtype=np.int64),
            "clicks": table["clicks"].to_numpy(dtype=np.int64),
        }
    )
    out["ctr"] = out["clicks"] / out["impressions"]
    out["grade"] = np.nan
    order = {name: i for i, name in enumerate(frames if by is None else _categories(frames, by))}
    out = out.assign(_arm=out["arm"].map(order))
    out = out.sort_values(["_arm", key, "rank", "doc_id"], kind="stable", ignore_index=True)
    return out.drop(columns="_arm")


def _categories(frames: dict[str, pd.DataFrame], by: str) -> list[str]:
    names: list[str] = []
    for frame in frames.values():
        names += [str(v) for v in pd.unique(frame[by].astype(str))]
    return list(dict.fromkeys(names))


def _grades(rankings: pd.DataFrame, judgments: pd.DataFrame) -> np.ndarray:
    """Each ranking row's judgment (query text = the judgments' query_id), NaN unjudged."""
    graded = pd.DataFrame(
        {
            "query_id": _text(judgments["query_id"]),
            "doc_id": _text(judgments["doc_id"]),
            "grade": pd.to_numeric(judgments["relevance"], errors="coerce").to_numpy(),
        }
    ).drop_duplicates(["query_id", "doc_id"], keep="last")
    merged = rankings[["query_id", "doc_id"]].merge(graded, on=["query_id", "doc_id"], how="left")
    return merged["grade"].to_numpy(dtype=np.float64)


# --------------------------------------------------------------------------- interleaving


def interleaved_explanation(
    log: pd.DataFrame,
    outcomes: dict[tuple[str, str], pd.DataFrame],
    pairs: Sequence[Any],
    *,
    arms: Sequence[str],
    credits: Sequence[str],
    unit: str,
    segments: Sequence[str] = (),
    depth: int = MAX_DEPTH,
) -> ClickExplanation:
    """The interleaving tables of the module text. ``log``: the interleaved log (canonical
    impressions frame with ``team``, rows by impression and rank); ``outcomes[(pair,
    credit)]``: the per-impression outcomes of :func:`abrank.interleaving.impression_outcomes`
    with the unit and segment columns (as
    :func:`abrank.designs.interleaved.outcomes.score_interleaved` keeps them); ``pairs``:
    the compared :class:`~abrank.analysis.comparisons.ArmPair` s."""
    arms = list(arms)
    credits = list(credits)
    by_query = has_queries([log])
    key = "query_id" if by_query else unit
    codes, impression_ids = pd.factorize(log["impression_id"], sort=False)
    n = len(impression_ids)
    heads = np.empty(n, dtype=np.int64)  # each impression's first row (code i: impression i)
    heads[codes[::-1]] = np.arange(codes.size - 1, -1, -1)
    keyed = _text(log["query"].take(heads)) if by_query else _text(log[unit].take(heads))
    # which team contributed to each impression: one count per (impression, team) pair
    team_codes, teams = pd.factorize(log["team"].astype(str), sort=False)
    k = len(teams)
    shown = np.bincount(codes * k + team_codes, minlength=n * k).reshape(n, k) > 0
    team_at = {str(team): j for j, team in enumerate(teams)}
    first = outcomes[(pairs[0].name, credits[0])]
    place = pd.Index(_text(pd.Series(impression_ids))).get_indexer(
        _text(first["impression_id"]).to_numpy()
    )
    if (place < 0).any():
        raise ValueError("outcomes: expected the impressions of the log")
    frame: dict[str, Any] = {
        key: keyed.to_numpy()[place],
        "_unit": _text(first[unit]).to_numpy(),
        "_clicked": first["clicked"].to_numpy(dtype=np.int64),
        **{column: first[column].to_numpy() for column in segments if column != unit},
    }
    for arm in arms:
        at = team_at.get(arm)
        frame[f"impressions:{arm}"] = (
            shown[place, at].astype(np.int64) if at is not None else np.zeros(len(place), np.int64)
        )
    for credit in credits:
        done: set[str] = set()
        for pair in pairs:
            table = outcomes[(pair.name, credit)]
            if not table["impression_id"].equals(first["impression_id"]):
                raise ValueError(
                    f"outcomes[{(pair.name, credit)!r}]: expected the impressions of the first"
                )
            for arm, column in (
                (pair.control, "control_credit"),
                (pair.treatment, "treatment_credit"),
            ):
                if arm not in done:
                    frame[f"{arm}:{credit}"] = table[column].to_numpy(dtype=np.float64)
                    done.add(arm)
            outcome = table["outcome"].to_numpy()
            for name, value in (("wins", 1), ("ties", 0), ("losses", -1)):
                frame[f"{name}:{pair.name}:{credit}"] = (outcome == value).astype(np.int64)
    rows = pd.DataFrame(frame).dropna(subset=[key])
    groups = [key, *[c for c in segments if c != key and c != unit]]
    reach = [f"impressions:{arm}" for arm in arms]
    counted = [c for c in rows.columns if c.startswith(("wins:", "ties:", "losses:"))]
    means = [f"{arm}:{credit}" for credit in credits for arm in arms if f"{arm}:{credit}" in rows]
    grouped = rows.groupby(groups, observed=True, sort=True)
    queries = pd.concat(
        [
            grouped.agg(
                impressions=("_unit", "size"),
                units=("_unit", "nunique"),
                clicked=("_clicked", "sum"),
            ),
            grouped[reach].sum(),
            grouped[means].mean(),
            grouped[counted].sum(),
        ],
        axis=1,
    )
    for credit in credits:
        for pair in pairs:
            wins = queries[f"wins:{pair.name}:{credit}"]
            ties = queries[f"ties:{pair.name}:{credit}"]
            queries[f"delta:{pair.name}:{credit}"] = (wins + ties / 2) / queries[
                "impressions"
            ] - 0.5
    absent = np.column_stack([queries[f"impressions:{arm}"].to_numpy() == 0 for arm in arms])
    queries["missing_in"] = _joined(absent, arms)
    queries["undefined"] = ""
    for pair in pairs:
        won = queries[f"wins:{pair.name}:{credits[0]}"].to_numpy()
        lost = queries[f"losses:{pair.name}:{credits[0]}"].to_numpy()
        missing = absent[:, arms.index(pair.control)] | absent[:, arms.index(pair.treatment)]
        flags = np.column_stack(
            [won > lost, won < lost, queries["clicked"].to_numpy() == 0, missing]
        )
        queries[f"tags:{pair.name}"] = _lists(flags, INTERLEAVED_TAGS)
    queries = queries.reset_index()
    ordered = [key, *[c for c in queries.columns if c not in groups], *groups[1:]]
    rankings = click_rankings(
        {"log": log}, key=key, source="query" if by_query else unit, depth=depth, by="team"
    )
    order = {arm: i for i, arm in enumerate(arms)}
    rankings = rankings.assign(_arm=rankings["arm"].map(order)).sort_values(
        ["_arm", key, "rank", "doc_id"], kind="stable", ignore_index=True
    )
    return ClickExplanation(queries[ordered], rankings.drop(columns="_arm"), key, depth)


# --------------------------------------------------------------------------- helpers


def _text(values: Any) -> pd.Series:
    """Values as text (ids compare as text: int 12 is "12"), NaN kept missing, on a fresh
    0..n-1 index."""
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    present = series.notna().to_numpy()
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = pd.Index(series.cat.categories).astype(str)
        codes = series.cat.codes.to_numpy()
        text = (
            np.asarray(categories, dtype=object)[np.where(codes < 0, 0, codes)]
            if len(categories)
            else np.full(codes.size, None, dtype=object)
        )
    else:
        text = series.astype(str).to_numpy(dtype=object).copy()
    text[~present] = None
    return pd.Series(text, dtype="str")


def _column(wide: pd.DataFrame, name: str, arm: str) -> pd.Series:
    """An arm's column of an unstacked table (all NaN where the arm has no row at all)."""
    if (name, arm) in wide.columns:
        return wide[(name, arm)].astype(np.float64)
    return pd.Series(np.nan, index=wide.index)


def _lists(flags: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Per row, the list of ``names`` whose flag is set (in the order of ``names``)."""
    flags = np.asarray(flags, dtype=bool).reshape(-1, len(names))
    offsets = np.r_[0, np.cumsum(flags.sum(axis=1))].astype(np.int32)
    values = pa.array(np.asarray(names, dtype=object)[np.nonzero(flags)[1]], type=pa.string())
    out = np.empty(flags.shape[0], dtype=object)
    out[:] = pa.ListArray.from_arrays(pa.array(offsets), values).to_pylist()
    return out


def _joined(flags: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Per row, the ``names`` whose flag is set joined by ``;`` (empty for none)."""
    flags = np.asarray(flags, dtype=bool).reshape(-1, len(names))
    offsets = np.r_[0, np.cumsum(flags.sum(axis=1))].astype(np.int32)
    values = pa.array(np.asarray(names, dtype=object)[np.nonzero(flags)[1]], type=pa.string())
    lists = pa.ListArray.from_arrays(pa.array(offsets), values)
    return np.asarray(pc.binary_join(lists, ";").to_numpy(zero_copy_only=False), dtype=object)
