"""The in-memory engine: judged metrics per query over whole columns.

Rows are ordered per query (trec_eval's rule), joined to their judgments through packed
64-bit keys and one sort, and every metric is a segmented reduction (``np.bincount``) over
the judged rows. There is no Python loop over queries, and any number of metrics and
cutoffs share one pass.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import pyarrow as pa

from abrank._lazy import pandas as pd
from abrank.engines.condensed import condense
from abrank.engines.diversity import alpha_ndcg, err_ia, subtopic_entries, subtopic_join
from abrank.engines.prepared import Prepared
from abrank.errors import ConfigError, DataError
from abrank.io.arrow import (
    as_arrow,
    equal_pairs,
    joined_codes,
    order_rows,
    positions,
    query_codes,
    sum_above,
    take_rows,
)
from abrank.io.columns import parse_numbers
from abrank.io.doc_keys import doc_keys
from abrank.io.subtopics import SUBTOPIC
from abrank.metrics.names import GAINS, Metric
from abrank.metrics.registry import judged_families


def check_options(rel_level: float, gain: str, depth: int | None) -> None:
    try:
        ok = math.isfinite(float(rel_level))
    except (TypeError, ValueError):
        ok = False
    if not ok or isinstance(rel_level, bool):
        raise ConfigError(f"rel_level: expected a number, got {rel_level!r}")
    if gain not in GAINS:
        raise ConfigError(f"gain: expected one of {', '.join(GAINS)}, got {gain!r}")
    if depth is not None and (
        isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1
    ):
        raise ConfigError(f"depth: expected a whole number >= 1 or None, got {depth!r}")


def _columns(frame: pd.DataFrame, what: str, required: Sequence[str]) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{what}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in required if c not in frame.columns]
    if missing:
        found = ", ".join(map(str, frame.columns)) or "no columns"
        raise DataError(f"{what}: columns: expected {', '.join(required)}, got {found}")


def _numbers(series: pd.Series, what: str, allow_nan: bool) -> np.ndarray:
    """A frame's numeric column as float64 (True/False as 1/0; infinities allowed): the
    readers' parser, with errors naming the frame, column and row (``rankings: rank: row 3``)."""
    return parse_numbers(
        series,
        lambda row: f"{what}: row {row}",
        allow_missing=allow_nan,
        finite=False,
        booleans=True,
        empty="a missing value",
    )


def _rows_per_query(codes: np.ndarray, nq: int) -> np.ndarray:
    """How many rows each query code has; ``codes`` grouped by query (one pass, no copy)."""
    out = np.zeros(nq, dtype=np.int64)
    if codes.size:
        starts = np.flatnonzero(codes[1:] != codes[:-1]) + 1
        bounds = np.concatenate(([0], starts, [codes.size]))
        out[codes[bounds[:-1]]] = np.diff(bounds)
    return out


def _describe_pairs(q: pa.ChunkedArray, d: pa.ChunkedArray, rows: np.ndarray) -> str:
    rows = np.sort(rows)
    shown = ", ".join(f"({q[int(r)].as_py()!r}, {d[int(r)].as_py()!r})" for r in rows[:3])
    return shown + (f" and {rows.size - 3} more" if rows.size > 3 else "")


def prepare(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame | None,
    depth: int | None,
    reach: int | None = None,
) -> Prepared:
    """Order, cut and join. ``reach`` is the deepest position any requested metric reads
    (None: all of ``depth``); rows below it count as retrieved but are not joined."""
    _columns(rankings, "rankings", ("query_id", "doc_id"))
    if "rank" in rankings.columns:
        rank = rankings["rank"]
        if pd.api.types.is_integer_dtype(rank.dtype) and not isinstance(
            rank.dtype, pd.CategoricalDtype
        ):
            key = rank.to_numpy(dtype=np.int64)
        else:
            key = _numbers(rank, "rankings: rank", allow_nan=False)
    elif "score" in rankings.columns:
        key = -_numbers(rankings["score"], "rankings: score", allow_nan=False)
    else:
        found = ", ".join(map(str, rankings.columns))
        raise DataError(f"rankings: columns: expected a rank or a score column, got {found}")
    rq = as_arrow(rankings["query_id"], "rankings: query_id")
    rd = as_arrow(rankings["doc_id"], "rankings: doc_id")
    inline = jq = jd = jgrade = labels = None
    if judgments is None:
        if "relevance" not in rankings.columns:
            raise DataError(
                "judgments: expected a judgments frame or a relevance column in the rankings, "
                "got neither"
            )
        inline = _numbers(rankings["relevance"], "rankings: relevance", allow_nan=True)
    else:
        _columns(judgments, "judgments", ("query_id", "doc_id", "relevance"))
        jq = as_arrow(judgments["query_id"], "judgments: query_id")
        jd = as_arrow(judgments["doc_id"], "judgments: doc_id")
        jgrade = _numbers(judgments["relevance"], "judgments: relevance", allow_nan=False)
        if SUBTOPIC in judgments.columns:
            labels = as_arrow(judgments[SUBTOPIC], "judgments: subtopic")
    if labels is None or jq is None or jd is None or jgrade is None:
        return prepare_arrays(rq, rd, key, inline, jq, jd, jgrade, depth, reach)
    return prepare_subtopics(rq, rd, key, jq, jd, jgrade, labels, depth, reach)


def prepare_subtopics(
    rq: pa.ChunkedArray,
    rd: pa.ChunkedArray,
    key: np.ndarray,
    jq: pa.ChunkedArray,
    jd: pa.ChunkedArray,
    jgrade: np.ndarray,
    labels: pa.ChunkedArray,
    depth: int | None,
    reach: int | None,
) -> Prepared:
    """prepare_arrays on subtopic judgments (``labels``: each judgment's subtopic; (query,
    subtopic, doc) unique): every metric reads one grade per (query, doc), the highest over
    its subtopics; the diversity metrics also read which subtopics each judged row is
    relevant to (:attr:`Prepared.subtopics`)."""
    jq, jd, jgrade, entry_pair, entry_label = subtopic_join(jq, jd, jgrade, labels)
    prep = prepare_arrays(rq, rd, key, None, jq, jd, jgrade, depth, reach, keep_judgment=True)
    prep.subtopics = subtopic_entries(prep.judged_code, jd, entry_pair, entry_label)
    return prep


def prepare_arrays(
    rq: pa.ChunkedArray,
    rd: pa.ChunkedArray,
    key: np.ndarray,
    inline: np.ndarray | None,
    jq: pa.ChunkedArray | None,
    jd: pa.ChunkedArray | None,
    jgrade: np.ndarray | None,
    depth: int | None,
    reach: int | None,
    keep_judgment: bool = False,
    *,
    query_starts: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> Prepared:
    """prepare on arrays: ids as Arrow strings, ``key`` ascending = better rank, labels
    either inline (per ranking row, NaN = unjudged) or as judgments (jq, jd, jgrade).
    ``keep_judgment`` keeps each judged row's judgment index (:attr:`Prepared.row_judgment`,
    which the diversity metrics read). ``query_starts``: where each run of equal query ids
    starts in ``rq`` and in ``jq``, when a caller found them already (None: not found)."""
    if inline is not None:
        codes, ids = query_codes(rq, starts=query_starts[:1])
    else:
        (codes, jcodes), ids = query_codes(rq, jq, starts=query_starts)
    nq = len(ids)

    order, within_ties = order_rows(codes, key, rd)
    # rows that move only inside blocks of one query keep their codes
    ordered = codes if order is None or within_ties else codes[order]
    pos = positions(ordered)
    rows = order  # original row of each ordered row; None: the identity
    if depth is not None and pos.size and pos.max() >= depth:
        keep = pos < depth
        rows = np.flatnonzero(keep) if rows is None else rows[keep]
        ordered, pos = ordered[keep], pos[keep]
    retrieved = _rows_per_query(ordered, nq)
    if reach is not None and (depth is None or reach < depth) and pos.size and pos.max() >= reach:
        keep = pos < reach
        rows = np.flatnonzero(keep) if rows is None else rows[keep]
        ordered, pos = ordered[keep], pos[keep]

    def original(items: np.ndarray) -> np.ndarray:
        return items if rows is None else rows[items]

    row_judgment: np.ndarray | None = None

    if inline is not None:
        # labels carried by the log: every labelled row is a judgment, kept or not
        labelled = ~np.isnan(inline)
        jcodes, jgrade = codes[labelled], inline[labelled]
        keys = doc_keys(rd)
        keys = keys if rows is None else keys.take(rows)  # keys, not strings, follow the order

        def take(items: np.ndarray) -> pa.Array:
            return take_rows(rd, original(items))

        first, later = equal_pairs(ordered, keys, take)
        if later.size:
            raise DataError(
                "rankings: (query_id, doc_id): expected each document once per query, got "
                f"{later.size} duplicate(s): {_describe_pairs(rq, rd, original(later))}"
            )
        grade = inline if rows is None else inline[rows]
        judged_rows = np.flatnonzero(~np.isnan(grade))
        judged_grade = grade[judged_rows]
    else:
        if jd is None or jgrade is None:
            raise ValueError(
                "prepare_arrays: expected labels inline or judgments (jq, jd, jgrade), got neither"
            )
        n = ordered.size
        size = len(rd)
        if rd.type != jd.type:  # the readers give string, frames large_string: one type
            rd, jd = rd.cast(pa.large_string()), jd.cast(pa.large_string())
        all_docs = pa.chunked_array([*rd.chunks, *jd.chunks], type=rd.type)
        keys = doc_keys(all_docs)  # ranking rows in their given order, then judgments
        # Which order a query's rows come in does not matter to the join: when no row is
        # cut, it runs on the ranking rows as given (no permuted copy of the keys) and its
        # matches move to ranked positions afterwards; else on the kept rows, ranked.
        given_order = n == size  # no row was cut (always so when ``rows`` is None)
        if rows is None or given_order:
            all_codes = joined_codes(codes, jcodes)  # no copy: query_codes wrote them so

            def run_row(items: np.ndarray) -> np.ndarray:
                return items

        else:
            all_codes = np.concatenate([ordered, jcodes])
            keys = keys.reorder_head(size, rows)
            run_row = original

        def take(items: np.ndarray) -> pa.ChunkedArray:
            ranked = items < n
            where = np.where(ranked, run_row(np.where(ranked, items, 0)), items - n + size)
            return take_rows(all_docs, where)

        first, later = equal_pairs(all_codes, keys, take)
        del all_codes, keys  # their memory serves what follows
        to_ranked = None
        if given_order and rows is not None:  # ranked position of each row as given
            to_ranked = np.empty(n, dtype=rows.dtype)
            to_ranked[rows] = np.arange(n, dtype=rows.dtype)
        run_dup = later < n
        if run_dup.any():
            raise DataError(
                "rankings: (query_id, doc_id): expected each document once per query, got "
                f"{int(run_dup.sum())} duplicate(s): "
                f"{_describe_pairs(rq, rd, run_row(later[run_dup]))}"
            )
        # pairs reaching a judgment: the group's first judgment matches its run row (if
        # any); every further judgment of the group repeats one
        to_judgment = later >= n
        f, lt = first[to_judgment], later[to_judgment]
        repeated = f >= n
        # matched ranked rows, each with its judgment, in ranked order (by scattering)
        matched = ~repeated
        ranked_rows = f[matched] if to_ranked is None else to_ranked[f[matched]]
        judgment_of = np.full(n, -1, dtype=np.int32 if jgrade.size < 2**31 else np.int64)
        judgment_of[ranked_rows] = lt[matched] - n
        judged_rows = np.flatnonzero(judgment_of >= 0)
        if judged_rows.size < ranked_rows.size:
            # a run row reached by two judgments (a group of three or more): keep the first
            by_group = np.lexsort((lt, f))
            f, lt = f[by_group], lt[by_group]
            repeated = f >= n
            repeated[1:] |= f[1:] == f[:-1]
        if repeated.any():
            raise DataError(
                "judgments: (query_id, doc_id): expected one judgment per pair, got "
                f"{int(repeated.sum())} repeated: "
                f"{_describe_pairs(jq, jd, lt[repeated] - n)}"
            )
        judged_grade = jgrade[judgment_of[judged_rows]]
        if keep_judgment:
            row_judgment = judgment_of[judged_rows].astype(np.int64)

    in_run = retrieved > 0
    in_judgments = np.bincount(jcodes, minlength=nq) > 0 if jcodes.size else np.zeros(nq, bool)
    return Prepared(
        ids=ids,
        row_code=ordered[judged_rows],
        row_pos=pos[judged_rows],
        row_grade=judged_grade,
        judged_code=jcodes,
        judged_grade=jgrade,
        in_run=in_run,
        in_judgments=in_judgments,
        retrieved=retrieved,
        row_judgment=row_judgment,
    )


def _gain(grade: np.ndarray, kind: str) -> np.ndarray:
    positive = np.where(grade > 0, grade, 0.0)
    if kind == "exp":
        return np.where(grade > 0, np.exp2(positive) - 1.0, 0.0)
    return positive


def first_per_query(codes: np.ndarray, values: np.ndarray, nq: int) -> np.ndarray:
    """Value of the first row of each query's block (rows are grouped by query)."""
    out = np.full(nq, np.nan)
    if codes.size:
        start = np.ones(codes.size, dtype=bool)
        start[1:] = codes[1:] != codes[:-1]
        out[codes[start]] = values[start]
    return out


def gain_levels(gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(gains, return_inverse=True)``, by counting when the gains are small
    whole numbers (graded qrels: no sort of every judgment)."""
    if gains.size and gains.max() <= 64:
        whole = gains.astype(np.int64)
        if np.array_equal(whole, gains):
            present = np.bincount(whole) > 0
            index_of = np.cumsum(present) - 1
            return np.flatnonzero(present).astype(np.float64), index_of[whole]
    return np.unique(gains, return_inverse=True)


def _ideal_dcg(prep: Prepared, kind: str, cutoffs: set[int | None], nq: int) -> dict:
    """IDCG per query for every cutoff, from all judgments sorted by gain descending.

    With few distinct gains (graded qrels have a handful) the ideal list of a query is
    runs of equal gains, so IDCG@k is a sum over gain levels of gain x (the discounts of
    that run's positions below k), read from one table of cumulative discounts.
    """
    gains = _gain(prep.judged_grade, kind)  # >= 0
    # the levels of every judgment, gain 0 among them (no copy of the judgments without
    # it); that level, the lowest, is dropped from the counts below
    levels, level_of = gain_levels(gains)
    zero = int(levels.size > 0 and levels[0] == 0)
    width, levels = levels.size, levels[zero:]
    out = {}
    if 0 < levels.size <= 32 and nq * levels.size <= 8 * np.count_nonzero(gains) + 1_000_000:
        cells = prep.judged_code.astype(np.int64)  # bincount counts in int64
        cells *= width
        cells += level_of
        count = np.bincount(cells, minlength=nq * width).reshape(nq, width)
        count = count[:, zero:][:, ::-1]  # highest gain first
        end = np.cumsum(count, axis=1)
        start = end - count
        longest = int(end[:, -1].max())
        cumulative = np.concatenate(([0.0], np.cumsum(1.0 / np.log2(np.arange(longest) + 2.0))))
        for k in cutoffs:
            lo = start if k is None else np.minimum(start, k)
            hi = end if k is None else np.minimum(end, k)
            span = cumulative[hi] - cumulative[lo]
            out[k] = span @ levels[::-1]
        return out
    positive = gains > 0
    codes, gains = prep.judged_code[positive], gains[positive]
    order = np.lexsort((-gains, codes))
    codes, gains = codes[order], gains[order]
    ideal_pos = positions(codes)
    terms = gains / np.log2(ideal_pos + 2.0)
    for k in cutoffs:
        mask = slice(None) if k is None else ideal_pos < k
        out[k] = np.bincount(codes[mask], weights=terms[mask], minlength=nq)
    return out


class _Shared:
    """What the metrics of one :func:`compute` call share: the judged rows, and the
    relevant rows, relevant counts and ideal DCGs per threshold or gain, each computed once."""

    def __init__(self, prep: Prepared, metrics: Sequence[Metric], rel_level: float, gain: str):
        self.prep, self.metrics, self.rel_level, self.gain = prep, metrics, rel_level, gain
        self.nq = len(prep.ids)
        self.q, self.p, self.g = prep.row_code, prep.row_pos, prep.row_grade
        self._num_rel: dict[float, np.ndarray] = {}
        self._relevant: dict[float, tuple] = {}
        self._ideal: dict[str, dict] = {}
        self.memo: dict = {}  # what the diversity kernels share (abrank.engines.diversity)

    def threshold(self, metric: Metric) -> float:
        return float(metric.rel if metric.rel is not None else self.rel_level)

    def num_rel(self, t: float) -> np.ndarray:
        """Judgments with a grade >= t, per query."""
        if t not in self._num_rel:
            codes = self.prep.judged_code[self.prep.judged_grade >= t]
            self._num_rel[t] = np.bincount(codes, minlength=self.nq).astype(np.float64)
        return self._num_rel[t]

    def relevant(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Relevant judged rows (query, position, 1-based rank among relevant rows)."""
        if t not in self._relevant:
            mask = self.g >= t
            rq, rp = self.q[mask], self.p[mask]
            self._relevant[t] = (rq, rp, positions(rq) + 1.0)
        return self._relevant[t]

    def count(self, codes: np.ndarray, pos: np.ndarray, k: int | None) -> np.ndarray:
        sel = codes if k is None else codes[pos < k]
        return np.bincount(sel, minlength=self.nq).astype(np.float64)

    def ideal(self, kind: str) -> dict:
        """IDCG per query at every cutoff that an ndcg of this gain asks for, and uncut."""
        if kind not in self._ideal:
            wanted = {
                m.k for m in self.metrics if m.family == "ndcg" and (m.gain or self.gain) == kind
            }
            wanted = {None, *wanted}  # the uncut ideal: is any gain to be had at all
            self._ideal[kind] = _ideal_dcg(self.prep, kind, wanted, self.nq)
        return self._ideal[kind]


def _discounted(s: _Shared, metric: Metric) -> np.ndarray:
    """dcg and ndcg; undefined where no ranking could score above 0 (no judged gain)."""
    q, p, k = s.q, s.p, metric.k
    kind = metric.gain or s.gain
    gains = _gain(s.g, kind)
    sel = (gains > 0) if k is None else (gains > 0) & (p < k)
    dcg = np.bincount(q[sel], weights=gains[sel] / np.log2(p[sel] + 2.0), minlength=s.nq)
    ideal = s.ideal(kind)
    if metric.family == "dcg":
        return np.where(ideal[None] > 0, dcg, np.nan)
    return np.where(ideal[None] > 0, dcg / ideal[metric.k], np.nan)


#: ERR's largest grade (gdeval's MAX_JUDGMENT): a document of this grade stops a user
#: with probability (2^4 - 1) / 2^4; a higher grade counts as it.
ERR_MAX_GRADE = 4.0


def err_stop(grade: np.ndarray) -> np.ndarray:
    """ERR's stopping probability of a grade: (2^g - 1) / 2^4, g clipped to [0, 4]."""
    clipped = np.clip(grade, 0.0, ERR_MAX_GRADE)
    return (np.exp2(clipped) - 1.0) / np.exp2(ERR_MAX_GRADE)


def _err(s: _Shared, metric: Metric) -> np.ndarray:
    """Expected reciprocal rank: sum over the ranked documents of R_i / rank_i times the
    chance that no document above stopped the user, prod_{j<i} (1 - R_j); unjudged
    documents stop no one, so only the judged rows (in rank order) count. Undefined where
    no judgment has a grade above 0 (gdeval scores no such query)."""
    stop = err_stop(s.g)
    log_go_on = np.log1p(-stop)  # finite: a stop is at most 15/16
    reached = np.exp(sum_above(s.q, log_go_on))  # prod of (1 - R) over the judged rows above
    terms = stop * reached / (s.p + 1.0)
    sel = slice(None) if metric.k is None else s.p < metric.k
    values = np.bincount(s.q[sel], weights=terms[sel], minlength=s.nq)
    gainful = s.prep.judged_code[s.prep.judged_grade > 0]
    defined = np.bincount(gainful, minlength=s.nq) > 0
    return np.where(defined, values, np.nan)


def rbp_weights(p: float, pos: np.ndarray) -> np.ndarray:
    """The weight (1 - p) x p^pos of each 0-based position in the rank-biased user model
    (read from a table of the positions' weights: positions are few, rows many)."""
    if pos.size == 0:
        return np.zeros(0)
    table = (1.0 - p) * np.power(p, np.arange(int(pos.max()) + 1, dtype=np.float64))
    return table[pos]


def _rbp(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    """Rank-biased precision: the weights of the relevant rows of the top k, summed."""
    rq, rp, _ = rows
    sel = slice(None) if metric.k is None else rp < metric.k
    weights = rbp_weights(cast(float, metric.p), rp[sel])
    return np.bincount(rq[sel], weights=weights, minlength=s.nq)


def _rbp_residual(s: _Shared, metric: Metric) -> np.ndarray:
    """RBP's residual: 1 minus the weights of the judged rows of the top k (what the
    unjudged rows and the places past the ranking's end could add); 1 for a query that
    was not ranked."""
    sel = slice(None) if metric.k is None else s.p < metric.k
    weights = rbp_weights(cast(float, metric.p), s.p[sel])
    return 1.0 - np.bincount(s.q[sel], weights=weights, minlength=s.nq)


def _alpha_ndcg(s: _Shared, metric: Metric) -> np.ndarray:
    """α-nDCG (:func:`abrank.engines.diversity.alpha_ndcg`): one greedy ideal search for
    every cutoff of the call at this α."""
    cutoffs = {
        int(m.k)
        for m in s.metrics
        if m.family == "alpha_ndcg" and m.redundancy == metric.redundancy and m.k is not None
    }
    return alpha_ndcg(s.prep, metric, s.memo, cutoffs)


def _err_ia(s: _Shared, metric: Metric) -> np.ndarray:
    """ERR-IA (:func:`abrank.engines.diversity.err_ia`)."""
    return err_ia(s.prep, metric, s.memo)


def _judged(s: _Shared, metric: Metric) -> np.ndarray:
    k = metric.k
    hits = s.count(s.q, s.p, k)
    denominator = float(k) if k is not None else s.prep.retrieved.astype(np.float64)
    return np.where(denominator > 0, hits / denominator, 0.0)


def _binary(
    values: Callable[[_Shared, Metric, tuple, np.ndarray], np.ndarray],
) -> Callable[[_Shared, Metric], np.ndarray]:
    """A binary metric's kernel: ``values`` on the relevant rows, NaN on queries without
    any relevant judgment (undefined)."""

    def kernel(s: _Shared, metric: Metric) -> np.ndarray:
        t = s.threshold(metric)
        rows, nrel = s.relevant(t), s.num_rel(t)
        return np.where(nrel > 0, values(s, metric, rows, nrel), np.nan)

    kernel.__doc__ = values.__doc__
    return kernel


def _mrr(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    rq, rp, _ = rows
    first = first_per_query(rq, rp, s.nq)
    if metric.k is not None:
        first[first >= metric.k] = np.nan
    return np.where(np.isnan(first), 0.0, 1.0 / (first + 1.0))


def _recall(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    rq, rp, _ = rows
    return s.count(rq, rp, metric.k) / nrel


def _precision(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    rq, rp, _ = rows
    k = cast(int, metric.k)  # precision's cutoff is required: Metric refuses one without
    return s.count(rq, rp, k) / float(k)


def _hit(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    rq, rp, _ = rows
    return (s.count(rq, rp, metric.k) > 0).astype(np.float64)


def _average_precision(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    rq, rp, rrank = rows
    sel = slice(None) if metric.k is None else rp < metric.k
    sums = np.bincount(rq[sel], weights=rrank[sel] / (rp[sel] + 1.0), minlength=s.nq)
    return sums / nrel


def _bpref(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    """bpref as trec_eval 9 computes it (m_bpref.c): for each ranked relevant document,
    1 - min(n, R) / min(N, R), where n counts the judged nonrelevant documents ranked above
    it, R the relevant judgments and N the nonrelevant ones (grade >= 0 and below the
    threshold: trec_eval reads a negative grade as not judged); summed and divided by R."""
    t = s.threshold(metric)
    nonrel_judged = (s.prep.judged_grade >= 0) & (s.prep.judged_grade < t)
    big_n = np.bincount(s.prep.judged_code[nonrel_judged], minlength=s.nq).astype(np.float64)
    nonrel = ((s.g >= 0) & (s.g < t)).astype(np.int64)
    relevant = s.g >= t
    # judged nonrelevant rows ranked above each row of its query
    above = sum_above(s.q, nonrel)[relevant].astype(np.float64)
    rq = s.q[relevant]
    r = nrel[rq]
    share = np.minimum(above, r) / np.maximum(np.minimum(big_n[rq], r), 1.0)
    terms = np.where(above > 0, 1.0 - share, 1.0)
    return np.bincount(rq, weights=terms, minlength=s.nq) / nrel


def _rprec(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    """R-precision (trec_eval's Rprec): the relevant documents among the first R, over R."""
    rq, rp, _ = rows
    return np.bincount(rq[rp < nrel[rq]], minlength=s.nq) / nrel


def _infap(s: _Shared, metric: Metric, rows: tuple, nrel: np.ndarray) -> np.ndarray:
    """infAP as trec_eval estimates it (:func:`abrank.engines.inferred_ap.inferred_ap`)."""
    from abrank.engines.inferred_ap import inferred_ap

    return inferred_ap(s.prep, s.threshold(metric), rows, nrel)


#: The kernel of each judged metric family of the registry (:data:`abrank.metrics.FAMILIES`).
KERNELS: dict[str, Callable[[_Shared, Metric], np.ndarray]] = {
    "mrr": _binary(_mrr),
    "ndcg": _discounted,
    "dcg": _discounted,
    "err": _err,
    "alpha_ndcg": _alpha_ndcg,
    "err_ia": _err_ia,
    "recall": _binary(_recall),
    "precision": _binary(_precision),
    "hit": _binary(_hit),
    "map": _binary(_average_precision),
    "ap": _binary(_average_precision),
    "gm_map": _binary(_average_precision),  # AP per query; the summary is geometric
    "bpref": _binary(_bpref),
    "rprec": _binary(_rprec),
    "infap": _binary(_infap),
    "rbp": _binary(_rbp),
    "rbp_residual": _rbp_residual,
    "judged": _judged,
}


def missing_kernels() -> list[str]:
    """Judged families of the metric registry that this engine cannot compute (none,
    normally); click families are scored from impression logs (:mod:`abrank.engines.clicks`)."""
    return [family for family in judged_families() if family not in KERNELS]


def compute(prep: Prepared, metrics: Sequence[Metric], rel_level: float, gain: str) -> dict:
    """Per-query values (length nq arrays) of every metric, NaN where undefined.

    Judged-only metrics (``ndcg@10(judged)``) are their plain twins computed on the
    condensed rankings (:func:`abrank.engines.condensed.condense`), condensed once for all.
    """
    condensed = [m for m in metrics if m.judged_only]
    if condensed:
        plain = [dataclasses.replace(m, judged_only=False) for m in condensed]
        on_judged = compute(condense(prep), plain, rel_level, gain)
        judged_values = {m.name: on_judged[p.name] for m, p in zip(condensed, plain, strict=True)}
        rest = compute(prep, [m for m in metrics if not m.judged_only], rel_level, gain)
        return {m.name: (judged_values if m.judged_only else rest)[m.name] for m in metrics}
    shared = _Shared(prep, metrics, rel_level, gain)
    results: dict[str, np.ndarray] = {}
    for metric in metrics:
        kernel = KERNELS.get(metric.family)
        if kernel is None:
            raise NotImplementedError(
                f"memory engine: metric family {metric.family!r} is in the registry but has "
                "no kernel here"
            )
        with np.errstate(divide="ignore", invalid="ignore"):
            value = kernel(shared, metric)
        results[metric.name] = value.astype(np.float64)
    return results


def scored_queries(prep: Prepared, complete: bool) -> np.ndarray:
    return prep.in_judgments & (prep.in_run | complete)


def query_index(prep: Prepared, scored: np.ndarray) -> pd.Index:
    ids = prep.ids.filter(pa.array(scored)).to_pandas().astype("str")
    return pd.Index(ids, name="query_id", dtype="str")
