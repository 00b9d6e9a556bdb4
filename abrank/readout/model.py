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
import types
import typing
from typing import Any, ClassVar, TypeVar, Union

from abrank.errors import DataError

#: How summary.json is written (json.dumps options): indented, no NaN (None instead).
JSON_OPTIONS: dict[str, Any] = {"indent": 2, "allow_nan": False}

_Record = TypeVar("_Record", bound="Record")


def summary_json(summary: dict[str, Any]) -> str:
    """The text of summary.json for a summary dict (ends with a newline)."""
    return json.dumps(summary, **JSON_OPTIONS) + "\n"


class Record:
    """A section of the summary: a frozen dataclass whose fields are its JSON keys.

    ``to_dict`` writes the fields in their declared order (then ``extra``), nested records
    as dicts and tuples as lists; ``from_dict`` converts back by the fields' type hints and
    raises :class:`DataError` naming the key path when a key is missing or has the wrong kind
    of value. Fields with a default may be absent from a saved summary; a field listed in
    ``OMITTED_WHEN_NONE`` is not written while it is None (a key only some readouts have).
    """

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins, keys in the order summary.json has them."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            if field.name == "extra":
                continue
            value = getattr(self, field.name)
            if value is None and field.name in self.OMITTED_WHEN_NONE:
                continue
            out[field.name] = _to_json(value)
        out.update(_to_json(getattr(self, "extra", None) or {}))
        return out

    @classmethod
    def from_dict(cls: type[_Record], data: Any, where: str = "summary") -> _Record:
        """The record that ``data`` (a parsed JSON object) describes; ``where`` names it in
        errors (``summary.comparisons[3]``)."""
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected an object, got {_kind(data)}")
        hints = field_hints(cls)
        values: dict[str, Any] = {}
        named = set()
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            if field.name == "extra":
                continue
            named.add(field.name)
            if field.name not in data:
                if _has_default(field):
                    continue
                raise DataError(f"{where}.{field.name}: expected a value, got no such key")
            values[field.name] = _from_json(
                data[field.name], hints[field.name], f"{where}.{field.name}"
            )
        if any(f.name == "extra" for f in dataclasses.fields(cls)):  # type: ignore[arg-type]
            values["extra"] = {k: v for k, v in data.items() if k not in named}
        return cls(**values)


_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    """The types of a record class's fields, resolved once per class: ``get_type_hints``
    evaluates every annotation's text, which cost more than reading a comparison."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _has_default(field: dataclasses.Field) -> bool:
    return (
        field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
    )


def _to_json(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    return value


def _kind(value: Any) -> str:
    """How a JSON value is called in a message."""
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names.update({list: "a list", dict: "an object"})
    return names.get(type(value), type(value).__name__)


def _from_json(value: Any, hint: Any, where: str) -> Any:
    """``value`` converted to the type ``hint`` names (records, tuples, dicts, scalars)."""
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _from_json(value, options[0], where)
        for option in options:  # e.g. float | str: the first kind that fits
            if _fits(value, option):
                return _from_json(value, option, where)
        raise DataError(f"{where}: expected {_expected(hint)}, got {_kind(value)}")
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_dict(value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise DataError(f"{where}: expected a list, got {_kind(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise DataError(f"{where}: expected a list of {len(args)}, got {len(value)} items")
        return tuple(_from_json(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin is dict:
        if not isinstance(value, dict):
            raise DataError(f"{where}: expected an object, got {_kind(value)}")
        return {k: _from_json(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if not _fits(value, hint):
        raise DataError(f"{where}: expected {_expected(hint)}, got {_kind(value)}")
    return value


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    origin = typing.get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, Record):
        return isinstance(value, dict)
    if origin is tuple:
        return isinstance(value, list)
    return isinstance(value, origin) if isinstance(origin, type) else True


def _expected(hint: Any) -> str:
    if hint is Any:
        return "a value"
    if typing.get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_expected(a) for a in typing.get_args(hint))
    origin = typing.get_origin(hint) or hint
    if origin is type(None):
        return "null"
    if isinstance(origin, type) and issubclass(origin, Record):
        return "an object"
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({tuple: "a list", dict: "an object", list: "a list"})
    return names.get(origin, str(origin))


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


@dataclasses.dataclass(frozen=True)
class ComparisonSummary(Record):
    """One entry of ``comparisons``: the saved fields of :class:`abrank.stats.Comparison`.

    ``treatment`` is the arm compared (or ``"B vs A"`` when two treatments are compared,
    with ``comparisons: all-pairs``); ``control`` and ``treatment_arm`` name the two arms of
    such a comparison and are written only then. ``delta`` is treatment - control.
    ``unit``, ``n_units`` and ``cuped`` are those of a clustered comparison (null otherwise).
    """

    metric: str
    treatment: str
    segment: str | None
    design: str
    n: int
    n_control: int
    n_treatment: int
    control_mean: float | None
    treatment_mean: float | None
    delta: float | None
    relative_lift: float | None
    ci: tuple[float | None, float | None]
    ci_method: str
    ci_level: float | None
    bootstrap_ci: tuple[float | None, float | None] | None
    relative_ci: tuple[float | None, float | None] | None
    p_value: float | None
    p_values: dict[str, float | None]
    p_adjusted: float | None
    correction: str | None
    effect_size: float | None
    mde: float | None
    wins: int | None
    ties: int | None
    losses: int | None
    verdict: str
    primary_test: str
    alpha: float
    confidence_level: float
    n_resamples: int
    approximation: str | None = None
    ci_unadjusted: tuple[float | None, float | None] | None = None
    ci_agrees: bool = True
    notes: tuple[str, ...] = ()
    unit: str | None = None
    n_units: dict[str, int] | None = None
    cuped: dict[str, Any] | None = None
    control: str | None = None
    treatment_arm: str | None = None
    #: interleaved design: units, impressions with a click, the first-team check
    interleaving: dict[str, Any] | None = None
    #: paired design: the bootstrap interval of the lift, beside the one shown (relative_ci)
    relative_ci_bootstrap: tuple[float | None, float | None] | None = None
    #: why the verdict's test is not the configured one: paired, the sign-flip test on
    #: sparse, skewed or dominated deltas; clustered, the jackknife on concentrated units
    regime: dict[str, Any] | None = None
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"control", "treatment_arm", "interleaving"}
    )

    @classmethod
    def of(
        cls, comparison: Any, *, control: str | None = None, treatment_arm: str | None = None
    ) -> ComparisonSummary:
        """The saved form of a :class:`abrank.stats.Comparison` (through its ``to_dict``)."""
        saved = cls.from_dict(comparison.to_dict(), "comparison")
        return dataclasses.replace(saved, control=control, treatment_arm=treatment_arm)


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
            "method_notes",
            "unjudged",
            "missing_queries",
            "units",
            "impressions",
            "srm",
            "mixed_units",
            "interleaving",
            "concentration",
        }
    )


@dataclasses.dataclass(frozen=True)
class InputFile(Record):
    """One entry of ``inputs``: a file read, with its fingerprint."""

    role: str  # control, treatment, judgments or attributes
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
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset(
        {"family", "diagnostics", "unit", "sat_dwell", "schedule", "engine"}
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
