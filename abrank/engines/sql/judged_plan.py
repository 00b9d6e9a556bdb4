"""What one judged statement of the SQL engines computes, named once (:mod:`.judged`).

The plan of a statement (its thresholds, gains, cutoffs and the running columns its
metrics need), the literals and expressions of the neutral dialect it is written in, and
trec_eval's order of a rankings relation: shared by the numbering of the ranked rows
(:mod:`.numbering`) and the per-query aggregates over them (:mod:`.judged`).
"""

from __future__ import annotations

import dataclasses

from abrank.metrics.names import Metric
from abrank.metrics.registry import FAMILIES

#: 1 and 0 as doubles: a bare ``1.0`` is a DECIMAL in Spark SQL, whose division rounds to
#: a dozen digits.
ONE, ZERO = "CAST(1 AS DOUBLE)", "CAST(0 AS DOUBLE)"

#: What orders a rankings relation: its ``score`` (descending) or its ``rank`` (ascending).
RANKED_BY = ("score", "rank")


def sql_number(value: float) -> str:
    """A float literal of the neutral dialect (exact: repr round-trips)."""
    return f"CAST({float(value)!r} AS DOUBLE)"


def sql_gain(kind: str, grade: str = "grade") -> str:
    """Gain of a grade: linear (the grade) or exp (2^grade - 1); grades <= 0 give none."""
    if kind == "exp":
        return f"CASE WHEN {grade} > 0 THEN POWER(2, {grade}) - 1 ELSE 0 END"
    return f"CASE WHEN {grade} > 0 THEN {grade} ELSE 0 END"


def err_stop(grade: str = "grade") -> str:
    """ERR's stopping probability of a grade: (2^g - 1) / 16, g clipped to [0, 4]
    (:func:`abrank.engines.memory.err_stop`); 0 for an unjudged row."""
    clipped = f"LEAST(GREATEST(COALESCE({grade}, 0), 0), 4)"
    return f"(POWER(2, {clipped}) - 1) / 16"


def within(k: int | None, pos: str) -> str:
    """The condition that a 0-based position ``pos`` lies within a cutoff ``k`` (None: all)."""
    return "TRUE" if k is None else f"{pos} < {int(k)}"


@dataclasses.dataclass(frozen=True)
class JudgedPlan:
    """The columns one statement computes, named once: thresholds, gains, cutoffs."""

    metrics: tuple[Metric, ...]
    rel_level: float
    gain: str
    judged_k: int

    def threshold(self, metric: Metric) -> float:
        return float(metric.rel if metric.rel is not None else self.rel_level)

    def kind(self, metric: Metric) -> str:
        return metric.gain or self.gain

    @property
    def thresholds(self) -> list[float]:
        found = {self.rel_level}
        found |= {self.threshold(m) for m in self.metrics if FAMILIES[m.family].binary}
        return sorted(found)

    @property
    def running(self) -> list[float]:
        """Thresholds that need running counts or R on each row (average precision,
        bpref, R-precision, infAP)."""
        return sorted(
            {
                self.threshold(m)
                for m in self.metrics
                if m.family in ("map", "ap", "gm_map", "bpref", "rprec", "infap")
            }
        )

    @property
    def per_row_counts(self) -> bool:
        """Whether a metric is bpref or R-precision (the rows then carry R, and N, of their
        query)."""
        return any(m.family in ("bpref", "rprec") for m in self.metrics)

    @property
    def pooled(self) -> bool:
        """Whether a metric is infAP (the rows then carry the pooled-but-unjudged rows above
        them: judgments of negative grade)."""
        return any(m.family == "infap" for m in self.metrics)

    @property
    def err(self) -> bool:
        """Whether a metric is ERR (the rows then carry the chance of reaching them)."""
        return any(m.family == "err" for m in self.metrics)

    @property
    def diversity(self) -> list[tuple[int, Metric]]:
        """The diversity metrics (alpha_ndcg, err_ia), with their place among the metrics."""
        return [(n, m) for n, m in enumerate(self.metrics) if FAMILIES[m.family].diversity]

    @property
    def kinds(self) -> list[str]:
        return sorted({self.kind(m) for m in self.metrics if m.family in ("ndcg", "dcg")})

    def ideal_cutoffs(self, kind: str) -> list[int | None]:
        cut = {m.k for m in self.metrics if m.family == "ndcg" and self.kind(m) == kind}
        return [None, *sorted(k for k in cut if k is not None)]

    def t(self, value: float) -> int:
        return self.thresholds.index(value)

    def g(self, kind: str) -> int:
        return ["linear", "exp"].index(kind)


def judgments_sql(judgments: str) -> str:
    """The judgments relation ``judgments`` in canonical cells: ids as text, ``grade``."""
    return (
        "SELECT CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id, "
        f"CAST(relevance AS DOUBLE) AS grade FROM {judgments}"
    )


def ranking_order(ranked_by: str) -> tuple[str, str]:
    """trec_eval's order of a rankings relation (:data:`RANKED_BY`): the select item of its
    ``order_key`` and the window's key on a relation ``r`` of it (score descending, or
    rank ascending); ties go by doc id descending after it."""
    if ranked_by == "score":
        return "CAST(score AS DOUBLE) AS order_key", "r.order_key DESC"
    return "CAST(rank AS DOUBLE) AS order_key", "r.order_key ASC"
