"""The one comparison loop: every pair of arms x metric, overall and per segment value.

Every design (offline replays, online A/B tests, interleaving) compares its arms the same
way; only its samples and its test differ, and those it hands the loop as a
:class:`DesignSamples`. The loop fixes, once for all of them:

- the pairs of arms (:func:`arm_pairs`: each treatment against the control, and with
  ``comparisons: all-pairs`` each treatment against each earlier one);
- the order of the comparisons: the overall ones by pair then metric, then the segment ones
  by pair, metric, segment column (the config's order) and value (text order);
- the size rule: a segment value whose comparison would use fewer than
  ``segments.min_queries`` units is not tested, and is listed (``too_small``) instead;
- the families of the multiple-testing correction: the overall comparisons one
  (``analysis.correction``), the segment ones another (``analysis.segment_correction``);
  with metric roles, the overall success metrics one, the secondary ones another, the
  guardrails none (:func:`overall_families`);
- the orientation of verdicts: for a metric where lower is better (the registry's
  direction, or the role's ``direction``), a significant decrease is the treatment's win;
- with roles, what each overall comparison says for the decision rule
  (:mod:`abrank.decision.checks`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future
from typing import Any, Protocol

from abrank import workers
from abrank.analysis.geometric import geometric_comparison, is_geometric
from abrank.config import Experiment
from abrank.stats.settings import TestSettings


@dataclasses.dataclass(frozen=True)
class ArmPair:
    """Two arms compared: ``treatment`` against ``control`` (delta = treatment - control).

    ``name`` is what the comparison's ``treatment`` field says: the treatment arm's name
    against the experiment's control, ``"B vs A"`` for a treatment against another one.
    """

    treatment: str
    control: str
    name: str


def arm_pairs(experiment: Experiment) -> list[ArmPair]:
    """The pairs of arms an experiment compares, in the readout's order: every treatment
    against the control, then (``all-pairs``) each treatment against each earlier one."""
    control = experiment.control.name
    pairs = [ArmPair(t.name, control, t.name) for t in experiment.treatments]
    if experiment.comparisons == "all-pairs":
        names = [t.name for t in experiment.treatments]
        pairs += [
            ArmPair(later, earlier, f"{later} vs {earlier}")
            for j, later in enumerate(names)
            for earlier in names[:j]
        ]
    return pairs


def test_settings(experiment: Experiment) -> TestSettings:
    """The tests of every comparison of the experiment (:class:`~abrank.stats.settings.TestSettings`):
    which tests run, at which level, with how many resamples and which seed, and the N* of
    the ``sequential`` test's confidence sequence."""
    return TestSettings.from_analysis(experiment.analysis)


class DesignSamples(Protocol):
    """What a design hands the loop: its two samples per (pair, metric, segment value),
    their size, and its test. A sample is whatever the design's test reads (per-query
    values, per-unit sums, per-unit counts); the loop only passes it on."""

    def metrics(self) -> list[str]:
        """The metrics compared, in the readout's order."""
        ...

    def overall(self, pair: ArmPair, metric: str) -> Any:
        """The pair's (control, treatment) samples of ``metric`` over all units."""
        ...

    def segments(self, pair: ArmPair) -> Iterable[tuple[str, Any]]:
        """(label ``column=value``, key) of every segment value the pair is compared in:
        by column in the config's order, values in text order."""
        ...

    def in_segment(self, pair: ArmPair, metric: str, key: Any) -> Any:
        """The pair's samples of ``metric`` within the segment value ``key``."""
        ...

    def size(self, samples: Any) -> int:
        """How many units a comparison of ``samples`` would use (the size rule reads it)."""
        ...

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        """The comparisons of every metric of ``samples`` (metric -> samples), as a future
        of a list in the metrics' order (in a thread where that is safe)."""
        ...

    def lower_is_better(self, metric: str) -> bool:
        """A significant decrease of ``metric`` is the treatment's win."""
        ...


def done(compute: Callable[[], list]) -> Future:
    """``compute()`` run now, as a finished future (for tests that run in this thread)."""
    future: Future = Future()
    future.set_result(compute())
    return future


def compare_all(experiment: Experiment, design: DesignSamples) -> tuple[list, list[dict]]:
    """Every pair x metric comparison of a design, overall and per segment value, with
    p-values adjusted per family (the overall ones one family, the segment ones another)
    and verdicts oriented; and the segment comparisons left out for having fewer than
    ``segments.min_queries`` units (``{"segment", "treatment", "metric", "n"}``)."""
    return start_all(experiment, design).result()


class PendingComparisons:
    """The comparisons :func:`start_all` started, running in the comparison threads.

    :meth:`result` waits for them and returns what :func:`compare_all` returns;
    :meth:`cancel` drops those not started yet (when the run fails meanwhile).
    """

    def __init__(
        self,
        experiment: Experiment,
        design: DesignSamples,
        overall: list[Future],
        breakdown: list[tuple[tuple[int, int], Future]],
        too_small: list[tuple[tuple[int, int, int], dict]],
    ):
        self.experiment = experiment
        self.design = design
        self.overall = overall
        self.breakdown = breakdown
        self.too_small = too_small

    def cancel(self) -> None:
        """Drop the comparisons not started yet (those running finish unread)."""
        for future in [*self.overall, *(future for _, future in self.breakdown)]:
            future.cancel()

    def result(self) -> tuple[list, list[dict]]:
        """The comparisons, adjusted per family and oriented, and those too small."""
        from abrank.stats import adjust

        analysis = self.experiment.analysis
        metric_order = {metric: i for i, metric in enumerate(self.design.metrics())}
        primary = [c for found in workers.results(self.overall) for c in found]
        ranked = sorted(
            (
                ((t_index, metric_order[c.metric], s_index), c)
                for (t_index, s_index), found in zip(
                    [order for order, _ in self.breakdown],
                    workers.results([future for _, future in self.breakdown]),
                    strict=True,
                )
                for c in found
            ),
            key=lambda item: item[0],
        )
        adjusted = [
            *overall_families(self.experiment, primary),
            *adjust([c for _, c in ranked], method=analysis.segment_correction),
        ]
        swap = {"win": "loss", "loss": "win"}
        oriented = [
            dataclasses.replace(c, verdict=swap[c.verdict])
            if c.verdict in swap and self.lower_is_better(c.metric)
            else c
            for c in adjusted
        ]
        # a geometric mean's comparison ran on logs: back to the metric's units
        oriented = [geometric_comparison(c) if is_geometric(c.metric) else c for c in oriented]
        return self.with_roles(oriented), [
            entry for _, entry in sorted(self.too_small, key=lambda e: e[0])
        ]

    def lower_is_better(self, metric: str) -> bool:
        """The metric's direction: its role's ``direction`` where the config gives one,
        else the design's (the metric registry's)."""
        role = self.experiment.metric_roles.get(metric)
        if role is not None and role.direction is not None:
            return role.direction == "lower"
        return self.design.lower_is_better(metric)

    def with_roles(self, comparisons: list) -> list:
        """The overall comparisons with their role and decision checks, when the metrics
        have roles (:func:`abrank.decision.checks.annotate`)."""
        roles = self.experiment.metric_roles
        if not roles:
            return comparisons
        from abrank.decision.checks import annotate

        decision = self.experiment.decision
        alpha = self.experiment.analysis.alpha
        worse = decision.deterioration_alpha if decision is not None else None
        return [
            annotate(c, roles[c.metric], self.lower_is_better(c.metric), worse or alpha)
            if c.segment is None and c.metric in roles
            else c
            for c in comparisons
        ]


def _role(roles: Mapping[str, Any], metric: str) -> str:
    found = roles.get(metric)
    return found.role if found is not None else "secondary"


def overall_families(experiment: Experiment, comparisons: list) -> list:
    """The overall comparisons adjusted for multiple testing, in their order: one family
    (``analysis.correction``) without roles; with roles the success metrics form the
    family, the secondary metrics another, and the guardrails none (each must hold on its
    own, so correcting them would make shipping easier, not safer)."""
    from abrank.stats import adjust

    method = experiment.analysis.correction
    roles = experiment.metric_roles
    if not roles:
        return adjust(comparisons, method=method)
    adjusted: dict[int, Any] = {}
    for role, family_method in (("success", method), ("guardrail", "none"), ("secondary", method)):
        members = [i for i, c in enumerate(comparisons) if _role(roles, c.metric) == role]
        found = adjust([comparisons[i] for i in members], method=family_method)
        adjusted.update(zip(members, found, strict=True))
    return [adjusted[i] for i in range(len(comparisons))]


def start_all(experiment: Experiment, design: DesignSamples) -> PendingComparisons:
    """Start every comparison of :func:`compare_all` (in the comparison threads where that
    is safe) and return at once, so that the caller can prepare more work meanwhile (an
    offline run scores its judged-only values); read them with ``.result()``. When they
    run changes no number: each comparison draws from its own seeded generators."""
    minimum = experiment.segments.min_queries
    metrics = design.metrics()
    metric_order = {metric: i for i, metric in enumerate(metrics)}
    overall: list[Future] = []
    breakdown: list[tuple[tuple[int, int], Future]] = []
    too_small: list[tuple[tuple[int, int, int], dict]] = []
    pending = PendingComparisons(experiment, design, overall, breakdown, too_small)
    try:
        for t_index, pair in enumerate(arm_pairs(experiment)):
            samples = {metric: design.overall(pair, metric) for metric in metrics}
            overall.append(design.start(samples, pair, None))
            for s_index, (label, key) in enumerate(design.segments(pair)):
                subset = {}
                for metric in metrics:
                    found = design.in_segment(pair, metric, key)
                    n = design.size(found)
                    if n < minimum:
                        entry = dict(segment=label, treatment=pair.name, metric=metric, n=n)
                        too_small.append(((t_index, metric_order[metric], s_index), entry))
                    else:
                        subset[metric] = found
                if subset:
                    breakdown.append(((t_index, s_index), design.start(subset, pair, label)))
    except BaseException:
        pending.cancel()
        raise
    return pending


@contextlib.contextmanager
def cancelled_on_error(started: list[PendingComparisons]) -> Iterator[None]:
    """When the block fails, drop the comparisons of ``started`` not started yet (the list
    may grow inside the block), so that no thread goes on with a failed run's work."""
    try:
        yield
    except BaseException:
        for pending in started:
            pending.cancel()
        raise
