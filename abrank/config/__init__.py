"""Experiment configs: YAML in, a validated :class:`Experiment` out.

A config names the experiment, the control arm, one or more treatments, the judgments, the
metrics and the analysis options. It is read with ``yaml.safe_load`` semantics and checked
in full before any data is touched: every problem is reported at once, each naming the
file, the YAML line and the field path, so a user fixes a config in one pass.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from abrank.config.dates import check_template, date_range, is_dated, parse_date
from abrank.config.engine import Engine, EngineConfig, is_pattern, pattern_problem
from abrank.config.interleaved import credit_name, credit_problem, interleaved_problems
from abrank.config.simulation import SimulationConfig
from abrank.errors import ConfigError
from abrank.io import formats as input_formats
from abrank.root_names import reserved_problem
from abrank.stats import registry as stats_registry
from abrank.stats.registry import INTERLEAVED, INTERLEAVED_TESTS

#: Input file formats a config may name (`format:` of a data file).
INPUT_FORMATS = input_formats.NAMES

#: Deepest YAML nesting a config may use (real configs use four or five levels).
MAX_DEPTH = 50
#: Most values (scalars and collections) a config may hold with its aliases expanded.
MAX_VALUES = 100_000

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

Slug = Annotated[str, Field(pattern=_SLUG.pattern, max_length=100)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _one_character(value: str) -> str:
    """A CSV field separator: one character, neither a quote nor a line break (``\\t``
    written in single quotes, two characters, is taken for the tab it means)."""
    if value == "\\t":
        return "\t"
    if len(value) != 1 or value in '"\r\n':
        raise ValueError("a single character such as ';' or '\\t' (not a quote or a line break)")
    return value


#: ``sep`` of a CSV/TSV file: the field separator (default ``,`` for csv, a tab for tsv).
Separator = Annotated[str, AfterValidator(_one_character)]
#: ``decimal`` of a CSV/TSV file: the decimal mark of its numbers (default ``.``).
DecimalMark = Literal[".", ","]


class Columns(_Strict):
    """Which of the user's columns hold each canonical column (canonical name: user name)."""

    query_id: str | None = None
    doc_id: str | None = None
    rank: str | None = None
    score: str | None = None
    relevance: str | None = None
    # online logs (DESIGN.md "Online logs"): one row per shown result
    impression_id: str | None = None
    user_id: str | None = None
    clicked: str | None = None
    dwell: str | None = None
    timestamp: str | None = None
    query: str | None = None
    arm: str | None = None
    # interleaved logs (DESIGN.md "Interleaving"): the arm that contributed each result
    team: str | None = None

    def mapping(self) -> dict[str, str]:
        """Canonical column -> the user's column, for the names that were given."""
        return {canon: user for canon, user in self.model_dump().items() if user}


class ArmConfig(_Strict):
    """One ranker's log: where it is, how to read it, how to call it in the readout."""

    name: Slug | None = None
    label: str | None = None
    path: str | None = None  # required unless the experiment has one `log:` for every arm
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()
    duplicates: Literal["error", "first"] | None = None


class LogConfig(_Strict):
    """One impression log for every arm, whose ``arm`` column names the arm of each row."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


class CovariatesConfig(_Strict):
    """A per-unit table of pre-period values for CUPED: the unit column, an optional
    ``impressions`` column (the unit's pre-period impressions, default 1) and one column per
    metric, named as the metric, holding the unit's pre-period mean of it."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","


class JudgmentsConfig(_Strict):
    """The relevance judgments (qrels), when the logs carry no labels of their own."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


class AttributesConfig(_Strict):
    """A per-query table of segment columns (locale, device, ...), joined on query_id."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


class AnalysisConfig(_Strict):
    """How the arms are compared (DESIGN.md "Statistics")."""

    design: Literal[stats_registry.DESIGNS] = "paired"  # type: ignore[valid-type]
    missing_queries: Literal["zero", "drop", "error"] = "zero"
    alpha: float = Field(0.05, gt=0, lt=1)
    confidence_level: float = Field(0.95, gt=0, lt=1)
    # test and correction names: abrank.stats.registry, checked against the design below
    primary_test: str = "t"
    tests: list[str] = ["t", "permutation", "bootstrap"]
    #: always-valid inference (a cumulative readout looked at every day): the primary test
    #: becomes ``sequential``, a confidence sequence (abrank.stats.sequential); t stays beside it
    sequential: bool = False
    #: N*: the planned horizon, the sample size (queries, or units of both arms) at which
    #: the confidence sequence is tightest; null: each comparison's own sample size
    sequential_tuning: int | None = Field(None, ge=1)
    resamples: int = Field(10_000, ge=100, le=10_000_000)
    correction: str = "holm"
    segment_correction: str = "fdr_bh"
    seed: int = Field(0, ge=0)
    # online experiments (DESIGN.md "Clustered inference")
    #: the column whose values are randomized (e.g. user_id): inference clusters on it
    unit: str | None = Field(None, min_length=1)
    #: a click with at least this dwell (seconds) is a satisfied click (sat_ctr@k)
    sat_dwell: float = Field(30.0, ge=0)
    covariates: CovariatesConfig | None = None
    #: each arm's expected share of the units (default: equal shares)
    expected_split: dict[str, float] | None = None
    srm_alpha: float = Field(0.001, gt=0, lt=1)
    #: units seen in more than one arm: counted and warned about, or also dropped
    mixed_units: Literal["warn", "drop"] = "warn"


class CumulativeWindow(_Strict):
    """``window: {cumulative: START}``: a dated run reads every date from START through its
    own date."""

    cumulative: dt.date


class SegmentsConfig(_Strict):
    """Breakdowns: every comparison is repeated per value of each segment column."""

    columns: list[str] = []
    min_queries: int = Field(30, ge=2)
    attributes: AttributesConfig | None = None


class Experiment(_Strict):
    """A validated experiment. Paths are absolute (resolved against the config's folder)."""

    name: Slug
    title: str | None = None
    description: str = ""
    owner: str | None = None
    control: ArmConfig
    treatments: list[ArmConfig] = Field(min_length=1)
    log: LogConfig | None = None
    judgments: JudgmentsConfig | None = None
    metrics: list[str] = Field(min_length=1)
    primary_metric: str | None = None
    relevance_threshold: float = 1.0
    no_relevant: Literal["drop", "zero"] = "drop"
    gain: Literal["linear", "exp"] = "linear"
    depth: int | None = Field(1000, ge=1)
    duplicates: Literal["error", "first"] = "error"
    #: which arms are compared: each treatment against the control, or every pair of arms
    comparisons: Literal["control", "all-pairs"] = "control"
    analysis: AnalysisConfig = AnalysisConfig()
    segments: SegmentsConfig = SegmentsConfig()
    output: str | None = None
    #: which dates a dated run reads: its own (daily), or every date from a start date
    window: Literal["daily"] | CumulativeWindow = "daily"
    simulation: SimulationConfig | None = None  # `abrank simulate` (abrank.config.simulation)
    #: where the logs become aggregates: memory (default), duckdb or spark, with options
    engine: Engine = EngineConfig()

    source: str = ""  # the config file, as the user named it
    text: str = ""  # the config as written
    #: the date of this run (set by :meth:`for_date`; None for an undated run)
    date: dt.date | None = None

    @property
    def arms(self) -> list[ArmConfig]:
        """Control first, then the treatments, each with its resolved name."""
        return [self.control, *self.treatments]

    @property
    def display_title(self) -> str:
        return self.title or self.name

    @property
    def dated(self) -> bool:
        """Some input path holds ``{date}``: every run needs a date."""
        return any(is_dated(path) for _, path in self.input_paths())

    @property
    def window_start(self) -> dt.date | None:
        """The first date of a cumulative window (None for daily readouts)."""
        return self.window.cumulative if isinstance(self.window, CumulativeWindow) else None

    @property
    def window_dates(self) -> list[dt.date]:
        """The dates whose logs this run reads: its date, or the cumulative window's."""
        if self.date is None:
            return []
        start = self.window_start
        return [self.date] if start is None else date_range(start, self.date, "window")

    def input_paths(self) -> list[tuple[str, str]]:
        """(config key, path) of every input file, as configured (templates unfilled)."""
        found = [("log.path", self.log.path)] if self.log is not None else []
        for index, arm in enumerate(self.arms):
            key = "control.path" if index == 0 else f"treatments[{index - 1}].path"
            if arm.path is not None:
                found.append((key, arm.path))
        if self.judgments is not None:
            found.append(("judgments.path", self.judgments.path))
        if self.segments.attributes is not None:
            found.append(("segments.attributes.path", self.segments.attributes.path))
        if self.analysis.covariates is not None:
            found.append(("analysis.covariates.path", self.analysis.covariates.path))
        return found

    def for_date(self, date: dt.date | str | None) -> Experiment:
        """This experiment run for ``date`` (its ``{date}`` paths read that date's files)."""
        if date is None:
            return self.model_copy(update={"date": None})
        day = parse_date(date, "--date")
        start = self.window_start
        if start is not None and day < start:
            raise ConfigError(
                f"{self.source}: window: expected --date on or after the cumulative window's "
                f"start {start}, got {day}"
            )
        return self.model_copy(update={"date": day})

    @property
    def interleaved(self) -> bool:
        """An interleaving test: one log of interleaved lists, credits as metrics."""
        return self.analysis.design == INTERLEAVED

    @property
    def online(self) -> bool:
        """The logs are impression logs of an A/B test (one ``log:``, or click metrics to
        compute); an interleaved log is not (:attr:`interleaved`)."""
        from abrank.metrics import parse_metric

        if self.interleaved:
            return False
        return self.log is not None or any(parse_metric(m).is_click for m in self.metrics)


_SOURCE_FIELDS = {"source", "text", "date"}


# --------------------------------------------------------------------------- loading


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment config; raise :class:`ConfigError` listing every problem."""
    from abrank.io.files import path_problem

    path = Path(path)
    label = str(path)
    problem = path_problem(path)  # a FIFO would block the read forever
    if problem is not None and problem not in ("no such file", "a folder"):
        raise ConfigError(f"{label}: expected an experiment config file, got {problem}")
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{label}: expected an experiment config file, got no such file"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"{label}: expected an experiment config file, got a folder") from None
    except OSError as exc:  # permission denied, an I/O error: the user's to fix
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        raise ConfigError(f"{label}: expected a readable config file, got {reason}") from None
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{label}: byte {exc.start}: expected UTF-8 YAML text, got a binary or non-UTF-8 file"
        ) from None
    return parse_experiment(text, source=label, base_dir=path.resolve().parent)


def parse_experiment(
    text: str, *, source: str = "<config>", base_dir: Path | None = None
) -> Experiment:
    """Validate a config given as YAML text (the file-free core of :func:`load_experiment`)."""
    base_dir = base_dir or Path.cwd()
    try:
        _check_structure(text, source)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
        lines = _line_index(node)
        repeated = _duplicate_keys(node, source)
    except RecursionError:  # a safety net: _check_structure refuses such YAML first
        raise ConfigError(
            f"{source}: expected YAML nested at most {MAX_DEPTH} levels deep, got deeper nesting"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            f"{source}: {where}: expected valid YAML, got a syntax error ({problem})"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: expected valid YAML, got {exc}") from None
    if not isinstance(data, dict):
        kind = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"{source}: line 1: expected a mapping of config keys, got {kind}")
    return build_experiment(
        data, source=source, base_dir=base_dir, text=text, lines=lines, problems=repeated
    )


def _duplicate_keys(node: yaml.Node | None, source: str) -> list[str]:
    """A problem for each key written twice in one mapping, at any depth, naming both lines.

    ``safe_load`` keeps the last value of a repeated key without a word, so a config whose
    ``alpha:`` is written twice runs with whichever came last. Keys are compared as YAML
    reads them (tag and text); a merge key (``<<``) may bring keys that the mapping then
    overrides, as YAML means it, so only the keys written in the mapping itself count."""
    problems: list[str] = []
    visited: set[int] = set()  # an alias names a node already walked
    pending: list[tuple[yaml.Node, tuple]] = [] if node is None else [(node, ())]
    while pending:
        current, path = pending.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        if isinstance(current, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    sub = (*path, key.value)
                    line = key.start_mark.line + 1
                    seen = (key.tag, key.value)
                    if key.tag == "tag:yaml.org,2002:merge":
                        pass
                    elif seen in first:
                        lines = {sub: line}
                        problems.append(
                            _format(
                                source,
                                lines,
                                sub,
                                f"expected each key once in a mapping, got {key.value!r} again "
                                f"(first at line {first[seen]}, again at line {line}; YAML would "
                                "keep the last one)",
                            )
                        )
                    else:
                        first[seen] = line
                    pending.append((value, sub))
        elif isinstance(current, yaml.SequenceNode):
            pending.extend((item, (*path, index)) for index, item in enumerate(current.value))
    return problems


def _check_structure(text: str, source: str) -> None:
    """Refuse YAML that PyYAML would build only by deep recursion or endless expansion.

    PyYAML's composer recurses once per nesting level, and a recursive alias
    (``control: &c {columns: *c}``) makes a node that contains itself, which validation
    then walks forever; both end in a RecursionError instead of a message. This reads the
    parser's event stream (no recursion) and raises :class:`ConfigError` with the line for
    nesting deeper than :data:`MAX_DEPTH`, for an alias used inside the node it names, and
    for aliases that expand to more than :data:`MAX_VALUES` values (an "alias bomb").
    """
    open_nodes: list[list[int]] = []  # per open collection: [its id, values so far]
    latest: dict[str, int] = {}  # anchor -> id of the node it names now
    sizes: dict[int, int] = {}  # id of a finished anchored node -> values it expands to
    total = 0
    for number, event in enumerate(yaml.parse(text, Loader=yaml.SafeLoader)):
        line = event.start_mark.line + 1
        added = 0
        if isinstance(event, yaml.CollectionStartEvent):
            if event.anchor is not None:
                latest[event.anchor] = number
            open_nodes.append([number, 1])
            if len(open_nodes) > MAX_DEPTH:
                raise ConfigError(
                    f"{source}: line {line}: expected YAML nested at most {MAX_DEPTH} levels "
                    "deep, got deeper nesting"
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            node, added = open_nodes.pop()
            sizes[node] = added
        elif isinstance(event, yaml.ScalarEvent):
            added = 1
            if event.anchor is not None:
                latest[event.anchor] = number
                sizes[number] = 1
        elif isinstance(event, yaml.AliasEvent):
            node = latest.get(event.anchor)
            if node is not None and node not in sizes:
                raise ConfigError(
                    f"{source}: line {line}: expected an alias to a finished YAML node, got "
                    f"*{event.anchor} inside the node &{event.anchor} it names (a recursive alias)"
                )
            added = sizes.get(node, 1)  # an undefined alias: the composer reports it
        else:
            continue
        if open_nodes:
            open_nodes[-1][1] += added
        else:
            total += added
        if total + sum(count for _, count in open_nodes) > MAX_VALUES:
            raise ConfigError(
                f"{source}: line {line}: expected a config of at most {MAX_VALUES:,} values "
                "with its aliases expanded, got more"
            )


def build_experiment(
    data: dict[str, Any],
    *,
    source: str = "<config>",
    base_dir: Path | None = None,
    text: str = "",
    lines: dict[tuple, int] | None = None,
    problems: list[str] | None = None,
) -> Experiment:
    """Validate a config given as a mapping (what the YAML holds), e.g. built by the CLI.

    Every problem is reported at once, one a line, sorted by the config's line: the keys
    that the models refuse (unknown keys, values of the wrong type) are set aside and the
    rest is validated again, so that the cross-field checks (metric names, arm names, file
    paths, ...) still run and report their own problems; a problem that follows only from a
    key set aside is not reported twice. ``problems`` are found beforehand (by the YAML
    reader: repeated keys) and reported with the others.
    """
    base_dir = base_dir or Path.cwd()
    lines = lines or {}
    errors: list[str] = list(problems or [])
    data = dict(data)
    aside: list[tuple] = []  # the field paths set aside
    for key in sorted(_SOURCE_FIELDS & set(data)):
        errors.append(_format(source, lines, (key,), "unknown key (reserved)"))
        del data[key]
        aside.append((key,))
    experiment, more, pruned = _validated(data, source, text, lines)
    errors.extend(more)
    aside.extend(pruned)
    if experiment is not None:
        experiment, more = _check_semantics(experiment, source, lines, base_dir)
        errors.extend(p for p in more if not _follows_from(p, aside))
    if errors:
        errors = sorted(errors, key=_line_of)
        head = f"{source}: {len(errors)} problems in the config:" if len(errors) > 1 else ""
        raise ConfigError("\n".join([head, *errors]) if head else errors[0])
    assert experiment is not None
    return experiment


#: How many times :func:`_validated` sets refused keys aside and validates again.
_PASSES = 4


def _validated(
    data: dict[str, Any], source: str, text: str, lines: dict
) -> tuple[Experiment | None, list[str], list[tuple]]:
    """The experiment the models make of ``data``, with the keys they refuse set aside; the
    problems of those keys, and their field paths. None when what is left cannot make an
    experiment (a required key was refused): the problems found are still returned."""
    import copy

    data = copy.deepcopy(data)
    problems: list[str] = []
    aside: list[tuple] = []
    for _ in range(_PASSES):
        try:
            experiment = Experiment.model_validate({**data, "source": source, "text": text})
        except ValidationError as exc:
            found = _pydantic_errors(exc, source, lines)
            new = [
                p
                for p in found
                if p not in problems and not (p.kind == "missing" and _follows_from(p, aside))
            ]
            if not new:  # only what setting keys aside made missing: nothing more to learn
                return None, problems, aside
            problems.extend(new)
            removed = [_set_aside(data, p.raw_loc) for p in new]
            if None in removed:
                return None, problems, aside
            aside.extend(r for r in removed if r is not None)
            continue
        return experiment, problems, aside
    return None, problems, aside


def _set_aside(data: dict[str, Any], loc: tuple) -> tuple | None:
    """Delete from ``data`` the deepest mapping key along ``loc`` (a refused value; a list
    item is not deleted alone, which would renumber the items after it: its whole list is);
    its field path, or None when there is none (a refusal of the whole config)."""
    container: Any = data
    parent: dict | None = None
    key: Any = None
    path: tuple = ()
    deepest: tuple[dict, Any, tuple] | None = None
    for part in loc:
        if isinstance(container, dict) and not isinstance(part, int) and part in container:
            parent, key = container, part
            path = (*path, part)
            deepest = (parent, key, path)
            container = container[part]
        elif isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container):
            path = (*path, part)
            container = container[part]
        else:
            break  # a union's member name, or a key that is not there
    if deepest is None:
        return None
    parent, key, path = deepest
    parent.pop(key, None)
    return path


def _follows_from(problem: str, aside: list[tuple]) -> bool:
    """Whether ``problem`` is about a field set aside (or one inside it)."""
    about = getattr(problem, "loc", None)
    if about is None:
        return False
    return any(about[: len(loc)] == loc for loc in aside)


def _line_of(problem: str) -> tuple[int, int]:
    """Sort key of a problem: its config line (problems without one last)."""
    line = getattr(problem, "line", None)
    return (0, line) if line is not None else (1, 0)


# --------------------------------------------------------------------------- checks


def _check_semantics(
    exp: Experiment, source: str, lines: dict, base_dir: Path
) -> tuple[Experiment, list[str]]:
    """Cross-field checks, arm names, metric names and file paths; returns a resolved copy."""
    from abrank.metrics import parse_metric

    errors: list[str] = []

    def resolve(loc: tuple, value: str) -> str:
        from abrank.io.files import path_problem

        problem = path_problem(base_dir / value)
        if problem is not None and problem not in ("no such file", "a folder"):
            errors.append(_format(source, lines, loc, f"expected a file, got {value!r}: {problem}"))
            return str(base_dir / value)
        full = (base_dir / value).resolve() if not Path(value).is_absolute() else Path(value)
        if is_dated(value):  # the file of each date is looked for when that date runs
            problem = check_template(value)
            if problem is not None:
                errors.append(_format(source, lines, loc, problem))
        elif loc[0] in ("log", "control", "treatments") and is_pattern(value, full):
            problem = pattern_problem(value, full)  # a glob or a folder: several files
            if problem is not None:
                errors.append(_format(source, lines, loc, problem))
        elif not full.exists():
            errors.append(
                _format(
                    source,
                    lines,
                    loc,
                    f"expected an existing file, got {value!r} ({full} does not exist)",
                )
            )
        elif full.is_dir():
            errors.append(_format(source, lines, loc, f"expected a file, got the folder {value!r}"))
        return str(full)

    reserved = reserved_problem(exp.name)  # its readout folder would be abrank's own file
    if reserved is not None:
        errors.append(_format(source, lines, ("name",), reserved))
    log = exp.log
    if log is not None:
        log = log.model_copy(update={"path": resolve(("log", "path"), log.path)})
    arms = []
    seen: dict[str, tuple] = {}
    for index, arm in enumerate(exp.arms):
        loc = ("control",) if index == 0 else ("treatments", index - 1)
        default = (
            "control"
            if index == 0
            else ("treatment" if len(exp.treatments) == 1 else f"treatment-{index}")
        )
        name = arm.name or default
        if name in seen:
            errors.append(
                _format(
                    source, lines, (*loc, "name"), f"expected a unique arm name, got {name!r} again"
                )
            )
        seen[name] = loc
        path = arm.path
        if path is not None and log is not None and not exp.interleaved:
            errors.append(
                _format(
                    source,
                    lines,
                    (*loc, "path"),
                    "expected no path: the experiment's `log` holds every arm (its arm column "
                    f"names the arm), got {path!r}",
                )
            )
        elif path is None and log is None and not exp.interleaved:
            errors.append(
                _format(
                    source,
                    lines,
                    loc,
                    "path: expected the arm's log file (or one `log:` for every arm), got nothing",
                    about=(*loc, "path"),
                )
            )
        elif path is not None:
            path = resolve((*loc, "path"), path)
        arms.append(arm.model_copy(update={"name": name, "label": arm.label or name, "path": path}))

    judgments = exp.judgments
    if judgments is not None:
        judgments = judgments.model_copy(
            update={"path": resolve(("judgments", "path"), judgments.path)}
        )
    segments = exp.segments
    if segments.attributes is not None:
        attributes = segments.attributes.model_copy(
            update={"path": resolve(("segments", "attributes", "path"), segments.attributes.path)}
        )
        segments = segments.model_copy(update={"attributes": attributes})

    def metric_name(name: str) -> str:
        """The canonical name of a metric (a credit of the interleaved design)."""
        if not exp.interleaved:
            return parse_metric(name).name
        credit = credit_name(name)
        if credit is None:
            raise ConfigError(credit_problem(name))
        return credit

    canonical: list[str] = []
    for index, name in enumerate(exp.metrics):
        try:
            metric = metric_name(name)
        except ConfigError as exc:
            errors.append(_format(source, lines, ("metrics", index), str(exc)))
            continue
        if metric in canonical:
            errors.append(
                _format(
                    source,
                    lines,
                    ("metrics", index),
                    f"expected each metric once, got {name!r} again",
                )
            )
        canonical.append(metric)
    primary = exp.primary_metric
    if primary is not None:
        try:
            primary = metric_name(primary)
        except ConfigError as exc:
            errors.append(_format(source, lines, ("primary_metric",), str(exc)))
        else:
            if canonical and primary not in canonical:
                errors.append(
                    _format(
                        source,
                        lines,
                        ("primary_metric",),
                        f"expected one of the metrics {canonical}, got {exp.primary_metric!r}",
                    )
                )
    elif canonical:
        primary = canonical[0]

    analysis, more = _check_analysis(exp.analysis, source, lines)
    errors.extend(more)
    if exp.interleaved:
        errors += [_format(source, lines, loc, text) for loc, text in interleaved_problems(exp)]
    else:
        analysis, more = _check_online(
            exp, analysis, [a.name for a in arms], source, lines, resolve
        )
        errors.extend(more)

    output = exp.output
    if output is not None:
        if is_dated(output) and check_template(output) is not None:
            errors.append(_format(source, lines, ("output",), str(check_template(output))))
        if "\0" in output:
            errors.append(
                _format(source, lines, ("output",), "expected a folder path, got a path holding a NUL byte")
            )
        # made absolute, not resolved: a symbolic link stays one, and is refused as --out's is
        output = str(base_dir / output) if not Path(output).is_absolute() else output
    logs = [exp.log.path] if exp.log is not None else [arm.path for arm in exp.arms]
    if isinstance(exp.window, CumulativeWindow) and not any(is_dated(p) for p in logs):
        errors.append(
            _format(
                source,
                lines,
                ("window",),
                "expected {date} in the logs' paths with a cumulative window (it reads one "
                "file per date), got paths without it",
            )
        )
    resolved = exp.model_copy(
        update={
            "control": arms[0],
            "treatments": arms[1:],
            "judgments": judgments,
            "log": log,
            "segments": segments,
            "metrics": canonical or exp.metrics,
            "primary_metric": primary,
            "analysis": analysis,
            "output": output,
        }
    )
    return resolved, errors


def _check_analysis(
    analysis: AnalysisConfig, source: str, lines: dict
) -> tuple[AnalysisConfig, list[str]]:
    """Test and correction names checked against the stats registry (the tests of the
    design); returns a copy with canonical names (aliases resolved) and the problems."""
    errors: list[str] = []
    design = analysis.design

    def test(loc: tuple, value: str) -> str:
        problem = stats_registry.test_problem(value, design)
        if problem:
            errors.append(_format(source, lines, ("analysis", *loc), problem))
            return value
        return stats_registry.test_spec(value).name

    def correction(key: str) -> str:
        value = getattr(analysis, key)
        problem = stats_registry.correction_problem(value)
        if problem:
            errors.append(_format(source, lines, ("analysis", key), problem))
            return value
        return stats_registry.correction_spec(value).name

    tests = analysis.tests
    if design == INTERLEAVED and "tests" not in analysis.model_fields_set:
        tests = list(INTERLEAVED_TESTS)
    update = {
        "primary_test": test(("primary_test",), analysis.primary_test),
        "tests": [test(("tests", index), name) for index, name in enumerate(tests)],
        "correction": correction("correction"),
        "segment_correction": correction("segment_correction"),
    }
    update.update(_sequential_update(analysis, update, source, lines, errors))
    return analysis.model_copy(update=update), errors


def _sequential_update(
    analysis: AnalysisConfig, update: dict, source: str, lines: dict, errors: list[str]
) -> dict:
    """``analysis.sequential: true`` makes ``sequential`` the primary test and adds it and
    ``t`` (the fixed-horizon second opinion) to the tests; an explicit other primary test
    beside it is a problem. A primary test ``sequential`` alone turns ``sequential`` on
    (the tests stay those listed)."""
    primary = update["primary_test"]
    explicit = "primary_test" in analysis.model_fields_set
    if analysis.sequential and explicit and primary != "sequential":
        errors.append(
            _format(
                source,
                lines,
                ("analysis", "primary_test"),
                f"expected 'sequential' (or no primary_test) with analysis.sequential: true, "
                f"got {analysis.primary_test!r}",
            )
        )
        return {}
    if not analysis.sequential:
        return {"sequential": True} if primary == "sequential" else {}
    tests = list(update["tests"])
    tests += [name for name in ("t", "sequential") if name not in tests]
    return {"primary_test": "sequential", "tests": tests}


def _check_online(
    exp: Experiment, analysis: AnalysisConfig, arms: list[str], source: str, lines: dict, resolve
) -> tuple[AnalysisConfig, list[str]]:
    """The online keys: a unit for impression logs, the independent design, a split over
    the arms' names, covariates only with a unit; returns a copy with resolved paths."""
    errors: list[str] = []

    def problem(loc: tuple, message: str) -> None:
        errors.append(_format(source, lines, ("analysis", *loc), message))

    online = False
    try:
        online = exp.online
    except ConfigError:  # a metric name that does not parse: reported with its own line
        online = exp.log is not None
    if analysis.unit is not None and analysis.design != "independent":
        problem(
            ("design",),
            "expected independent with analysis.unit (units are randomized to arms), "
            f"got {analysis.design!r}",
        )
    elif online and analysis.unit is None:
        problem(
            ("unit",),
            "expected the randomization unit of the online log (e.g. user_id, or "
            "impression_id when impressions were randomized), got none",
        )
    elif online and analysis.design != "independent":
        problem(("design",), f"expected independent for an online log, got {analysis.design!r}")
    split = analysis.expected_split
    if split is not None:
        unknown = [name for name in split if name not in arms]
        absent = [name for name in arms if name not in split]
        if unknown or absent:
            found = ", ".join(split) or "none"
            problem(
                ("expected_split",),
                f"expected a share for each arm ({', '.join(arms)}), got {found}",
            )
        for name, share in split.items():
            if not (math.isfinite(share) and share > 0):
                problem(("expected_split", name), f"expected a share > 0, got {share!r}")
    update: dict = {}
    if analysis.covariates is not None:
        if analysis.unit is None:
            problem(("covariates",), "expected analysis.unit beside covariates, got no unit")
        path = resolve(("analysis", "covariates", "path"), analysis.covariates.path)
        update["covariates"] = analysis.covariates.model_copy(update={"path": path})
    return (analysis.model_copy(update=update) if update else analysis), errors


# --------------------------------------------------------------------------- messages


def _line_index(node: yaml.Node | None) -> dict[tuple, int]:
    """Map each field path (keys and list indexes) to its 1-based line in the YAML text."""
    index: dict[tuple, int] = {}

    def walk(current: yaml.Node, path: tuple) -> None:
        index[path] = current.start_mark.line + 1
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                sub = (*path, key.value)
                walk(value, sub)
                index[sub] = key.start_mark.line + 1
        elif isinstance(current, yaml.SequenceNode):
            for position, item in enumerate(current.value):
                walk(item, (*path, position))

    if node is not None:
        walk(node, ())
    return index


def _field_path(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


class _Problem(str):
    """One problem's message, with the config line it names (None when it names none),
    the field path it is about, the field path as the models gave it, and its kind."""

    line: int | None
    loc: tuple
    raw_loc: tuple
    kind: str


def _format(
    source: str,
    lines: dict,
    loc: tuple,
    message: str,
    *,
    about: tuple | None = None,
    raw_loc: tuple | None = None,
    kind: str = "",
) -> str:
    line = None
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            line = lines[loc[:cut]]
            break
    where = f"line {line}: " if line else ""
    problem = _Problem(f"{source}: {where}{_field_path(loc)}: {message}")
    problem.line = line
    problem.loc = loc if about is None else about
    problem.raw_loc = loc if raw_loc is None else raw_loc
    problem.kind = kind
    return problem


def _known_keys(loc: tuple) -> list[str]:
    """The keys allowed at a field path, found by walking the models along it."""
    model: Any = Experiment
    for part in loc:
        if isinstance(part, int):
            continue
        field = (
            model.model_fields.get(part)
            if isinstance(model, type) and issubclass(model, BaseModel)
            else None
        )
        if field is None:
            return []
        model = _model_of(field.annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [name for name in model.model_fields if name not in _SOURCE_FIELDS]
    return []


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _pydantic_errors(exc: ValidationError, source: str, lines: dict) -> list[str]:
    messages = []
    for error in exc.errors():
        loc = tuple(
            part
            for part in error["loc"]
            if not (isinstance(part, str) and part.startswith("literal["))
        )
        kind = error["type"]
        given = error.get("input")
        if kind == "extra_forbidden":
            key = str(loc[-1])
            known = _known_keys(loc[:-1])
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"unknown key{hint} (known keys: {', '.join(known)})"
        elif kind == "missing":
            message = "expected this required key, got nothing"
        else:
            expected = error["msg"]
            for prefix in (
                "Input should be ",
                "Value should have ",
                "Value error, ",
                "String should ",
            ):
                if expected.startswith(prefix):
                    expected = expected[len(prefix) :]
                    break
            if kind == "string_pattern_mismatch":
                expected = "a name of letters, digits, '.', '_' or '-'"
            message = f"expected {expected}, got {_short(given)}"
        messages.append(
            _format(source, lines, loc, message, raw_loc=tuple(error["loc"]), kind=kind)
        )
    return messages


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
