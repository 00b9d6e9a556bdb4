"""The typed readout: summary.json as frozen dataclasses, one per section.

:class:`Summary` is what the analysis builds and what ``summary.json`` holds:
``Summary.to_dict()`` gives exactly the JSON written (keys in the order written), and
``Summary.from_dict()`` reads a saved summary back, so that a readout folder can be loaded
and rendered again. Keys of a saved summary that these classes do not name are kept, in
``extra``, and written back after the named ones (summary.json's stable keys are fixed by
DESIGN.md; others may be added).

Lists are held as tuples, JSON objects as dicts; ``None`` stands for JSON ``null`` (a value
that is not finite, or not computed).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar

from abrank.records import Record
from abrank.stats.results import Comparison

#: How summary.json is written (json.dumps options): indented, no NaN (None instead).
JSON_OPTIONS: dict[str, Any] = {"indent": 2, "allow_nan": False}


def summary_json(summary: dict[str, Any]) -> str:
    """The text of summary.json for a summary dict (ends with a newline)."""
    return json.dumps(summary, **JSON_OPTIONS) + "\n"


# --------------------------------------------------------------------------- sections


@dataclasses.dataclass(frozen=True)
class ExperimentInfo(Record):
    """``experiment``: what the readout is about."""

    name: str
    title: str
    description: str = ""
    owner: str | None = None


@dataclasses.dataclass(frozen=True)
class Schedule(Record):
    """``schedule``: the date of a dated readout and the dates its logs cover.

    ``window`` is ``daily`` (the date's logs) or ``cumulative`` (every date from
    ``window_start`` through ``date``; ``dates`` of them). ``stale``: the inputs are
    byte-identical to those of ``previous_date``, the latest earlier date in the history (the
    data did not refresh); None when there is no earlier date.
    """

    date: str
    window: str = "daily"
    window_start: str | None = None
    dates: int = 1
    previous_date: str | None = None
    stale: bool | None = None

    def message(self) -> str | None:
        """The stale inputs as one sentence for every output (None when they refreshed or
        there is no earlier date to tell)."""
        if not self.stale:
            return None
        return (
            f"Stale inputs: the inputs of {self.date} are byte-identical to those of "
            f"{self.previous_date} (the logs did not refresh), so this readout repeats that "
            "date's data"
        )


@dataclasses.dataclass(frozen=True)
class ArmSummary(Record):
    """One entry of ``arms``: a ranker, its role and how many queries its log holds."""

    name: str
    label: str
    role: str  # "control" or "treatment"
    queries: int  # queries, or impressions of an online log
    units: int | None = None  # online: the randomized units (analysis.unit) of the arm
    impressions: int | None = None  # online: the arm's impressions

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"units", "impressions"})


ComparisonSummary = Comparison
"""One entry of ``comparisons``: the comparison record itself (:class:`abrank.stats.Comparison`),
as a readout holds it (:meth:`abrank.stats.Comparison.saved`)."""


@dataclasses.dataclass(frozen=True)
class TooSmall(Record):
    """One entry of ``segments.too_small``: a segment comparison skipped for size."""

    segment: str
    treatment: str
    metric: str
    n: int


@dataclasses.dataclass(frozen=True)
class SegmentsSummary(Record):
    """``segments``: the breakdown columns, the size rule and what it skipped."""

    columns: tuple[str, ...] = ()
    min_queries: int = 30
    too_small: tuple[TooSmall, ...] = ()


@dataclasses.dataclass(frozen=True)
class Undefined(Record):
    """``diagnostics.undefined``: how undefined values were treated, and how many per metric."""

    policy: str
    metrics: dict[str, int]


@dataclasses.dataclass(frozen=True)
class JudgedAtK(Record):
    """``diagnostics.judged_at_k``: the share of each arm's top k that carries a judgment."""

    k: int
    arms: dict[str, float | None]


@dataclasses.dataclass(frozen=True)
class UnjudgedCheck(Record):
    """``diagnostics.unjudged``: the sensitivity check on unjudged documents.

    ``judged_at_k`` is each arm's judged@k (k = ``k``). The check is ``triggered`` when
    judged@k differs between arms by 2 points or more, or is below 0.9 in any arm (``reason``
    says which, in words; None when it is not triggered). Then ``condensed`` holds every
    overall comparison of a metric that reads grades repeated on judged-only values (same
    keys as ``comparisons`` entries, metric ``ndcg@10(judged)``), and ``verdicts_changed``
    the metrics whose verdict differs between the two; both are empty otherwise.
    """

    k: int
    judged_at_k: dict[str, float | None]
    condensed: tuple[ComparisonSummary, ...] = ()
    verdicts_changed: tuple[str, ...] = ()
    triggered: bool = False
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class MachineLabels(Record):
    """``diagnostics.machine_labels``: human and machine judgments side by side (DESIGN.md
    "Machine-labelled judgments"; :mod:`abrank.analysis.machine_labels`).

    On the (query, document) pairs both judged: ``overlap`` pairs, weighted Cohen's kappa
    (``kappa_linear``, ``kappa_quadratic``), the ``confusion`` matrix ({grades, counts}:
    rows the human grades, columns the machine's) and ``mean_difference`` (machine -
    human); ``per_arm`` the same figures restricted to the documents in each arm's top
    ``k``; ``tau``, Kendall's tau between the orderings of the (arm, metric) means under
    human labels and under machine labels. ``estimate`` is the estimate the comparisons
    report (human, filled or ppi), ``human_queries`` and ``machine_queries`` how many
    queries each kind judged, and ``verdicts_changed`` the overall comparisons whose
    verdict differs between the three estimates ({metric, treatment, human, filled, ppi}).
    """

    overlap: int
    kappa_linear: float | None
    kappa_quadratic: float | None
    confusion: dict[str, Any]
    mean_difference: float | None
    per_arm: dict[str, dict[str, Any]]
    tau: float | None
    estimate: str = "ppi"
    k: int = 10
    human_queries: int = 0
    machine_queries: int = 0
    model: str | None = None
    verdicts_changed: tuple[dict[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True)
class SampleRatio(Record):
    """``diagnostics.srm``: the units per arm tested against the expected split (chi-square,
    or the exact multinomial test with few units: ``test`` ``"exact"``); ``alarm`` when
    ``p_value`` is below ``alpha`` (``analysis.srm_alpha``)."""

    units: dict[str, int]
    expected: dict[str, float]
    chi2: float | None
    p_value: float | None
    alarm: bool
    alpha: float = 0.001
    test: str = "chi2"
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def test_name(self) -> str:
        """The test that gave ``p_value``, in words: ``chi-square test``, or ``exact
        binomial test`` (two arms) / ``exact multinomial test`` (more) for ``exact``."""
        if self.test == "exact":
            return "exact binomial test" if len(self.units) == 2 else "exact multinomial test"
        return "chi-square test" if self.test == "chi2" else f"{self.test} test"

    @property
    def statistic(self) -> str:
        """What stands before the p-value in a sentence: ``chi-square 12.3, `` when the
        chi-square test gave it, ``exact binomial test, `` (the test's name) otherwise."""
        if self.test == "chi2":
            return f"chi-square {self.chi2:.1f}, " if self.chi2 is not None else ""
        return f"{self.test_name}, "

    def message(self) -> str | None:
        """The alarm as one sentence for the top of every output (None without an alarm)."""
        if not self.alarm:
            return None
        units = " / ".join(f"{arm} {n:,}" for arm, n in self.units.items())
        shares = " / ".join(f"{share:.1%}" for share in self.expected.values())
        p = self.p_value
        shown = "p < 1e-300" if p is not None and p == 0 else f"p = {p:.2g}"
        return (
            f"Sample ratio mismatch: units per arm {units} against an expected split of "
            f"{shares} ({self.statistic}{shown} < {self.alpha:g}); assignment or logging lost "
            "units, so these comparisons are not trustworthy until that is explained"
        )


@dataclasses.dataclass(frozen=True)
class InterleavingChecks(Record):
    """``diagnostics.interleaving``: the validity checks of an interleaving experiment.

    ``impressions``, ``units`` and ``clicked`` (impressions with any click, whatever the
    credit) count the log; ``first_team`` tests the impressions whose first result each
    arm contributed against equal shares (``units`` there counts impressions; a fair
    interleaving puts each team first half the time); ``same_lists`` counts the impressions
    whose shown list both source rankings would have shown alike (null without them);
    ``fixed_lists`` the queries seen more than once whose impressions all showed one
    interleaved list (``queries``, ``fixed``, ``share``; null without a query column).
    """

    impressions: int
    units: int
    clicked: int
    clicked_share: float | None
    first_team: SampleRatio
    same_lists: dict[str, Any] | None = None
    fixed_lists: dict[str, Any] | None = None

    def message(self) -> str | None:
        """The first-team alarm as one sentence for the top of every output (None when
        the first results are balanced)."""
        check = self.first_team
        if not check.alarm:
            return None
        total = sum(check.units.values()) or 1
        shares = ", ".join(f"{arm} {n / total:.1%}" for arm, n in check.units.items())
        p = check.p_value
        shown = "p < 1e-300" if p is not None and p == 0 else f"p = {p:.2g}"
        return (
            f"First-team imbalance: the first result of each impression came from {shares} "
            f"({shown} < {check.alpha:g} against equal shares); the interleaving is not fair, "
            "so the preference is not trustworthy until the coin flips are explained"
        )


@dataclasses.dataclass(frozen=True)
class MixedUnitsSummary(Record):
    """``diagnostics.mixed_units``: units seen in more than one arm, and what was done."""

    column: str
    count: int
    examples: tuple[str, ...]
    policy: str  # "warn" (kept) or "drop"


@dataclasses.dataclass(frozen=True)
class UnitConcentration(Record):
    """``diagnostics.concentration`` (clustered designs): how concentrated each arm's
    impressions are in few units (:mod:`abrank.stats.concentration`); for an
    interleaving log, whose units see both teams, ``arms`` has one entry, ``all``.

    ``arms`` maps each arm to its figures over its units' impressions: ``units``,
    ``effective_units`` (Kish's (sum D)^2 / sum D^2), ``effective_share`` (of the units),
    ``top_units`` (the top 1%, at least one) and ``top_share`` (their share of the
    impressions), ``top_10_share``, ``concentrated`` (effective_share below
    ``threshold``). ``comparisons`` lists the comparisons whose verdict came from the
    jackknife on units whose figures differ from their arms' (a segment's units, or a
    judged metric's impressions with a value): metric, treatment, segment and the
    control's and the treatment's figures (an interleaving log: ``all``).
    """

    threshold: float
    arms: dict[str, dict[str, Any]]
    comparisons: tuple[dict[str, Any], ...] = ()


@dataclasses.dataclass(frozen=True)
class DiagnosticsSummary(Record):
    """``diagnostics``: what the inputs cover, and the warnings shown on every output."""

    queries: dict[str, int] = dataclasses.field(default_factory=dict)
    #: offline (queries scored against judgments) only; absent from other designs' readouts
    judged_queries: int | None = None
    analysed_queries: int = 0
    matched: int | None = None  # offline: queries in both arms
    missing: dict[str, int] | None = None  # offline: queries missing from each arm's log
    missing_policy: str | None = None  # offline: analysis.missing_queries
    without_relevant: int | None = None  # offline: judged queries without a relevant grade
    undefined: Undefined | None = None
    unjudged_queries: dict[str, int] | None = None  # offline: queries with unjudged documents
    judged_at_k: JudgedAtK | None = None  # offline: the judged share of each arm's top k
    #: offline, with an rbp metric: metric -> arm -> {rbp, residual, upper, queries}, the
    #: range that the unjudged documents leave open (rbp if none is relevant, upper if all are)
    rbp_residual: dict[str, dict[str, dict[str, Any]]] | None = None
    warnings: tuple[str, ...] = ()
    #: how numbers were computed where that is worth a note but is no warning (resampling
    #: approximations with their bounds); shown in the readout's methods note
    method_notes: tuple[str, ...] | None = None
    unjudged: UnjudgedCheck | None = None
    missing_queries: dict[str, tuple[str, ...]] | None = None  # offline: arm -> ids missing
    units: dict[str, int] | None = None  # online: randomized units per arm
    impressions: dict[str, int] | None = None  # online: impressions per arm
    srm: SampleRatio | None = None
    mixed_units: MixedUnitsSummary | None = None
    interleaving: InterleavingChecks | None = None
    concentration: UnitConcentration | None = None  # online, interleaved: per unit
    #: online, with numeric metrics of log columns: metric -> its spec, the impressions
    #: with a value and without one per arm, the cap applied per arm
    numeric_metrics: dict[str, dict[str, Any]] | None = None
    #: offline, with machine judgments beside human ones: their agreement and the verdicts
    #: that change between the human, machine-filled and prediction-powered estimates
    machine_labels: MachineLabels | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {
            "judged_queries",
            "undefined",
            "matched",
            "missing",
            "missing_policy",
            "without_relevant",
            "unjudged_queries",
            "judged_at_k",
            "rbp_residual",
            "method_notes",
            "unjudged",
            "missing_queries",
            "units",
            "impressions",
            "srm",
            "mixed_units",
            "interleaving",
            "concentration",
            "numeric_metrics",
            "machine_labels",
        }
    )


@dataclasses.dataclass(frozen=True)
class InputFile(Record):
    """One entry of ``inputs``: a file read, with its fingerprint."""

    role: str  # control, treatment, judgments, machine_judgments or attributes
    arm: str | None
    path: str
    sha256: str
    rows: int


@dataclasses.dataclass(frozen=True)
class Correction(Record):
    """``correction``: the multiple-testing method of each family."""

    primary: str
    segments: str


@dataclasses.dataclass(frozen=True)
class ComparedPair(Record):
    """One pair of arms compared: ``treatment`` against ``control``."""

    treatment: str
    control: str


@dataclasses.dataclass(frozen=True)
class Family(Record):
    """``family``: which arms were compared, hence what the primary correction spans.

    ``comparisons`` is the config's choice (``all-pairs``: every pair of arms, the later arm
    of the config against the earlier one); ``size`` the number of overall comparisons
    adjusted together (pairs x metrics).
    """

    comparisons: str
    pairs: tuple[ComparedPair, ...]
    size: int


@dataclasses.dataclass(frozen=True)
class SequentialSummary(Record):
    """``sequential``: the intervals and p-values are always valid under repeated looks.

    ``method`` names the confidence sequence, ``tuning`` its N* (the sample size at which
    it is tightest) for the primary metric's first overall comparison, ``tuning_source``
    where N* came from (``analysis.sequential_tuning``, the planned horizon, or
    ``sample_size``: each comparison's own sample size), ``width_ratio`` how many times as
    wide it is as the fixed-horizon t-interval of the same level, for that comparison
    (None when that is undefined).
    """

    method: str
    tuning: int | None
    width_ratio: float | None
    tuning_source: str | None = None


STATUSES: tuple[str, ...] = ("ship", "no-ship", "keep-running", "unhealthy")
"""The statuses of the decision rule, from the best news to the worst."""


@dataclasses.dataclass(frozen=True)
class Decision(Record):
    """summary.json's ``decision``: what the rule concludes, and why.

    ``status``: one of :data:`STATUSES`; ``rule`` the rule's name; ``reasons`` the
    sentences that led to it (the first is the readout's opening); ``success``,
    ``guardrails`` and ``deteriorations`` one entry per overall comparison concerned
    (metric, treatment and what the rule read of it); ``units_needed`` the units (queries,
    or the randomized units of an online design, both arms together) still needed at the
    current sample's variance for the planned power, for ``keep-running`` (None otherwise
    or where it cannot be worked out), and for a dated readout ``days_needed``, the days
    of traffic they take at the rate of its window; ``planned_power`` the power it is planned for;
    ``treatments`` the status of each treatment against the control when there are
    several (the decision then ships when one of them does).
    """

    status: str
    rule: str
    reasons: tuple[str, ...]
    success: tuple[dict[str, Any], ...] = ()
    guardrails: tuple[dict[str, Any], ...] = ()
    deteriorations: tuple[dict[str, Any], ...] = ()
    units_needed: int | None = None
    days_needed: int | None = None
    planned_power: float | None = None
    unit: str | None = None
    treatments: dict[str, str] | None = None

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"treatments"})

    @property
    def headline(self) -> str:
        """The readout's opening sentence: the status and the first reason."""
        return self.reasons[0] if self.reasons else STATUS_TEXT[self.status]


STATUS_TEXT: dict[str, str] = {
    "ship": "Ship",
    "no-ship": "No-ship",
    "keep-running": "Keep running",
    "unhealthy": "Unhealthy",
}
"""Each status as a readout's opening word."""


@dataclasses.dataclass(frozen=True)
class Summary(Record):
    """The whole ``summary.json`` of a readout."""

    experiment: ExperimentInfo
    abrank_version: str
    config_path: str
    design: str
    seed: int
    alpha: float
    confidence_level: float
    n_resamples: int
    primary_test: str
    tests: tuple[str, ...]
    correction: Correction
    relevance_threshold: float
    no_relevant: str
    gain: str
    depth: int | None
    metrics: tuple[str, ...]
    metric_labels: dict[str, str]
    primary_metric: str | None
    arms: tuple[ArmSummary, ...]
    family: Family | None = None
    sequential: SequentialSummary | None = None  # null: fixed-horizon inference
    comparisons: tuple[ComparisonSummary, ...] = ()
    segments: SegmentsSummary = SegmentsSummary()
    diagnostics: DiagnosticsSummary | None = None
    inputs: tuple[InputFile, ...] = ()
    unit: str | None = None  # online: the randomized unit inference clusters on
    sat_dwell: float | None = None  # online: dwell (s) of a satisfied click
    schedule: Schedule | None = None  # dated readouts: the date and the window
    engine: str | None = None  # the engine that ran: memory, duckdb or spark
    decision: Decision | None = None  # with metric roles: ship, no-ship, keep-running, ...
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"family", "diagnostics", "unit", "sat_dwell", "schedule", "engine", "decision"}
    )

    @property
    def srm_alarm(self) -> bool:
        """The sample-ratio check of an online experiment raised its alarm (of an
        interleaving experiment: its first-team check, the same kind of split)."""
        diagnostics = self.diagnostics
        srm = diagnostics.srm if diagnostics is not None else None
        checks = diagnostics.interleaving if diagnostics is not None else None
        return bool(srm is not None and srm.alarm) or bool(
            checks is not None and checks.first_team.alarm
        )

    @property
    def control(self) -> str | None:
        """The name of the control arm."""
        return next((arm.name for arm in self.arms if arm.role == "control"), None)

    def to_json(self) -> str:
        """The text of summary.json."""
        return summary_json(self.to_dict())
