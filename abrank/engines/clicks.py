"""Click metrics per impression, and the per-unit sums that clustered inference reads.

An impressions frame (:func:`abrank.io.read_impressions`) holds one row per shown result:
``impression_id``, ``user_id``, ``rank``, ``doc_id``, ``clicked`` and optionally ``dwell``.
:func:`score_impressions` turns it into one value per impression and click metric;
:func:`unit_sums` adds those values up per unit (user), the sums Σ M_u and counts Σ D_u of
which an arm's mean is the ratio; :func:`ctr_by_rank` is the click-through rate at each
position; :func:`judged_inputs` turns a log with a ``query`` column into the rankings and
judgments that the judged metrics read (a judged sample of live traffic).

Everything runs over whole columns: impressions get dense codes (Arrow dictionary
encoding), the first click of each impression is a ``np.minimum.at`` over the clicked rows
only, counts are ``np.bincount``. Impression and unit ids are compared as text, so int64
and string ids of the same value are one id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.errors import ConfigError, DataError
from abrank.io.arrow import as_arrow, query_codes, take_rows
from abrank.io.columns import parse_numbers
from abrank.io.idcodes import text_codes
from abrank.io.online import clicked_flags, impression_codes
from abrank.io.subtopics import SUBTOPIC
from abrank.metrics.names import Metric, click_metrics

__all__ = [
    "KERNELS",
    "ImpressionIndex",
    "ctr_by_rank",
    "judged_inputs",
    "score_impressions",
    "unit_sums",
]

_NO_CLICK = np.iinfo(np.int64).max  # the "rank" of the first click of an impression without


def score_impressions(
    impressions: pd.DataFrame,
    metrics: Sequence[str | Metric],
    *,
    sat_dwell: float = 30.0,
    index: ImpressionIndex | None = None,
) -> pd.DataFrame:
    """Per-impression values of click metrics.

    Returns a float64 frame indexed by ``impression_id`` (sorted in byte order, as
    :func:`abrank.io.read_impressions` sorts), one column per metric named canonically, in
    the order given. ``click_rr@k``: 1 / rank of the first click within the top k, else 0;
    ``ctr@k``: 1 when a result at rank <= k was clicked; ``clicks@k``: how many were;
    ``abandonment``: 1 when nothing was clicked; ``sat_ctr@k``: 1 when a result at rank
    <= k was clicked with ``dwell >= sat_dwell`` seconds (a missing dwell is not
    satisfied). No cutoff means the whole list. Values are never NaN: an impression without
    a click scores 0 (abandonment 1).

    ``index`` is the frame's :class:`ImpressionIndex` when the caller has it already (it is
    computed otherwise). A judged metric is a ConfigError; ``sat_ctr`` on a frame without a
    ``dwell`` column is a DataError naming the metric and the column.
    """
    parsed = click_metrics(metrics)
    log = _Clicks(impressions, _seconds(sat_dwell), ImpressionIndex.checked(impressions, index))
    if any(m.family == "sat_ctr" for m in parsed) and "dwell" not in impressions.columns:
        wanted = ", ".join(m.name for m in parsed if m.family == "sat_ctr")
        raise DataError(
            f"metric {wanted}: expected a dwell column (seconds) in the impressions, found "
            f"columns: {', '.join(map(str, impressions.columns))}"
        )
    values: dict[str, np.ndarray] = {}
    for metric in parsed:
        kernel = KERNELS.get(metric.family)
        if kernel is None:
            raise NotImplementedError(
                f"click metrics: family {metric.family!r} is in the registry but has no kernel"
            )
        k = _NO_CLICK - 1 if metric.k is None else metric.k
        values[metric.name] = kernel(log, k).astype(np.float64)
    return pd.DataFrame(values, index=_index(log.ids, "impression_id"), copy=False)


@dataclass(frozen=True)
class ImpressionIndex:
    """The impressions of one impressions frame, coded once for every kernel and sum.

    ``codes``: each row's impression (0..n-1, dense); ``ids``: the n impression ids as text
    in byte order (code i is ``ids[i]``); ``head``: a row of each impression (its first row
    when each impression is one block of rows, as :func:`abrank.io.read_impressions`
    returns them). ``frame.take(head)`` holds each impression's user and segments in the
    order of :func:`score_impressions`' values, whose index is :meth:`labels`. The codes
    of the frame's user and segment columns per impression are kept once computed (one
    :func:`unit_sums` overall and one per segment read the same user codes).
    """

    codes: np.ndarray
    ids: pa.Array
    head: np.ndarray
    _columns: dict[tuple[str, bool], tuple[np.ndarray, pa.Array | pd.Index]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def of(cls, impressions: pd.DataFrame) -> ImpressionIndex:
        """The index of a frame with an ``impression_id`` column (a categorical's codes are
        used as they are; other ids are compared as text)."""
        codes, ids = _impression_codes(impressions)
        return cls(codes=codes, ids=ids, head=_head_rows(codes, len(ids)))

    @classmethod
    def checked(cls, impressions: pd.DataFrame, index: ImpressionIndex | None) -> ImpressionIndex:
        """``index`` when it has one code per row of ``impressions``, else computed
        (a ConfigError when ``index`` is of another frame)."""
        if index is None:
            return cls.of(impressions)
        if not isinstance(index, ImpressionIndex) or index.codes.size != len(impressions):
            raise ConfigError(
                f"index: expected the ImpressionIndex of these {len(impressions):,} rows, got "
                f"{_describe(index)}"
            )
        return index

    def column_codes(
        self, impressions: pd.DataFrame, column: str, *, segment: bool = False
    ) -> tuple[np.ndarray, pa.Array | pd.Index]:
        """Per impression the code of its value of ``column`` and the distinct values (a
        segment's as an Index, see :func:`unit_sums`); each row of an impression must hold
        the same value (a DataError naming the impression otherwise)."""
        key = (column, segment)
        if key not in self._columns:
            compute = _segment_codes if segment else _constant_codes
            self._columns[key] = compute(
                impressions[column], self.codes, self.head, column, self.ids
            )
        return self._columns[key]

    def labels(self) -> pd.Index:
        """The impression ids as a pandas Index named ``impression_id``."""
        return _index(self.ids, "impression_id")

    def to_dict(self) -> dict[str, int]:
        """Sizes, JSON-safe: rows and impressions."""
        return {"rows": int(self.codes.size), "impressions": len(self.ids)}


def _describe(index: object) -> str:
    if isinstance(index, ImpressionIndex):
        return f"one of {index.codes.size:,} rows"
    return type(index).__name__


class _Clicks:
    """What the kernels read of one impressions frame, each part computed once: the rows'
    impression codes, ranks and clicks, and per impression the rank of its first click
    and of its first satisfied click (``_NO_CLICK`` for none)."""

    def __init__(self, impressions: pd.DataFrame, sat_dwell: float, index: ImpressionIndex):
        self.impressions = impressions
        self.sat_dwell = sat_dwell
        self.codes, self.ids = index.codes, index.ids
        self.n = len(self.ids)
        self.rank = _rank(impressions)
        clicked = clicked_flags(
            impressions["clicked"], lambda row: f"impressions: row {row}: clicked"
        )
        self.hit = clicked.astype(bool)
        self.first = _first_rank(self.codes[self.hit], self.rank[self.hit], self.n)
        self._sat_first: np.ndarray | None = None

    @property
    def sat_first(self) -> np.ndarray:
        if self._sat_first is None:
            dwell = parse_numbers(
                self.impressions["dwell"],
                lambda row: f"impressions: row {row}: dwell",
                allow_missing=True,
            )
            sat = self.hit & (dwell >= self.sat_dwell)  # NaN >= x is False: not satisfied
            self._sat_first = _first_rank(self.codes[sat], self.rank[sat], self.n)
        return self._sat_first


def _click_rr(log: _Clicks, k: int) -> np.ndarray:
    within = log.first <= k
    value = np.zeros(log.n)
    value[within] = 1.0 / log.first[within]
    return value


def _ctr(log: _Clicks, k: int) -> np.ndarray:
    return log.first <= k


def _clicks(log: _Clicks, k: int) -> np.ndarray:
    return np.bincount(log.codes[log.hit & (log.rank <= k)], minlength=log.n)


def _abandonment(log: _Clicks, k: int) -> np.ndarray:
    return log.first == _NO_CLICK


def _sat_ctr(log: _Clicks, k: int) -> np.ndarray:
    return log.sat_first <= k


#: The kernel of each click family of the registry (:func:`abrank.metrics.registry.
#: click_families`): per-impression values at cutoff k (the whole list without a cutoff).
KERNELS: dict[str, Callable[[_Clicks, int], np.ndarray]] = {
    "click_rr": _click_rr,
    "ctr": _ctr,
    "clicks": _clicks,
    "abandonment": _abandonment,
    "sat_ctr": _sat_ctr,
}


def unit_sums(
    impressions: pd.DataFrame,
    values: pd.DataFrame,
    *,
    unit: str = "user_id",
    by: str | None = None,
    all_counts: bool = False,
    index: ImpressionIndex | None = None,
) -> pd.DataFrame:
    """Per-unit sums of per-impression values: what clustered inference reads.

    One row per unit of the impressions (index ``unit``, ids as text in byte order), or
    per (segment value, unit) pair when ``by`` names a column of the impressions (index
    levels ``[by, unit]``; a unit seen in two segments has a row in each). Columns:
    ``impressions`` (D_u: how many of the unit's impressions are rows of ``values``), then
    one per column of ``values`` holding M_u, the sum over the unit's impressions (NaN
    values left out), then ``<metric>:n`` (int) for each metric with a NaN value (every
    metric with ``all_counts``): how many of the unit's impressions have a value of it.

    ``values`` is indexed by impression_id: :func:`score_impressions`' frame, or any
    per-impression frame (judged metrics on an online log, NaN where undefined). An
    impression of ``values`` that is not in the impressions, an impression with two units
    (or two ``by`` values), a missing unit or segment value are DataErrors. ``index`` as for
    :func:`score_impressions`.
    """
    _require(impressions, ("impression_id", unit, *([by] if by is not None else [])))
    coded = ImpressionIndex.checked(impressions, index)
    ids = coded.ids
    unit_of, unit_ids = coded.column_codes(impressions, unit)
    if by is None:
        group_of, groups = unit_of, len(unit_ids)
        labels = _index(unit_ids, unit)
    else:
        segment = impressions[by]
        missing = segment.isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise DataError(
                f"impressions: row {row}: {by}: expected a segment value, got a missing value"
            )
        by_of, by_values = coded.column_codes(impressions, by, segment=True)
        pair = by_of.astype(np.int64) * len(unit_ids) + unit_of
        present, group_of = _dense(pair, len(by_values) * len(unit_ids))
        groups = present.size
        labels = pd.MultiIndex.from_arrays(
            [
                by_values.take(present // len(unit_ids)),
                _index(unit_ids, unit).take(present % len(unit_ids)),
            ],
            names=[by, unit],
        )
    rows = _value_rows(values, ids)
    group = group_of[rows]
    out: dict[str, np.ndarray] = {"impressions": np.bincount(group, minlength=groups)}
    counts: dict[str, np.ndarray] = {}
    for column in values.columns:

        def where(row: int, c: object = column) -> str:
            return f"values: {c}: row {row}"

        numbers = parse_numbers(values[column], where, allow_missing=True)
        present_value = ~np.isnan(numbers)
        out[str(column)] = np.bincount(
            group[present_value], weights=numbers[present_value], minlength=groups
        )
        if all_counts or not present_value.all():
            counts[f"{column}:n"] = np.bincount(group[present_value], minlength=groups)
    return pd.DataFrame({**out, **counts}, index=labels, copy=False)


def ctr_by_rank(impressions: pd.DataFrame, *, max_rank: int | None = None) -> pd.DataFrame:
    """Click-through rate at each position: columns ``rank``, ``impressions`` (how many
    impressions showed a result at that rank), ``clicks`` and ``ctr`` (clicks /
    impressions), one row per rank shown (up to ``max_rank``), ranks ascending."""
    if max_rank is not None and (
        isinstance(max_rank, bool) or not isinstance(max_rank, (int, np.integer)) or max_rank < 1
    ):
        raise ConfigError(f"max_rank: expected a whole number >= 1, got {max_rank!r}")
    _require(impressions, ("rank", "clicked"))
    rank = _rank(impressions)
    clicked = clicked_flags(impressions["clicked"], lambda row: f"impressions: row {row}: clicked")
    if max_rank is not None:
        keep = rank <= max_rank
        rank, clicked = rank[keep], clicked[keep]
    if rank.size and rank.max() > 2 * rank.size + 1024:  # a few very deep ranks: no huge table
        ranks, slot = np.unique(rank, return_inverse=True)
    else:
        ranks, slot = None, rank
    shown = np.bincount(slot)
    clicks = np.bincount(slot, weights=clicked)
    if ranks is None:
        ranks = np.flatnonzero(shown)
        shown, clicks = shown[ranks], clicks[ranks]
    return pd.DataFrame(
        {
            "rank": ranks.astype(np.int64),
            "impressions": shown.astype(np.int64),
            "clicks": clicks.astype(np.int64),
            "ctr": clicks / shown,
        }
    )


def judged_inputs(
    impressions: pd.DataFrame, judgments: pd.DataFrame, *, query_column: str = "query"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Rankings and judgments for judged metrics on an online log.

    The judgments are keyed by the query an impression served: their ``query_id`` is a
    value of the log's ``query_column`` (compared as text). Returns ``(rankings,
    judgments)`` whose ``query_id`` is the impression_id: rankings hold each impression's
    ``doc_id`` and ``rank``; judgments repeat the judgments of its query for every
    impression of a judged query, so that :func:`abrank.engines.evaluate.evaluate` scores
    each impression of a judged query (recall and NDCG's ideal ordering see all of the
    query's judgments) and leaves the others out. A missing query column is a DataError.
    """
    for column in ("impression_id", "doc_id", "rank", query_column):
        if column not in impressions.columns:
            what = " (the query each impression served)" if column == query_column else ""
            raise DataError(
                f"impressions: expected a {column} column{what}, found columns: "
                f"{', '.join(map(str, impressions.columns))}"
            )
    for column in ("query_id", "doc_id", "relevance"):
        if column not in judgments.columns:
            raise DataError(
                f"judgments: expected a {column} column, found columns: "
                f"{', '.join(map(str, judgments.columns))}"
            )
    impression = _text(impressions["impression_id"], "impressions: impression_id")
    rankings = pd.DataFrame(
        {
            "query_id": impression,
            "doc_id": _text(impressions["doc_id"], "impressions: doc_id"),
            "rank": impressions["rank"].to_numpy(),
        }
    )
    served = pd.DataFrame(
        {"query_id": impression, "query": _text(impressions[query_column], None)}
    ).dropna(subset=["query"])
    served = served.drop_duplicates("query_id")
    judged = pd.DataFrame(
        {
            "query": _text(judgments["query_id"], "judgments: query_id"),
            "doc_id": _text(judgments["doc_id"], "judgments: doc_id"),
            "relevance": judgments["relevance"].to_numpy(),
        }
    )
    kept = ["query_id", "doc_id", "relevance"]
    if SUBTOPIC in judgments.columns:  # subtopic judgments stay so (diversity metrics)
        judged[SUBTOPIC] = judgments[SUBTOPIC].astype(str).to_numpy()
        kept.append(SUBTOPIC)
    expanded = served.merge(judged, on="query", how="inner", sort=False)
    expanded = expanded.sort_values(["query_id", "doc_id"], kind="stable", ignore_index=True)
    return rankings, expanded[kept]


# --------------------------------------------------------------------------- helpers


def _seconds(value: float) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not math.isfinite(seconds) or seconds < 0:
        raise ConfigError(f"sat_dwell: expected a number of seconds >= 0, got {value!r}")
    return seconds


def _impression_codes(impressions: pd.DataFrame) -> tuple[np.ndarray, pa.Array]:
    """Dense codes of the rows' impressions, and the impression ids in byte order."""
    _require(impressions, ("impression_id", "rank", "clicked"))
    column = impressions["impression_id"]
    if isinstance(column.dtype, pd.CategoricalDtype):
        return text_codes(column, "impressions: impression_id")
    return impression_codes(as_arrow(column, "impressions: impression_id"))


def _constant_codes(
    values: pd.Series, codes: np.ndarray, head: np.ndarray, column: str, ids: pa.Array
) -> tuple[np.ndarray, pa.Array]:
    """Per impression (by code) the code of its value of ``column``, and the distinct values
    as text in byte order; every row of an impression must hold its head row's value."""
    if isinstance(values.dtype, pd.CategoricalDtype):  # codes say which values are equal
        row_codes, distinct = text_codes(values, f"impressions: {column}")
        _check_constant(row_codes, codes, head, column, ids)
        return row_codes[head], distinct
    arrow = as_arrow(values, f"impressions: {column}")
    _check_constant(arrow, codes, head, column, ids)
    return query_codes(pa.chunked_array([take_rows(arrow, head)]))


def _segment_codes(
    segment: pd.Series, codes: np.ndarray, head: np.ndarray, column: str, ids: pa.Array
) -> tuple[np.ndarray, pd.Index]:
    """Per impression the code of its segment value, and the segment values sorted (text in
    byte order for a categorical, else as :func:`pandas.factorize` sorts them)."""
    if isinstance(segment.dtype, pd.CategoricalDtype):
        row_codes, distinct = _constant_codes(segment, codes, head, column, ids)
        return row_codes, pd.Index(distinct.to_pandas(), dtype="str", name=column)
    _check_constant(as_arrow(segment, f"impressions: {column}"), codes, head, column, ids)
    by_of, by_values = pd.factorize(segment.iloc[head], sort=True)
    return by_of, pd.Index(by_values, name=column)


def _require(impressions: pd.DataFrame, columns: Sequence[str]) -> None:
    if not isinstance(impressions, pd.DataFrame):
        raise ConfigError(
            f"impressions: expected a DataFrame of impressions, got {type(impressions).__name__}"
        )
    for column in columns:
        if column not in impressions.columns:
            raise DataError(
                f"impressions: expected a {column} column, found columns: "
                f"{', '.join(map(str, impressions.columns))}"
            )


def _rank(impressions: pd.DataFrame) -> np.ndarray:
    rank = impressions["rank"]
    if pd.api.types.is_integer_dtype(rank) and not rank.isna().any():
        values = rank.to_numpy(dtype=np.int64)
    else:
        numbers = parse_numbers(rank, lambda row: f"impressions: row {row}: rank")
        if not (numbers == np.round(numbers)).all():
            row = int(np.flatnonzero(numbers != np.round(numbers))[0])
            raise DataError(
                f"impressions: row {row}: rank: expected a whole number >= 1, got {numbers[row]!r}"
            )
        values = numbers.astype(np.int64)
    if values.size and values.min() < 1:
        row = int(np.flatnonzero(values < 1)[0])
        raise DataError(
            f"impressions: row {row}: rank: expected a whole number >= 1, got {int(values[row])}"
        )
    return values


def _first_rank(codes: np.ndarray, rank: np.ndarray, n: int) -> np.ndarray:
    """The smallest rank per impression among the given rows (``_NO_CLICK`` for none)."""
    first = np.full(n, _NO_CLICK, dtype=np.int64)
    np.minimum.at(first, codes, rank)
    return first


def _index(ids: pa.Array, name: str) -> pd.Index:
    return pd.Index(ids.to_pandas().astype("str"), name=name, dtype="str")


def _dense(keys: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` (ints in 0..span-1) ascending, and each key's place among
    them: ``np.unique(keys, return_inverse=True)``, by a table of the span when it is
    small (no sort)."""
    if span > 4 * keys.size + (1 << 20):
        return np.unique(keys, return_inverse=True)
    seen = np.zeros(span, dtype=bool)
    seen[keys] = True
    place = np.cumsum(seen) - 1
    return np.flatnonzero(seen), place[keys]


def _head_rows(codes: np.ndarray, n: int) -> np.ndarray:
    """One row of each impression (by code): its first row when every impression is one
    block of rows in code order (a log as the reader sorts it), else some row of it."""
    if codes.size == 0:
        return np.zeros(0, dtype=np.int64)
    if bool((codes[1:] >= codes[:-1]).all()):
        start = np.ones(codes.size, dtype=bool)
        start[1:] = codes[1:] != codes[:-1]
        return np.flatnonzero(start)
    head = np.empty(n, dtype=np.int64)
    head[codes] = np.arange(codes.size)
    return head


def _check_constant(
    values: pa.ChunkedArray | np.ndarray,
    codes: np.ndarray,
    head: np.ndarray,
    column: str,
    ids: pa.Array,
) -> None:
    """Every row of an impression has its head row's value of ``column`` (a DataError
    naming the impression otherwise): one comparison of neighbours on a sorted log.
    ``values`` are the rows' values (Arrow) or codes of them (NumPy)."""
    if codes.size < 2:
        return
    if bool((codes[1:] >= codes[:-1]).all()):
        same = codes[1:] == codes[:-1]
        if isinstance(values, np.ndarray):
            differ = values[1:] != values[:-1]
        else:
            differ = pc.not_equal(values[1:], values[:-1]).to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(same & differ) + 1
    elif isinstance(values, np.ndarray):
        bad = np.flatnonzero(values[head[codes]] != values)
    else:
        mates = pa.chunked_array([take_rows(values, head[codes])])
        bad = np.flatnonzero(pc.not_equal(mates, values).to_numpy(zero_copy_only=False))
    if bad.size:
        row = int(bad[0])
        impression = ids[int(codes[row])].as_py()
        raise DataError(
            f"impressions: row {row}: {column}: expected one {column} per impression, got two "
            f"in impression {impression!r}"
        )


def _value_rows(values: pd.DataFrame, ids: pa.Array) -> np.ndarray:
    """Each row of ``values``' impression code; its index must hold impressions of the log."""
    if not isinstance(values, pd.DataFrame):
        raise ConfigError(
            f"values: expected a DataFrame indexed by impression_id, got {type(values).__name__}"
        )
    keys = as_arrow(pd.Series(values.index), "values: impression_id")
    if len(keys) == len(ids) and pc.all(pc.equal(keys, ids)).as_py():
        return np.arange(len(ids), dtype=np.int64)  # score_impressions' own index
    rows = pc.index_in(keys, value_set=ids).to_numpy(zero_copy_only=False)
    unknown = np.isnan(rows) if rows.dtype.kind == "f" else np.zeros(rows.size, dtype=bool)
    if unknown.any():
        at = int(np.flatnonzero(unknown)[0])
        count = int(np.count_nonzero(unknown))
        raise DataError(
            f"values: impression_id: expected impressions of the log, got {keys[at].as_py()!r}"
            f", which has no row in the impressions ({count} such)"
        )
    rows = rows.astype(np.int64)
    if rows.size and np.bincount(rows).max() > 1:
        at = int(np.flatnonzero(pd.Series(rows).duplicated().to_numpy())[0])
        raise DataError(
            f"values: impression_id: expected each impression once, got {keys[at].as_py()!r} twice"
        )
    return rows


def _text(values: pd.Series, what: str | None) -> pd.Series:
    """Ids as pandas strings (int 12 -> "12"), on a fresh 0..n-1 index; ``what`` names the
    column when a missing id is an error (None: missing values stay missing)."""
    arrow = as_arrow(values, what) if what is not None else None
    if arrow is None:
        present = values.notna().to_numpy()
        if pd.api.types.is_float_dtype(values) and present.any():
            numbers = values.to_numpy()[present]
            if (numbers == np.round(numbers)).all():  # int ids widened to float by a NaN
                values = values.astype("Int64")
        text = values.astype("str").to_numpy()
        return pd.Series(text, dtype="str").where(present)
    return pd.Series(arrow.to_pandas().to_numpy(), dtype="str")
