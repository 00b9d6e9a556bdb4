"""Diversity metrics from subtopic judgments: α-nDCG@k and ERR-IA@k, as ndeval computes them.

ndeval (the TREC Web track's evaluation tool, which pyndeval wraps and ir_measures calls)
reads each judgment as binary per subtopic: a document is relevant to a subtopic when its
grade there is above 0. The gain of the document at rank i is

    G(i) = sum over the subtopics s it is relevant to of (1 - α)^c_s(i-1),

c_s(i-1) counting the documents above rank i relevant to s: each further document on an
already covered subtopic is worth (1 - α) times the previous one (Clarke et al., SIGIR
2008). Then

- α-DCG@k = sum_{i<=k} G(i) / log2(i + 1), and α-nDCG@k = α-DCG@k over the α-DCG@k of
  ndeval's *greedy* ideal ordering: rank by rank, the judged document of highest gain given
  those already placed, equal gains going to the larger doc id (bytewise), as ndeval's
  ``idealResult`` breaks them;
- ERR-IA@k = sum_{i<=k} G(i) / i over S * sum_{i<=k} (1 - α)^(i-1) / i, S the number of
  subtopics with a relevant judgment: ndeval's "ideal ideal" normalisation, the ``ERR-IA``
  that ir_measures' ``ERR_IA`` reports (not the greedy-normalised ``nERR-IA``). ndeval
  leaves ERR-IA@1 undivided (its loop starts at rank 2); abrank divides it too.

Judgments without subtopics are one subtopic per query (α-nDCG is then a binary nDCG with
redundancy penalty). A query without any relevant judgment (S = 0) is undefined (NaN),
as NDCG is; ndeval prints 0 for it (``no_relevant: zero`` gives that).

Everything is whole-column NumPy: the run's gains are one stable sort of the (row,
subtopic) entries of the top k rows, and the greedy ideal ordering is k steps, each a
segmented arg-max over every query's remaining candidates at once.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank.engines.prepared import Prepared, SubtopicJudgments
from abrank.io.arrow import positions, query_codes
from abrank.io.subtopics import subtopic_codes
from abrank.metrics.names import Metric

__all__ = [
    "alpha_ndcg",
    "err_ia",
    "err_ia_norm",
    "greedy_ideal_dcg",
    "subtopic_entries",
    "subtopic_join",
]


def subtopic_join(
    jq: pa.ChunkedArray, jd: pa.ChunkedArray, jgrade: np.ndarray, labels: pa.ChunkedArray
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray, np.ndarray, np.ndarray]:
    """Subtopic judgments as one judgment per (query, doc) plus their relevant entries.

    Returns the (query, doc) pairs in order of first judgment with the highest grade over
    their subtopics (what every other metric reads), and per relevant subtopic judgment
    (grade > 0) the index of its pair and its subtopic label's code (order of first
    appearance). (query, subtopic, doc) triples are unique: the readers check so.
    """
    codes, _ = query_codes(jq)
    docs = jd.combine_chunks() if isinstance(jd, pa.ChunkedArray) else jd
    doc_code = pc.dictionary_encode(docs).indices.to_numpy(zero_copy_only=False)
    key = codes.astype(np.int64) * (int(doc_code.max(initial=0)) + 1) + doc_code
    # pairs numbered in order of first judgment (a hash pass, no sort of the judgments)
    pair = pc.dictionary_encode(pa.array(key)).indices.to_numpy(zero_copy_only=False)
    pair = pair.astype(np.int64)
    # a row is its pair's first exactly when its number exceeds every number before it
    is_first = np.empty(pair.size, dtype=bool)
    if pair.size:
        is_first[0] = True
        is_first[1:] = pair[1:] > np.maximum.accumulate(pair[:-1])
    grade = np.full(int(is_first.sum()), -np.inf)
    np.maximum.at(grade, pair, jgrade)
    keep = pa.array(np.flatnonzero(is_first))
    relevant = jgrade > 0
    label = subtopic_codes(labels)
    return jq.take(keep), jd.take(keep), grade, pair[relevant], label[relevant]


def subtopic_entries(
    judged_code: np.ndarray, jd: pa.ChunkedArray, entry_pair: np.ndarray, entry_label: np.ndarray
) -> SubtopicJudgments:
    """The :class:`SubtopicJudgments` of the prepared join: ``judged_code`` the query code
    of each (query, doc) judgment, ``jd`` its doc id, the entries from :func:`subtopic_join`."""
    order = np.lexsort((entry_label, entry_pair))
    judgment, label = entry_pair[order], entry_label[order]
    query = judged_code[judgment].astype(np.int64)
    _, subtopic = np.unique(query * (int(label.max(initial=0)) + 1) + label, return_inverse=True)
    has = np.zeros(judged_code.size, dtype=bool)
    has[judgment] = True
    cand = np.flatnonzero(has)
    if cand.size:
        docs = jd.take(pa.array(cand))
        table = pa.table({"q": pa.array(judged_code[cand]), "d": docs})
        by = pc.sort_indices(table, sort_keys=[("q", "ascending"), ("d", "descending")])
        cand = cand[by.to_numpy()]
    return SubtopicJudgments(
        judgment=judgment,
        subtopic=subtopic.reshape(-1).astype(np.int64),
        count=int(subtopic.max(initial=-1)) + 1,
        candidates=cand,
    )


def _expand(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices starts[i] .. starts[i] + counts[i] - 1, for every i, concatenated."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    shift = np.repeat(starts - (ends - counts), counts)
    return np.arange(total, dtype=np.int64) + shift


class _Entries:
    """The relevant (judgment, subtopic) entries of a join, grouped by judgment; judgments
    without subtopics are one subtopic per query (each relevant judgment one entry).
    ``judged_code`` and ``judged_grade``: query code and grade of each judgment."""

    def __init__(
        self,
        judged_code: np.ndarray,
        judged_grade: np.ndarray,
        sub: SubtopicJudgments | None,
        nq: int,
    ):
        self.nq = nq
        self.judged_code = judged_code
        self.single = sub is None  # one subtopic a query
        if sub is None:
            self.judgment = np.flatnonzero(judged_grade > 0)
            self.subtopic = judged_code[self.judgment].astype(np.int64)
            self.count = self.nq
            # any order within a query will do (one subtopic: equal gains are equal
            # documents), but queries must come in blocks
            self.candidates = self.judgment[np.argsort(self.subtopic, kind="stable")]
        else:
            self.judgment, self.subtopic = sub.judgment, sub.subtopic
            self.count, self.candidates = sub.count, sub.candidates
        self.per_judgment = np.bincount(self.judgment, minlength=judged_code.size)
        self.start = np.cumsum(self.per_judgment) - self.per_judgment
        # S: subtopics with a relevant judgment, per query
        query_of = np.zeros(self.count, dtype=np.int64)
        query_of[self.subtopic] = judged_code[self.judgment]
        present = np.zeros(self.count, dtype=bool)
        present[self.subtopic] = True
        self.subtopics = np.bincount(query_of[present], minlength=self.nq).astype(np.float64)

    @classmethod
    def of(cls, prep: Prepared) -> _Entries:
        return cls(prep.judged_code, prep.judged_grade, prep.subtopics, len(prep.ids))


def _row_gains(
    prep: Prepared, entries: _Entries, k: int, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of the top k and G(i) of each: the sum over its relevant subtopics of
    (1 - α)^(documents above it relevant to that subtopic)."""
    if prep.subtopics is None:
        rows = np.flatnonzero((prep.row_pos < k) & (prep.row_grade > 0))
        entry_row = np.arange(rows.size)
        subtopic = prep.row_code[rows].astype(np.int64)
    else:
        if prep.row_judgment is None:
            raise ValueError("prepared join: subtopic judgments without row_judgment")
        rows = np.flatnonzero(prep.row_pos < k)
        judgment = prep.row_judgment[rows]
        counts = entries.per_judgment[judgment]
        entry = _expand(entries.start[judgment], counts)
        entry_row = np.repeat(np.arange(rows.size), counts)
        subtopic = entries.subtopic[entry]
    # rows come in rank order within each query, and a subtopic belongs to one query: the
    # entries above an entry on its subtopic are the earlier ones of its group
    order = np.argsort(subtopic, kind="stable")
    seen = np.empty(subtopic.size, dtype=np.int64)
    seen[order] = positions(subtopic[order])
    gain = np.power(1.0 - alpha, seen)
    return rows, np.bincount(entry_row, weights=gain, minlength=rows.size)


class _Greedy:
    """The greedy search's candidates (grouped by query, in tie-break order) and their
    entries (grouped by candidate, in label order), with what each step reads of them."""

    def __init__(self, entry_cand: np.ndarray, entry_sub: np.ndarray, cand_query: np.ndarray):
        self.entry_cand, self.entry_sub = entry_cand, entry_sub
        self.size = cand_query.size
        new_block = np.r_[True, cand_query[1:] != cand_query[:-1]]
        self.block_start = np.flatnonzero(new_block)
        self.block_of = np.cumsum(new_block) - 1
        self.block_query = cand_query[self.block_start].astype(np.int64)
        self.block_size = np.diff(np.r_[self.block_start, self.size])
        self.longest = int(self.block_size.max(initial=0))
        self.per_cand = np.bincount(entry_cand, minlength=self.size)
        self.cand_start = np.cumsum(self.per_cand) - self.per_cand
        self.placed = np.zeros(self.size)  # -inf once placed
        self.cand_query = cand_query

    def remaining(self, step: int) -> int:
        """Candidates of the queries that still have one to place after ``step`` steps."""
        return int(self.block_size[self.block_size > step].sum())

    def without_done(self, step: int) -> _Greedy:
        """The search without the queries whose candidates are all placed (one a step)."""
        keep = (self.block_size > step)[self.block_of]
        renumber = np.cumsum(keep) - 1
        kept_entry = keep[self.entry_cand]
        smaller = _Greedy(
            renumber[self.entry_cand[kept_entry]],
            self.entry_sub[kept_entry],
            self.cand_query[keep],
        )
        smaller.placed = self.placed[keep]
        return smaller


def _ideal_dcg(entries: _Entries, cutoffs: Collection[int], alpha: float) -> dict[int, np.ndarray]:
    """α-DCG@k of ndeval's greedy ideal ordering per query, at every cutoff k (one greedy
    search serves them all: the first k steps are the same whatever the deepest): at each
    step every query places its remaining judged document of highest gain (equal gains: the
    larger doc id), and the subtopics it covers lose a factor (1 - α). Gains are summed, and
    compared, exactly as ndeval sums them (subtopic by subtopic, in label order), so that
    equal gains are found equal where ndeval finds them so."""
    nq = entries.nq
    wanted = sorted({int(k) for k in cutoffs})
    deepest = wanted[-1] if wanted else 0
    out = np.zeros(nq)
    cand = entries.candidates
    if cand.size == 0:
        return {k: out for k in wanted}
    if entries.single:
        # one subtopic a query: every relevant document gains (1 - α)^t at step t, so the
        # ideal is the first min(k, R) terms of one series (the greedy's sums, term by term)
        steps = np.arange(deepest)
        decays = np.cumprod(np.r_[1.0, np.full(deepest - 1, 1.0 - alpha)])
        series = np.concatenate(([0.0], np.cumsum(decays / np.log2(steps + 2.0))))
        relevant = np.bincount(entries.judged_code[cand], minlength=nq)
        return {k: series[np.minimum(relevant, k)] for k in wanted}
    found: dict[int, np.ndarray] = {}
    # candidates numbered 0..C-1 in their order; entries re-keyed to them
    number = np.full(entries.judged_code.size, -1, dtype=np.int64)
    number[cand] = np.arange(cand.size)
    entry_cand = number[entries.judgment]
    by_cand = np.argsort(entry_cand, kind="stable")  # label order kept within a candidate
    state = _Greedy(entry_cand[by_cand], entries.subtopic[by_cand], entries.judged_code[cand])
    gain = np.ones(entries.count)
    decay = 1.0 - alpha
    for step in range(min(deepest, state.longest)):
        if step in wanted:  # the sums over the first `step` places
            found[step] = out.copy()
        if 2 * state.remaining(step) < state.size:  # most queries done: drop them
            state = state.without_done(step)
        summed = np.bincount(state.entry_cand, weights=gain[state.entry_sub], minlength=state.size)
        score = np.add(summed, state.placed)
        best = np.maximum.reduceat(score, state.block_start)
        top = np.flatnonzero(score == best[state.block_of])
        top = top[score[top] >= 0]  # a query with nothing left has best -inf
        if top.size == 0:
            break
        block = state.block_of[top]
        pick = top[np.r_[True, block[1:] != block[:-1]]]  # the first: the largest doc id
        out[state.block_query[state.block_of[pick]]] += score[pick] / np.log2(step + 2.0)
        state.placed[pick] = -np.inf
        covered = _expand(state.cand_start[pick], state.per_cand[pick])
        gain[state.entry_sub[covered]] *= decay
    return {k: found.get(k, out) for k in wanted}


def _entries(prep: Prepared, memo: dict | None) -> _Entries:
    """The entries of ``prep``, made once per ``memo``."""
    if memo is None:
        return _Entries.of(prep)
    if "entries" not in memo:
        memo["entries"] = _Entries.of(prep)
    return cast(_Entries, memo["entries"])


def alpha_ndcg(
    prep: Prepared,
    metric: Metric,
    memo: dict | None = None,
    cutoffs: Collection[int] = (),
) -> np.ndarray:
    """α-nDCG@k per query (NaN where no subtopic has a relevant judgment).

    ``memo`` (a dict kept by the caller for one prepared join) keeps the entries and the
    ideal DCGs between calls; ``cutoffs``: every cutoff of alpha_ndcg at this α the caller
    will ask for, which one greedy search then serves."""
    k, alpha = int(metric.k or 0), metric.redundancy
    entries = _entries(prep, memo)
    key = ("ideal", alpha)
    ideals = None if memo is None else memo.get(key)
    if ideals is None or k not in ideals:
        ideals = _ideal_dcg(entries, {k, *cutoffs}, alpha)
        if memo is not None:
            memo[key] = ideals
    ideal = ideals[k]
    rows, gains = _row_gains(prep, entries, k, alpha)
    dcg = np.bincount(
        prep.row_code[rows], weights=gains / np.log2(prep.row_pos[rows] + 2.0), minlength=entries.nq
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(ideal > 0, dcg / ideal, 0.0)
    return np.where(entries.subtopics > 0, value, np.nan)


def err_ia(prep: Prepared, metric: Metric, memo: dict | None = None) -> np.ndarray:
    """ERR-IA@k per query, ndeval's "ideal ideal" normalised value (NaN where no subtopic
    has a relevant judgment); ``memo`` as for :func:`alpha_ndcg`."""
    k, alpha = int(metric.k or 0), metric.redundancy
    entries = _entries(prep, memo)
    rows, gains = _row_gains(prep, entries, k, alpha)
    err = np.bincount(
        prep.row_code[rows], weights=gains / (prep.row_pos[rows] + 1.0), minlength=entries.nq
    )
    best = err_ia_norm(k, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(entries.subtopics > 0, err / (entries.subtopics * best), np.nan)


def err_ia_norm(k: int, alpha: float) -> float:
    """ERR-IA's "ideal ideal" per subtopic: sum_{i<=k} (1 - α)^(i-1) / i (the (1 - α)
    powers made as ndeval makes them, by repeated products)."""
    powers = np.cumprod(np.r_[1.0, np.full(k - 1, 1.0 - alpha)])
    return float(np.sum(powers / np.arange(1.0, k + 1.0)))


def greedy_ideal_dcg(
    query_ids: pa.ChunkedArray,
    doc_ids: pa.ChunkedArray,
    labels: pa.ChunkedArray | None,
    cutoffs: dict[tuple[int, float], None] | list[tuple[int, float]],
) -> tuple[pa.Array, dict[tuple[int, float], np.ndarray]]:
    """The α-DCG@k of ndeval's greedy ideal ordering per query, for each (k, α), from the
    *relevant* judgments alone (query, doc and subtopic label of each; ``labels`` None: one
    subtopic a query): what the SQL engines divide their α-DCG by, the memory engine's
    numbers exactly. Returns the sorted distinct query ids and one value per id and (k, α)."""
    grade = np.ones(len(query_ids))
    if labels is None:
        codes, ids = query_codes(query_ids)
        entries = _Entries(codes, grade, None, len(ids))
    else:
        jq, jd, jgrade, entry_pair, entry_label = subtopic_join(query_ids, doc_ids, grade, labels)
        codes, ids = query_codes(jq)
        sub = subtopic_entries(codes, jd, entry_pair, entry_label)
        entries = _Entries(codes, jgrade, sub, len(ids))
    out: dict[tuple[int, float], np.ndarray] = {}
    for a in dict.fromkeys(a for _, a in cutoffs):
        ks = [k for k, b in cutoffs if b == a]
        out.update({(k, a): v for k, v in _ideal_dcg(entries, ks, a).items()})
    return ids, out
