"""Judged metrics per query (trec_eval's numbers), defined once for every SQL engine.

The same numbers as :mod:`abrank.engines.memory`, computed where the rankings lie, over
two relations of canonical columns: ``rankings(query_id, doc_id, score | rank)`` and
``judgments(query_id, doc_id, relevance)``. Ids are compared as text.

The definition follows trec_eval 9 step by step:

- every ranked row is joined to its judgment and numbered (:mod:`.numbering`), ordered by
  score descending (or by ``rank`` ascending), ties by doc id descending in byte order:
  its 0-based position, its position among the judged rows (the judged-only, "condensed"
  view of trec_eval ``-J``) and, per relevance threshold, the running count of relevant
  rows and of judged nonrelevant rows above it (average precision, bpref);
- only the first ``depth`` rows of a query count (the cut comes before condensing, as in
  trec_eval);
- the ideal DCG of a query comes from *all* its judgments, sorted by gain;
- every metric is then one aggregate per query, NULL where it is undefined (decided per
  metric: no judgment reaches its threshold, or no judgment has a gain above 0).

Only per-query numbers come back: the values of every metric, and per ranked query
judged@k and the rank of its first relevant document (:class:`ArmScores`, as the memory
engine's ``score_arm`` gives them).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd
from abrank.engines.diversity import err_ia_norm, greedy_ideal_dcg
from abrank.engines.evaluate import ArmScores
from abrank.engines.inferred_ap import INFAP_EPSILON
from abrank.engines.memory import check_options
from abrank.engines.sql import Backend, compile_sql
from abrank.engines.sql.judged_plan import (
    ONE,
    RANKED_BY,
    ZERO,
    JudgedPlan,
    err_stop,
    judgments_sql,
    sql_gain,
    sql_number,
    within,
)
from abrank.engines.sql.numbering import numbered_sql, ranks_in_order
from abrank.io.subtopics import SUBTOPIC
from abrank.metrics.names import Metric, as_judged_only, judged_metrics
from abrank.metrics.registry import FAMILIES

__all__ = ["RANKED_BY", "judged_sql", "numbered_rows_sql", "score_arm_sql", "top_rows_sql"]


def _rbp_weight(p: float, pos: str) -> str:
    """The rank-biased weight (1 - p) x p^pos of a 0-based position
    (:func:`abrank.engines.memory.rbp_weights`)."""
    return f"({sql_number(1.0 - p)} * POWER({sql_number(p)}, {pos}))"


def _infap_term(i: int, pos: str) -> str:
    """infAP's term of a relevant row at 0-based position j (``pos``), as
    :func:`abrank.engines.inferred_ap.inferred_ap` computes it: 1 at the top, else
    1/(j+1) + j/(j+1) x (r+n+u)/j x (r+e)/(r+n+2e), with r the relevant rows above
    (``rc_i`` - 1), n the judged nonrelevant ones (``na_i``) and u those in the pool but
    unjudged (``pa``)."""
    j = f"CAST({pos} AS DOUBLE)"
    r, n, u = f"(rc_{i} - 1)", f"na_{i}", "pa"
    eps = sql_number(INFAP_EPSILON)
    later = (
        f"{ONE} / ({j} + 1) + ({j} / ({j} + 1)) * (CAST({r} + {n} + {u} AS DOUBLE) / {j}) "
        f"* ((CAST({r} AS DOUBLE) + {eps}) / (CAST({r} + {n} AS DOUBLE) + 2 * {eps}))"
    )
    return f"(CASE WHEN {pos} = 0 THEN {ONE} ELSE {later} END)"


def _cut(k: int | None) -> str:
    return "all" if k is None else str(int(k))


def _query_stats_sql(plan: JudgedPlan) -> str:
    """Per judged query: relevant and judged nonrelevant counts per threshold."""
    parts = ["query_id", "SUM(CASE WHEN grade > 0 THEN 1 ELSE 0 END) AS ngain"]
    for i, t in enumerate(plan.thresholds):
        lit = sql_number(t)
        parts.append(f"SUM(CASE WHEN grade >= {lit} THEN 1 ELSE 0 END) AS nrel_{i}")
        parts.append(f"SUM(CASE WHEN grade >= 0 AND grade < {lit} THEN 1 ELSE 0 END) AS nnon_{i}")
    return f"SELECT {', '.join(parts)} FROM judged GROUP BY query_id"


def _numbering_reads(judgments: str, plan: JudgedPlan) -> list[str]:
    """The CTEs that :func:`abrank.engines.sql.numbering.numbered_sql` reads: ``judged``
    (the judgments in canonical cells) and ``query_stats`` (per query counts)."""
    return [
        f"judged AS ({judgments_sql(judgments)})",
        f"query_stats AS ({_query_stats_sql(plan)})",
    ]


def ideal_dcg_sql(kind: str, cutoffs: Sequence[int | None], prefix: str) -> str:
    """Per query of the relation ``judged``: the DCG of the ideal ordering of all its
    judgments at each cutoff (column ``<prefix><k>``, ``<prefix>all`` uncut)."""
    gains = (
        f"SELECT query_id, gain FROM (SELECT query_id, {sql_gain(kind)} AS gain FROM judged) "
        "AS gains WHERE gain > 0"
    )
    ordered = (
        "SELECT query_id, gain, ROW_NUMBER() OVER (PARTITION BY query_id ORDER BY gain DESC) "
        f"- 1 AS ipos FROM ({gains}) AS positive"
    )
    parts = ["query_id"]
    for k in cutoffs:
        parts.append(
            f"SUM(CASE WHEN {within(k, 'ipos')} THEN gain / LOG(2, ipos + 2) ELSE 0 END) "
            f"AS {prefix}{_cut(k)}"
        )
    return f"SELECT {', '.join(parts)} FROM ({ordered}) AS ideal GROUP BY query_id"


def _aggregates(plan: JudgedPlan) -> tuple[list[str], dict[str, str]]:
    """The per-query aggregates over the judged numbered rows down to the depth
    (``judged_rows``: both views, with ``log_pos`` and ``log_cpos`` the discounts'
    logarithms), and each metric's value from them (by output column). Every aggregate
    reads judged rows only (a grade, or a pool's negative grade); what counts every row
    comes from ``run_rows``."""
    aggs: dict[str, str] = {}
    values: dict[str, str] = {}

    def agg(name: str, sql: str) -> str:
        aggs.setdefault(name, sql)
        return f"COALESCE(r.{name}, 0)"

    def first(i: int, t: float, pos: str) -> str:
        name = f"first_{i}_{pos}"
        aggs.setdefault(name, f"MIN(CASE WHEN grade >= {sql_number(t)} THEN {pos} END)")
        return f"r.{name}"

    for n, m in enumerate(plan.metrics):
        pos = "cpos" if m.judged_only else "pos"
        view = "c" if m.judged_only else "p"
        k, cut = m.k, _cut(m.k)
        family = m.family
        out = f"m{n}"
        if family == "judged":
            hits = agg(
                f"judged_{cut}",
                f"SUM(CASE WHEN {within(k, 'pos')} THEN 1 ELSE 0 END)",
            )
            if k is None:
                values[out] = (
                    f"CASE WHEN COALESCE(rr.retrieved, 0) > 0 THEN CAST({hits} AS DOUBLE) / "
                    f"rr.retrieved ELSE {ZERO} END"
                )
            else:
                values[out] = f"CAST({hits} AS DOUBLE) / {int(k)}"
            continue
        if family == "rbp_residual":  # 1 minus the rbp weights of the judged rows
            weight = _rbp_weight(cast(float, m.p), "pos")
            judged = agg(
                f"rbp_judged_{cut}_{n}",
                f"SUM(CASE WHEN {within(k, 'pos')} THEN {weight} ELSE 0 END)",
            )
            values[out] = f"{ONE} - CAST({judged} AS DOUBLE)"
            continue
        if family in ("ndcg", "dcg"):
            kind = plan.kind(m)
            g = plan.g(kind)
            dcg = agg(
                f"dcg_{g}_{cut}_{view}",
                f"SUM(CASE WHEN grade > 0 AND {within(k, pos)} THEN ({sql_gain(kind)}) / "
                f"log_{pos} ELSE 0 END)",
            )
            defined = f"COALESCE(i{g}.idcg_{g}_all, 0) > 0"
            if family == "dcg":
                values[out] = f"CASE WHEN {defined} THEN CAST({dcg} AS DOUBLE) END"
            else:
                values[out] = (
                    f"CASE WHEN {defined} THEN CAST({dcg} AS DOUBLE) / i{g}.idcg_{g}_{cut} END"
                )
            continue
        if FAMILIES[family].diversity:
            # the sums of diversity_sql; alpha_ndcg's α-DCG is divided by the greedy ideal
            # after the statement (score_arm_sql), err_ia's sum here by S times its ideal
            summed = f"CAST(COALESCE(dv.div_{n}, 0) AS DOUBLE)"
            if family == "err_ia":
                best = sql_number(err_ia_norm(int(cast(int, k)), m.redundancy))
                summed = f"{summed} / (ns.nsub * {best})"
            values[out] = f"CASE WHEN COALESCE(ns.nsub, 0) > 0 THEN {summed} END"
            continue
        if family == "err":
            err = agg(
                f"err_{cut}_{view}",
                f"SUM(CASE WHEN grade > 0 AND {within(k, pos)} THEN {err_stop()} * "
                f"EXP(err_reach) / ({pos} + 1) ELSE 0 END)",
            )
            values[out] = f"CASE WHEN COALESCE(s.ngain, 0) > 0 THEN CAST({err} AS DOUBLE) END"
            continue
        t = plan.threshold(m)
        i, lit = plan.t(t), sql_number(t)
        nrel = f"COALESCE(s.nrel_{i}, 0)"
        relevant = f"grade >= {lit}"
        if family == "mrr":
            at = first(i, t, pos)
            hit = f"{at} IS NOT NULL" if k is None else f"{at} < {int(k)}"
            value = f"CASE WHEN {hit} THEN {ONE} / ({at} + 1) ELSE {ZERO} END"
        elif family in ("recall", "precision", "hit"):
            count = agg(
                f"rel_{i}_{cut}_{view}",
                f"SUM(CASE WHEN {relevant} AND {within(k, pos)} THEN 1 ELSE 0 END)",
            )
            if family == "recall":
                value = f"CAST({count} AS DOUBLE) / {nrel}"
            elif family == "precision":  # precision@k: a cutoff is required
                value = f"CAST({count} AS DOUBLE) / {int(cast(int, k))}"
            else:
                value = f"CASE WHEN {count} > 0 THEN {ONE} ELSE {ZERO} END"
        elif family in ("map", "ap", "gm_map"):  # gm_map: AP per query, summarised geometrically
            sums = agg(
                f"ap_{i}_{cut}_{view}",
                f"SUM(CASE WHEN {relevant} AND {within(k, pos)} THEN "
                f"CAST(rc_{i} AS DOUBLE) / ({pos} + 1) ELSE 0 END)",
            )
            value = f"{sums} / {nrel}"
        elif family == "bpref":
            big_r, big_n = f"big_r_{i}", f"big_n_{i}"
            share = f"CAST(LEAST(na_{i}, {big_r}) AS DOUBLE) / GREATEST(LEAST({big_n}, {big_r}), 1)"
            sums = agg(
                f"bpref_{i}",
                f"SUM(CASE WHEN {relevant} THEN (CASE WHEN na_{i} > 0 THEN {ONE} - {share} "
                f"ELSE {ONE} END) ELSE 0 END)",
            )
            value = f"{sums} / {nrel}"
        elif family == "infap":
            sums = agg(
                f"infap_{i}_{view}",
                f"SUM(CASE WHEN {relevant} THEN {_infap_term(i, pos)} ELSE 0 END)",
            )
            value = f"{sums} / {nrel}"
        elif family == "rbp":
            weight = _rbp_weight(cast(float, m.p), pos)
            sums = agg(
                f"rbp_{i}_{cut}_{view}_{n}",
                f"SUM(CASE WHEN {relevant} AND {within(k, pos)} THEN {weight} ELSE 0 END)",
            )
            value = f"CAST({sums} AS DOUBLE)"
        elif family == "rprec":
            count = agg(
                f"rprec_{i}_{view}",
                f"SUM(CASE WHEN {relevant} AND {pos} < big_r_{i} THEN 1 ELSE 0 END)",
            )
            value = f"CAST({count} AS DOUBLE) / {nrel}"
        else:  # families of UNSUPPORTED_FAMILIES are refused before (score_arm_sql)
            raise NotImplementedError(f"judged metrics: family {family!r} has no SQL definition")
        values[out] = f"CASE WHEN {nrel} > 0 THEN {value} END"
    aggs.setdefault(
        f"judged_{plan.judged_k}",
        f"SUM(CASE WHEN pos < {plan.judged_k} THEN 1 ELSE 0 END)",
    )
    first(plan.t(plan.rel_level), plan.rel_level, "pos")
    return [f"{sql} AS {name}" for name, sql in aggs.items()], values


def judged_sql(
    rankings: str,
    judgments: str,
    metrics: Sequence[Metric],
    *,
    ranked_by: str = "score",
    rel_level: float = 1.0,
    gain: str = "linear",
    depth: int | None = 1000,
    judged_k: int = 10,
    subtopics: str | None = None,
    numbered_from: str | None = None,
    in_order: bool = False,
    every_row: bool = True,
) -> str:
    """The one statement (neutral dialect) of every metric's value per query.

    ``rankings`` and ``judgments`` are relations (names or parenthesised queries) with
    the canonical columns. The result has one row per query that is judged (with columns
    ``query_id``, ``in_run`` 1/0, ``m0``, ``m1``... in the order of ``metrics``, NULL where
    undefined, ``judged_share`` judged@``judged_k`` and ``first_relevant`` the 1-based rank
    of the first document with a grade >= ``rel_level``, NULL for none). A diversity
    metric reads the relation ``subtopics`` (``query_id``, ``doc_id``, ``relevance``,
    ``subtopic``) when the judgments have subtopics, else ``judgments`` as one subtopic a
    query; alpha_ndcg's column is its α-DCG, which :func:`score_arm_sql` divides by the
    ideal. ``numbered_from``: a relation of the numbered rows kept by
    :func:`numbered_rows_sql` (for the same rankings, judgments and metrics), read in
    place of numbering them again; ``every_row=False``: that relation holds the judged
    rows only (:func:`numbered_rows_sql`), and each query's ranked rows are counted on
    ``rankings``. ``in_order``: the ranks are 1..n in each query
    (:func:`abrank.engines.sql.numbering.ranks_in_order`), which number the rows without
    a window over all of them.
    """
    plan = JudgedPlan(tuple(metrics), float(rel_level), gain, int(judged_k))
    aggs, values = _aggregates(plan)
    deep = "" if depth is None else f" AND pos < {int(depth)}"
    if numbered_from is None:
        numbered = numbered_sql(rankings, ranked_by, plan, in_order=in_order)
    else:
        numbered = f"SELECT * FROM {numbered_from}"
    ctes = [
        *_numbering_reads(judgments, plan),
        f"numbered AS ({numbered})",
        # the aggregates read the judged rows only (a fifth of a deep run, often): every
        # other row adds 0 to each of them
        "judged_rows AS (SELECT *, LOG(2, pos + 2) AS log_pos, LOG(2, cpos + 2) AS log_cpos "
        f"FROM numbered WHERE grade IS NOT NULL{deep})",
        f"per_run AS (SELECT {', '.join(['query_id', *aggs])} FROM judged_rows GROUP BY query_id)",
        _run_rows(
            "numbered" if numbered_from is None or every_row else f"{rankings} AS given", depth
        ),
    ]
    joins = [
        "FROM query_stats AS s",
        "LEFT JOIN run_rows AS rr ON s.query_id = rr.query_id",
        "LEFT JOIN per_run AS r ON s.query_id = r.query_id",
    ]
    if plan.diversity:
        ctes += diversity_ctes(plan, judgments, subtopics, depth)
        joins += [
            "LEFT JOIN nsub AS ns ON s.query_id = ns.query_id",
            "LEFT JOIN div AS dv ON s.query_id = dv.query_id",
        ]
    for kind in plan.kinds:
        g = plan.g(kind)
        ctes.append(f"ideal_{g} AS ({ideal_dcg_sql(kind, plan.ideal_cutoffs(kind), f'idcg_{g}_')})")
        joins.append(f"LEFT JOIN ideal_{g} AS i{g} ON s.query_id = i{g}.query_id")
    i = plan.t(plan.rel_level)
    columns = [
        "s.query_id AS query_id",
        "CASE WHEN rr.query_id IS NULL THEN 0 ELSE 1 END AS in_run",
        *[f"{sql} AS {name}" for name, sql in values.items()],
        f"CAST(COALESCE(r.judged_{plan.judged_k}, 0) AS DOUBLE) / {plan.judged_k} AS judged_share",
        f"r.first_{i}_pos + 1 AS first_relevant",
    ]
    return f"WITH {', '.join(ctes)} SELECT {', '.join(columns)} {' '.join(joins)}"


def _run_rows(rows: str, depth: int | None) -> str:
    """``run_rows``: each ranked query's rows down to ``depth`` (``retrieved``), counted on
    ``rows`` (the numbered rows, or the rankings where those hold the judged rows only):
    the numbering puts a query's n rows at positions 0..n-1, so the count is n, at most
    ``depth``."""
    counted = "COUNT(*)" if depth is None else f"LEAST(COUNT(*), {int(depth)})"
    return (
        "run_rows AS (SELECT query_id, retrieved FROM (SELECT CAST(query_id AS VARCHAR) AS "
        f"query_id, {counted} AS retrieved FROM {rows} GROUP BY query_id) AS counted)"
    )


def numbered_rows_sql(
    rankings: str,
    judgments: str,
    metrics: Sequence[Metric],
    *,
    ranked_by: str = "score",
    rel_level: float = 1.0,
    gain: str = "linear",
    judged_k: int = 10,
    in_order: bool = False,
    every_row: bool = True,
) -> str:
    """The ranked rows of ``rankings`` joined to their judgments and numbered in trec_eval's
    order, as :func:`judged_sql` numbers them for ``metrics`` (with ``doc_id``, and
    ``rank_again`` 1 on a row whose rank is its predecessor's, for a rank column): one
    statement whose result an engine can keep, so that the scoring
    (``judged_sql(..., numbered_from=)``) and the explanation tables' top rows
    (:func:`top_rows_sql`) read it instead of each numbering the rows again. ``in_order``:
    the ranks are 1..n in each query (:func:`abrank.engines.sql.numbering.ranks_in_order`),
    which number the rows without a window over all of them. ``every_row=False`` keeps
    the judged rows only (and a rank found again), which is all the scoring reads of them
    (``judged_sql(..., every_row=False)`` counts each query's rows on ``rankings``)."""
    plan = JudgedPlan(tuple(metrics), float(rel_level), gain, int(judged_k))
    numbered = numbered_sql(rankings, ranked_by, plan, with_doc=True, in_order=in_order)
    if not every_row:  # a rank column's rows carry rank_again (numbered_sql's with_doc)
        again = " OR rank_again = 1" if ranked_by == "rank" else ""
        numbered = f"SELECT * FROM ({numbered}) AS every_row WHERE grade IS NOT NULL{again}"
    return f"WITH {', '.join(_numbering_reads(judgments, plan))} {numbered}"


def top_rows_sql(numbered: str, judgments: str, depth: int, *, ordered: bool = True) -> str:
    """Each judged query's top ``depth`` rows of the kept numbered rows ``numbered``
    (:func:`numbered_rows_sql`): ``query_id``, ``doc_id``, ``rank`` (1-based, trec_eval's
    order) and ``grade`` (NULL: unjudged); ``ordered``: each query's rows together in
    rank order, queries in id order (else in the engine's order)."""
    return (
        f"SELECT query_id, doc_id, pos + 1 AS rank, grade FROM {numbered} "
        f"WHERE pos < {int(depth)} AND query_id IN (SELECT DISTINCT CAST(query_id AS VARCHAR) "
        f"FROM {judgments} AS given_judgments)" + (" ORDER BY query_id, rank" if ordered else "")
    )


def topics_sql(judgments: str, subtopics: str | None) -> str:
    """The relevant (grade > 0) subtopic judgments: ``query_id``, ``doc_id``, ``subtopic``
    (one empty label a query for judgments without subtopics)."""
    source = subtopics if subtopics is not None else judgments
    label = f"CAST({SUBTOPIC} AS VARCHAR)" if subtopics is not None else "CAST('' AS VARCHAR)"
    return (
        "SELECT CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id, "
        f"{label} AS {SUBTOPIC} FROM {source} AS given_topics WHERE CAST(relevance AS DOUBLE) > 0"
    )


def diversity_ctes(
    plan: JudgedPlan, judgments: str, subtopics: str | None, depth: int | None
) -> list[str]:
    """The diversity metrics' relations (:mod:`abrank.engines.diversity`): ``nsub`` (S, the
    subtopics with a relevant judgment, per query) and ``div``, per query and metric n the
    sum ``div_n`` over the top k of each (row, subtopic) entry's (1 - α)^seen divided by
    log2(rank + 1) (alpha_ndcg) or by the rank (err_ia), ``seen`` counting the entries of
    its subtopic above it (one window over the entries of the top rows)."""
    deepest = max(int(cast(int, m.k)) for _, m in plan.diversity)
    kept = "" if depth is None else f" AND n.pos < {int(depth)}"
    entries = (
        "SELECT n.query_id AS query_id, n.pos AS pos, n.cpos AS cpos, ROW_NUMBER() OVER "
        f"(PARTITION BY n.query_id, t.{SUBTOPIC} ORDER BY n.pos) - 1 AS seen FROM numbered AS n "
        f"JOIN topics AS t ON n.query_id = t.query_id AND n.doc_id = t.doc_id "
        f"WHERE n.cpos < {deepest}{kept}"
    )
    sums = []
    for n, m in plan.diversity:
        pos = "cpos" if m.judged_only else "pos"
        discount = f"LOG(2, {pos} + 2)" if m.family == "alpha_ndcg" else f"({pos} + 1)"
        decay = sql_number(1.0 - m.redundancy)
        sums.append(
            f"SUM(CASE WHEN {pos} < {int(cast(int, m.k))} THEN POWER({decay}, seen) / "
            f"{discount} ELSE 0 END) AS div_{n}"
        )
    return [
        f"topics AS ({topics_sql(judgments, subtopics)})",
        f"nsub AS (SELECT query_id, COUNT(DISTINCT {SUBTOPIC}) AS nsub FROM topics "
        "GROUP BY query_id)",
        f"div_entries AS ({entries})",
        f"div AS (SELECT query_id, {', '.join(sums)} FROM div_entries GROUP BY query_id)",
    ]


def _divide_by_ideal(
    backend: Backend,
    scores: ArmScores,
    metrics: Sequence[Metric],
    judgments: str,
    subtopics: str | None,
) -> ArmScores:
    """alpha_ndcg's α-DCG over the α-DCG of ndeval's greedy ideal ordering, computed from
    the relevant judgments as the memory engine computes it
    (:func:`abrank.engines.diversity.greedy_ideal_dcg`)."""
    wanted = [m for m in metrics if m.family == "alpha_ndcg"]
    if not wanted:
        return scores
    topics = backend.run(compile_sql(topics_sql(judgments, subtopics), backend.dialect))
    labels = topics.column(SUBTOPIC) if subtopics is not None else None
    ids, ideal = greedy_ideal_dcg(
        topics.column("query_id"),
        topics.column("doc_id"),
        labels,
        list(dict.fromkeys((int(cast(int, m.k)), m.redundancy) for m in wanted)),
    )
    index = pd.Index(ids.to_pandas().astype("str"))
    values = scores.values.copy()
    for m in wanted:
        found = pd.Series(ideal[(int(cast(int, m.k)), m.redundancy)], index=index)
        best = found.reindex(values.index).fillna(0.0).to_numpy()
        dcg = values[m.name].to_numpy(dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            values[m.name] = np.where(np.isnan(dcg), np.nan, np.where(best > 0, dcg / best, 0.0))
    return dataclasses.replace(scores, values=values)


def score_arm_sql(
    backend: Backend,
    rankings: str,
    judgments: str,
    metrics: Sequence[str | Metric],
    *,
    ranked_by: str = "score",
    rel_level: float = 1,
    gain: str = "linear",
    depth: int | None = 1000,
    complete: bool = False,
    judged_k: int = 10,
    judged_only: bool = False,
    subtopics: str | None = None,
    keep: str | None = None,
    every_row: bool = True,
) -> ArmScores:
    """The memory engine's ``score_arm`` on relations of an SQL engine.

    ``rankings`` (``query_id``, ``doc_id``, and ``score`` or ``rank`` as ``ranked_by``
    says) and ``judgments`` (``query_id``, ``doc_id``, ``relevance``) are relations the
    backend knows, already checked (one row per pair, numbers present). Returns the
    same :class:`~abrank.engines.evaluate.ArmScores`: values indexed by query id in byte
    order (the judged queries held by the rankings, with ``complete`` every judged
    query), NaN where undefined; judged@``judged_k`` averaged and the first relevant rank
    over the ranked and judged queries. ``subtopics``: the relation of subtopic judgments
    (:attr:`abrank.engines.sql.rankings.Opened.subtopics`), which the diversity metrics read.
    ``keep``: a relation name; the numbered rows are then kept there
    (:func:`numbered_rows_sql`) for later statements (:func:`top_rows_sql`), and the
    scoring reads them from it; ``every_row=False`` keeps the judged rows only, where
    nothing later reads the others.
    """
    from abrank.engines import check_metrics

    parsed = judged_metrics(metrics)
    check_metrics(backend.dialect, parsed)
    if judged_only:
        parsed = as_judged_only(parsed)
    check_options(rel_level, gain, depth)
    if ranked_by not in RANKED_BY:
        raise ValueError(f"ranked_by: expected one of {', '.join(RANKED_BY)}, got {ranked_by!r}")
    # ranks 1..n in each query are the positions: no window over every row
    in_order = (
        ranked_by == "rank"
        and getattr(backend, "numbers_from_ranks", False)
        and ranks_in_order(backend, rankings)
    )
    if keep is not None:
        numbered = numbered_rows_sql(
            rankings,
            judgments,
            parsed,
            ranked_by=ranked_by,
            rel_level=float(rel_level),
            gain=gain,
            judged_k=int(judged_k),
            in_order=in_order,
            every_row=every_row,
        )
        backend.materialize(keep, compile_sql(numbered, backend.dialect))
    sql = judged_sql(
        rankings,
        judgments,
        parsed,
        ranked_by=ranked_by,
        rel_level=float(rel_level),
        gain=gain,
        depth=depth,
        judged_k=int(judged_k),
        subtopics=subtopics,
        numbered_from=keep,
        in_order=in_order,
        every_row=every_row,
    )
    table = backend.run(compile_sql(sql, backend.dialect))
    scores = arm_scores(table, parsed, complete)
    return _divide_by_ideal(backend, scores, parsed, judgments, subtopics)


def arm_scores(table: pa.Table, metrics: Sequence[Metric], complete: bool) -> ArmScores:
    """:class:`ArmScores` from the rows of :func:`judged_sql` (queries in byte order)."""
    ids = table.column("query_id").cast(pa.large_string())
    table = table.take(pc.sort_indices(ids))
    ids = table.column("query_id").cast(pa.large_string()).to_pandas().astype("str")
    in_run = table.column("in_run").to_numpy().astype(bool)
    scored = in_run | bool(complete)

    def column(name: str) -> np.ndarray:
        values = table.column(name).cast(pa.float64()).to_numpy(zero_copy_only=False)
        return np.asarray(values, dtype=np.float64)

    frame = pd.DataFrame(
        {m.name: column(f"m{i}")[scored] for i, m in enumerate(metrics)},
        index=pd.Index(ids[scored].to_numpy(), name="query_id", dtype="str"),
    )
    share = column("judged_share")[in_run]
    first = pd.Series(
        column("first_relevant")[in_run],
        index=pd.Index(ids[in_run].to_numpy(), name="query_id", dtype="str"),
        name="first_relevant_rank",
        dtype=np.float64,
    )
    return ArmScores(
        values=frame,
        judged_at_k=float(share.mean()) if share.size else math.nan,
        first_relevant=first,
    )
