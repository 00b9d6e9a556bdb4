"""The sensitivity check on unjudged documents: does a verdict survive the judged-only view?

A reranker brings up documents that the judging pool never saw, and judged metrics count
them as not relevant: an offline replay is then biased against the very change it
measures. When judged@k (k = :data:`~abrank.analysis.score.JUDGED_K`) differs between arms
by :data:`JUDGED_GAP` or more, or falls below :data:`JUDGED_FLOOR` in any arm, every
comparison of a metric that reads grades is repeated on judged-only values (each ranking
without its unjudged documents, as trec_eval ``-J`` scores it: ``ndcg@10(judged)``), with
the same tests, seed and correction, as a family of its own. The readout then lists both
verdicts side by side and names the metrics whose verdict changes: those verdicts depend on
unjudged documents.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from abrank.analysis.compare import start_comparing_arms
from abrank.analysis.comparisons import PendingComparisons
from abrank.analysis.load import LoadedData
from abrank.analysis.score import JUDGED_K, ScoredArms, score_arms
from abrank.config import Experiment
from abrank.readout.model import ComparisonSummary, UnjudgedCheck

if TYPE_CHECKING:
    from abrank.stats import Comparison

__all__ = [
    "JUDGED_FLOOR",
    "JUDGED_GAP",
    "changed_verdict_notes",
    "check_reason",
    "judged_only_comparisons",
    "judged_only_experiment",
    "judged_only_names",
    "judged_only_result",
    "start_judged_only",
    "unjudged_check",
    "verdicts_changed",
]

#: judged@k differing between arms by this much (2 points) triggers the check.
JUDGED_GAP = 0.02
#: judged@k below this in any arm triggers the check.
JUDGED_FLOOR = 0.9


def check_reason(judged_at_k: Mapping[str, float | None]) -> str | None:
    """Why the check runs, in words (None: it does not): the arms whose judged@k is below
    the floor, and the gap between the highest and lowest judged@k when it is 2 points or
    more. Arms without a judged@k (no scored query) are left out."""
    known = {arm: float(v) for arm, v in judged_at_k.items() if v is not None and math.isfinite(v)}
    if not known:
        return None
    reasons = []
    low = [f"{arm} {v:.3f}" for arm, v in known.items() if v < JUDGED_FLOOR]
    if low:
        reasons.append(f"judged@{JUDGED_K} is below {JUDGED_FLOOR:g} ({', '.join(low)})")
    high_arm = max(known, key=known.__getitem__)
    low_arm = min(known, key=known.__getitem__)
    gap = known[high_arm] - known[low_arm]
    # a gap printed as 2.0 points triggers (the values are rounded to 1e-12 first)
    if round(gap, 12) >= JUDGED_GAP:
        reasons.append(
            f"judged@{JUDGED_K} differs by {100 * gap:.1f} points between arms ({high_arm} "
            f"{known[high_arm]:.3f}, {low_arm} {known[low_arm]:.3f})"
        )
    return "; ".join(reasons) or None


def judged_only_names(metrics: Sequence[str]) -> dict[str, str]:
    """Each metric that reads grades -> the name of its judged-only variant; judged@k and
    metrics that are judged-only already have none."""
    from abrank.metrics import FAMILIES, parse_metric

    out = {}
    for name in metrics:
        metric = parse_metric(name)
        if metric.judged_only or FAMILIES[metric.family].relevance == "judged":
            continue
        out[name] = parse_metric(f"{metric.name}(judged)").name
    return out


def judged_only_comparisons(
    experiment: Experiment,
    data: LoadedData,
    score: Callable[[Experiment, LoadedData], ScoredArms] = score_arms,
) -> list[Comparison]:
    """The overall comparisons of the experiment repeated on judged-only values: the same
    arms, queries, tests, seed and correction (one family of their own), no segments.
    ``score`` is the engine's scorer of the inputs (the memory engine's by default)."""
    return judged_only_result(start_judged_only(experiment, data, score))


def start_judged_only(
    experiment: Experiment,
    data: LoadedData,
    score: Callable[[Experiment, LoadedData], ScoredArms] = score_arms,
) -> PendingComparisons | None:
    """:func:`judged_only_comparisons` scored here and started in the comparison threads
    (None when no metric has a judged-only twin); read it with :func:`judged_only_result`."""
    condensed = judged_only_experiment(experiment)
    if condensed is None:
        return None
    scored = score(condensed, data)
    return start_comparing_arms(condensed, scored, data.segments.iloc[:, :0])


def judged_only_experiment(experiment: Experiment) -> Experiment | None:
    """The experiment whose metrics are the judged-only twins of ``experiment``'s (their
    roles kept, no primary metric), or None when no metric has a twin."""
    names = judged_only_names(experiment.metrics)
    if not names:
        return None
    roles = experiment.metric_roles
    return experiment.model_copy(
        update={
            "metrics": list(names.values()),
            "primary_metric": None,
            "metric_roles": {twin: roles[m] for m, twin in names.items() if m in roles},
        }
    )


class Started(Protocol):
    """Comparisons started in the comparison threads: ``result()`` waits for them and
    returns (comparisons, segment comparisons too small)."""

    def result(self) -> tuple[list, list[dict]]: ...


def judged_only_result(pending: Started | None) -> list[Comparison]:
    """What :func:`judged_only_comparisons` returns, from :func:`start_judged_only`'s."""
    if pending is None:
        return []
    comparisons, _ = pending.result()
    return [c for c in comparisons if c.segment is None]


def verdicts_changed(
    plain: Sequence[ComparisonSummary], condensed: Sequence[ComparisonSummary]
) -> tuple[str, ...]:
    """The metrics (plain names, in the order of ``plain``) whose verdict differs between
    the comparison as judged and its judged-only repetition, for any treatment."""
    twin = {(c.metric, c.treatment): c for c in condensed}
    twins = judged_only_names([c.metric for c in plain])
    changed = []
    for comp in plain:
        name = twins.get(comp.metric)
        other = None if name is None else twin.get((name, comp.treatment))
        if other is not None and other.verdict != comp.verdict and comp.metric not in changed:
            changed.append(comp.metric)
    return tuple(changed)


def changed_verdict_notes(check: UnjudgedCheck, plain: Sequence[ComparisonSummary]) -> list[str]:
    """One warning per overall comparison whose verdict the judged-only view changes."""
    twin = {(c.metric, c.treatment): c for c in check.condensed}
    twins = judged_only_names([c.metric for c in plain if c.segment is None])
    treatments = {c.treatment for c in plain}
    notes = []
    for comp in plain:
        name = twins.get(comp.metric)
        other = None if name is None else twin.get((name, comp.treatment))
        if comp.segment is not None or other is None or other.verdict == comp.verdict:
            continue
        subject = comp.metric if len(treatments) == 1 else f"{comp.metric} ({comp.treatment})"
        notes.append(
            f"{subject}: the verdict depends on unjudged documents: {comp.verdict} as judged, "
            f"{other.verdict} on judged documents only ({check.reason})"
        )
    return notes


def unjudged_check(
    scored: ScoredArms,
    plain: Sequence[ComparisonSummary],
    condensed: Sequence[ComparisonSummary] | None,
) -> UnjudgedCheck:
    """``diagnostics.unjudged``: judged@k per arm, whether the check ran and why, and when
    it ran the judged-only comparisons and the metrics whose verdict they change."""
    judged = {arm: _finite(v) for arm, v in scored.judged_at_k.items()}
    reason = check_reason(judged)
    overall = [c for c in plain if c.segment is None]
    condensed = tuple(condensed or ()) if reason is not None else ()
    return UnjudgedCheck(
        k=JUDGED_K,
        judged_at_k=judged,
        condensed=condensed,
        verdicts_changed=verdicts_changed(overall, condensed),
        triggered=reason is not None,
        reason=reason,
    )


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None
