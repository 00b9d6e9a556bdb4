"""The ranked rows of an SQL engine joined to their judgments and numbered (:mod:`.judged`).

Every row gets its 0-based position ``pos`` in trec_eval's order (score descending, or
rank ascending, ties by doc id descending in byte order) and, where the aggregates read
them, on each judged row: ``cpos``, its position among the judged rows (the condensed
view), the running counts of average precision and bpref, ERR's chance of reaching it
and infAP's pooled rows above it.

One window over every row of a query numbers them. But a relation ranked by a ``rank``
column whose queries each hold the ranks 1..n once (:func:`ranks_in_order`: two
aggregates, a fraction of a window's cost) already holds the positions: ``pos`` is
``rank - 1``, and the window runs over the judged rows only, which are often a fifth of a
deep run or less (:func:`numbered_sql` with ``in_order``). An engine says whether it takes
that way (``numbers_from_ranks`` of its backend): DuckDB does; on Spark the window over
every row leaves them partitioned by query, which the statements after it read without
another shuffle, so it keeps the window.
"""

from __future__ import annotations

import math

from abrank.engines.sql import Backend, compile_sql
from abrank.engines.sql.judged_plan import JudgedPlan, err_stop, ranking_order, sql_number

__all__ = [
    "MOST_RANK_WORDS",
    "RANKS_PER_WORD",
    "numbered_sql",
    "ranks_in_order",
    "ranks_in_order_sql",
]

#: Ranks held per 64-bit word of the check of :func:`ranks_in_order_sql` (bit 63 is the
#: sign, bit 62 left free so that a full word is 2^62 - 1).
RANKS_PER_WORD = 62

#: Words the check takes at most: rankings deeper than 62 x 17 = 1,054 ranks are numbered
#: by the window.
MOST_RANK_WORDS = 17


def numbered_sql(
    rankings: str,
    ranked_by: str,
    plan: JudgedPlan,
    with_doc: bool = False,
    in_order: bool = False,
) -> str:
    """Every ranked row of ``rankings`` joined to its judgment (``grade`` NULL: unjudged)
    and numbered (module text), reading the relations ``judged`` and (for bpref's and
    R-precision's R and N on each row: :attr:`JudgedPlan.per_row_counts`) ``query_stats``. ``with_doc`` keeps
    ``doc_id`` and adds ``rank_again`` (1 on a row whose rank is its predecessor's, for a
    rank column); ``in_order``: ``rankings`` holds the ranks 1..n of each query once
    (:func:`ranks_in_order`), whose rows then carry the running columns on judged rows
    only (NULL on the others, which no aggregate reads)."""
    if in_order and ranked_by == "rank":
        return _numbered_from_ranks(rankings, plan, with_doc)
    return _numbered_in_one_window(rankings, ranked_by, plan, with_doc)


def _numbered_from_ranks(rankings: str, plan: JudgedPlan, with_doc: bool) -> str:
    """:func:`numbered_sql` of a relation whose ranks are 1..n in each query: ``pos`` is
    the rank less one, and one window over the judged rows numbers them among themselves."""
    rows = (
        "SELECT CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id, "
        f"CAST(CAST(rank AS DOUBLE) AS BIGINT) - 1 AS pos FROM {rankings} AS given"
    )
    stats, joins = _judgments_joined(plan)
    carried = ["r.query_id AS query_id", "r.doc_id AS doc_id", "j.grade AS grade", "r.pos AS pos"]
    carried += [f"{sql} AS {name}" for name, sql in stats.items()]
    joined = f"SELECT {', '.join(carried)} FROM ({rows}) AS r {joins}"
    window = (
        "OVER (PARTITION BY n.query_id ORDER BY n.pos "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )
    common = [
        "n.query_id AS query_id",
        *(["n.doc_id AS doc_id"] if plan.diversity or with_doc else []),
        "n.grade AS grade",
        "n.pos AS pos",
    ]
    # (judged rows' column, unjudged rows' column) in one order for both sides
    running = [(f"ROW_NUMBER() {window} - 1 AS cpos", "CAST(NULL AS BIGINT) AS cpos")]
    if with_doc:
        running.append(("0 AS rank_again", "0 AS rank_again"))
    # over the judged rows only: an unjudged row adds nothing to any of them (ERR's stop 0)
    running += [
        (f"{sql} AS {name}", f"CAST(NULL AS {kind}) AS {name}")
        for name, sql, kind in _running_columns(plan, "n.grade", window)
    ]
    counts = [f"n.{name} AS {name}" for name in stats]
    judged = [*common, *(on for on, _ in running), *counts]
    unjudged = [*common, *(off for _, off in running), *counts]
    # the join named once: DuckDB then makes it once for both sides
    return (
        f"SELECT * FROM (WITH ranked_joined AS ({joined}) "
        f"SELECT {', '.join(judged)} FROM ranked_joined AS n WHERE n.grade IS NOT NULL UNION ALL "
        f"SELECT {', '.join(unjudged)} FROM ranked_joined AS n WHERE n.grade IS NULL) AS numbered_rows"
    )


def ranks_in_order_sql(rankings: str, words: int) -> str:
    """How many queries of ``rankings`` do not hold the ranks 1..n once each (n the query's
    rows; ranks up to ``words`` x 62): each query's ranks set one bit each in ``words``
    64-bit words, and n rows that set every bit of 1..n hold each rank once."""
    key = "CAST(rank AS DOUBLE)"
    bits, full = [], []
    for w in range(words):
        low, high = RANKS_PER_WORD * w, RANKS_PER_WORD * (w + 1)
        bits.append(
            f"BIT_OR(CASE WHEN {key} > {low} AND {key} <= {high} THEN CAST(1 AS BIGINT) << "
            f"CAST({key} - {low + 1} AS INT) ELSE CAST(0 AS BIGINT) END) AS w{w}"
        )
        full.append(
            f"w{w} = CASE WHEN n >= {high} THEN (CAST(1 AS BIGINT) << {RANKS_PER_WORD}) - 1 "
            f"WHEN n > {low} THEN (CAST(1 AS BIGINT) << CAST(n - {low} AS INT)) - 1 ELSE 0 END"
        )
    per_query = (
        f"SELECT query_id, COUNT(*) AS n, MAX({key}) AS top, "
        f"SUM(CASE WHEN {key} <> FLOOR({key}) THEN 1 ELSE 0 END) AS fractional, "
        f"{', '.join(bits)} FROM {rankings} AS given GROUP BY query_id"
    )
    return (
        f"SELECT COUNT(*) AS n FROM ({per_query}) AS q "
        f"WHERE NOT (top = n AND fractional = 0 AND {' AND '.join(full)})"
    )


def ranks_in_order(backend: Backend, rankings: str) -> bool:
    """Whether every query of ``rankings`` (ranked by ``rank``) holds the ranks 1..n once
    each (n its rows): :func:`numbered_sql`'s ``in_order``. False for rankings deeper than
    :data:`MOST_RANK_WORDS` words of ranks, or without rows."""
    top_sql = f"SELECT MAX(CAST(rank AS DOUBLE)) AS top FROM {rankings} AS given"
    top = backend.run(compile_sql(top_sql, backend.dialect)).to_pylist()[0]["top"]
    if top is None or not math.isfinite(top) or top < 1:
        return False
    words = math.ceil(top / RANKS_PER_WORD)
    if words > MOST_RANK_WORDS:
        return False
    check = compile_sql(ranks_in_order_sql(rankings, words), backend.dialect)
    return int(backend.run(check).to_pylist()[0]["n"]) == 0


def _numbered_in_one_window(rankings: str, ranked_by: str, plan: JudgedPlan, with_doc: bool) -> str:
    """Every ranked row joined to its judgment (``grade`` NULL: unjudged), numbered in
    trec_eval's order in one window pass: its 0-based position ``pos``, its position among
    the judged rows ``cpos`` (the condensed view) and, per threshold of average precision
    and bpref, the relevant rows up to it (``rc_i``) and the judged nonrelevant rows above
    it (``na_i``). Running counts read only the rows above, so the depth cut can come
    after, in the aggregates."""
    value, key = ranking_order(ranked_by)
    rows = (
        "SELECT CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id, "
        f"{value} FROM {rankings} AS given"
    )
    window = (
        f"OVER (PARTITION BY r.query_id ORDER BY {key}, r.doc_id DESC "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )
    parts = [
        "r.query_id AS query_id",
        *(["r.doc_id AS doc_id"] if plan.diversity or with_doc else []),
        "j.grade AS grade",
        f"ROW_NUMBER() {window} - 1 AS pos",
        f"SUM(CASE WHEN j.grade IS NULL THEN 0 ELSE 1 END) {window} - 1 AS cpos",
    ]
    if with_doc and ranked_by == "rank":  # the row after its equal: a rank given again
        before = window.replace(
            "UNBOUNDED PRECEDING AND CURRENT ROW", "1 PRECEDING AND 1 PRECEDING"
        )
        parts.append(
            f"CASE WHEN r.order_key = MAX(r.order_key) {before} THEN 1 ELSE 0 END AS rank_again"
        )
    parts += [f"{sql} AS {name}" for name, sql, _ in _running_columns(plan, "j.grade", window)]
    stats, joins = _judgments_joined(plan)
    parts += [f"{sql} AS {name}" for name, sql in stats.items()]
    return f"SELECT {', '.join(parts)} FROM ({rows}) AS r {joins}"


def _running_columns(plan: JudgedPlan, grade: str, window: str) -> list[tuple[str, str, str]]:
    """The running columns the aggregates read on a judged row, as (name, expression over
    ``window``, SQL type), grades in the column ``grade``: ERR's log chance of reaching it
    (``err_reach``), infAP's pooled-but-unjudged rows above it (``pa``) and, per threshold
    of average precision and bpref, the relevant rows up to it (``rc_i``) and the judged
    nonrelevant rows above it (``na_i``)."""
    columns = []
    if plan.err:  # log of prod (1 - stop) over the rows above: ERR's chance of reaching it
        above = window.replace("AND CURRENT ROW", "AND 1 PRECEDING")
        reach = f"COALESCE(SUM(LN(1 - {err_stop(grade)})) {above}, 0)"
        columns.append(("err_reach", reach, "DOUBLE"))
    if plan.pooled:  # infAP: the rows above in the pool but not judged (a negative grade)
        pooled = f"CASE WHEN {grade} < 0 THEN 1 ELSE 0 END"
        columns.append(("pa", f"SUM({pooled}) {window} - ({pooled})", "BIGINT"))
    for t in plan.running:
        i, lit = plan.t(t), sql_number(t)
        relevant = f"CASE WHEN {grade} >= {lit} THEN 1 ELSE 0 END"
        nonrelevant = f"CASE WHEN {grade} >= 0 AND {grade} < {lit} THEN 1 ELSE 0 END"
        columns.append((f"rc_{i}", f"SUM({relevant}) {window}", "BIGINT"))
        columns.append((f"na_{i}", f"SUM({nonrelevant}) {window} - ({nonrelevant})", "BIGINT"))
    return columns


def _judgments_joined(plan: JudgedPlan) -> tuple[dict[str, str], str]:
    """The joins of the ranked rows ``r`` to their judgment ``j`` and (where bpref reads R
    and N of the query on each row, R-precision R) to their query's counts ``s``, and
    those counts' columns (name: expression)."""
    joins = "LEFT JOIN judged AS j ON r.query_id = j.query_id AND r.doc_id = j.doc_id"
    stats = {}
    if plan.per_row_counts:
        for t in plan.running:
            i = plan.t(t)
            stats[f"big_r_{i}"], stats[f"big_n_{i}"] = f"s.nrel_{i}", f"s.nnon_{i}"
        joins += " LEFT JOIN query_stats AS s ON r.query_id = s.query_id"
    return stats, joins
