"""``abrank run`` over configs, folders of configs and dates: one outcome per run, one exit code.

A scheduler runs abrank unattended, so a batch keeps going past a bad config or a date
whose logs have not landed yet, reports each run on one line, and exits with the worst
outcome (DESIGN.md "Exit codes"): 1 an internal error, 2 bad input, 3 an alert named by
``--fail-on`` fired (its readout written), 99 an input of the date does not exist yet and
``--missing skip`` was given (nothing written), 0 otherwise.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abrank.config import Experiment
from abrank.config.dates import date_range, parse_date
from abrank.design_registry import DESIGNS
from abrank.errors import AbrankError, ConfigError, write_failure

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT, EXIT_ALERT = 0, 1, 2, 3
#: a dated input is not there yet and ``--missing skip`` was given (Airflow's skip code)
EXIT_SKIPPED = 99
#: the run was stopped by SIGTERM (128 + 15, as a shell reports it)
EXIT_TERMINATED = 143
#: exit codes from the best outcome to the worst
SEVERITY = (EXIT_OK, EXIT_SKIPPED, EXIT_ALERT, EXIT_BAD_INPUT, EXIT_FAILURE)
CONFIG_SUFFIXES = (".yaml", ".yml")


def worst(codes: Iterable[int]) -> int:
    """The worst of some runs' exit codes (0 for none)."""
    return max(codes, key=SEVERITY.index, default=EXIT_OK)


def config_files(paths: Sequence[str | Path]) -> list[Path]:
    """The config files named: a folder stands for its ``*.yaml`` / ``*.yml`` files, sorted
    by name (not its subfolders); a folder without any is a ConfigError."""
    found: list[Path] = []
    for path in map(Path, paths):
        if _is_folder(path):
            inside = sorted(
                p for p in path.iterdir() if p.suffix in CONFIG_SUFFIXES and p.is_file()
            )
            if not inside:
                raise ConfigError(
                    f"{path}: expected a folder of experiment configs (*.yaml), got none in it"
                )
            found += inside
        else:
            found.append(path)
    return found


def _is_folder(path: str | Path) -> bool:
    """``path`` is a folder (an over-long name or a NUL byte is not: loading names it)."""
    from abrank.io.files import path_problem

    return path_problem(path) == "a folder"


def run_dates(
    date: str | None, start: str | None, end: str | None, today: dt.date | None = None
) -> list[dt.date | None]:
    """The dates to run: ``--date``, every date of ``--from``..``--to`` (``--to`` defaults to
    today; :func:`run_batch` then stops at the last date whose inputs exist), or ``[None]``
    for an undated run."""
    if date is not None and (start is not None or end is not None):
        raise ConfigError("--date: expected either --date or --from/--to, got both")
    if date is not None:
        return [parse_date(date, "--date")]
    if end is not None and start is None:
        raise ConfigError("--to: expected --from beside it, got none")
    if start is None:
        return [None]
    first = parse_date(start, "--from")
    last = parse_date(end, "--to") if end is not None else (today or dt.date.today())
    return list(date_range(first, last))


@dataclass(frozen=True)
class RunOutcome:
    """How one (config, date) run of a batch ended.

    ``code`` is its exit code; ``status`` one word (``ok``, ``alert``, ``skipped``,
    ``error``, ``failed``); ``detail`` what happened (the verdicts, the error, the missing
    file); ``folder`` the readout written, if any.
    """

    config: str
    experiment: str | None
    date: str | None
    code: int
    status: str
    detail: str
    folder: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-safe builtins."""
        return dict(self.__dict__)

    def line(self) -> str:
        """The outcome on one line: ``name date: status: detail``."""
        who = self.experiment or self.config
        when = f" {self.date}" if self.date else ""
        return f"{who}{when}: {self.status}: {self.detail}"


def verdict_counts(summary: dict[str, Any]) -> str:
    """The overall verdicts of a readout, counted: ``3 wins, 1 loss of 4 comparisons``."""
    overall = [c for c in summary.get("comparisons", []) if c.get("segment") is None]
    counts: dict[str, int] = {}
    for comparison in overall:
        counts[comparison["verdict"]] = counts.get(comparison["verdict"], 0) + 1
    words = {"win": ("win", "wins"), "loss": ("loss", "losses")}
    parts = []
    for verdict in ("win", "loss", "inconclusive"):
        n = counts.get(verdict, 0)
        if n:
            one, many = words.get(verdict, (verdict, verdict))
            parts.append(f"{n} {one if n == 1 else many}")
    total = len(overall)
    return f"{', '.join(parts) or 'no verdict'} of {total} comparison{'s' * (total != 1)}"


#: the outputs made of a readout's explanation tables; a run writing none of them skips them
EXPLAINED_FORMATS = frozenset({"csv", "html", "md"})


@dataclass(frozen=True)
class RunOptions:
    """The options of ``abrank run`` that every run of a batch shares."""

    out: str | None = None
    seed: int | None = None
    formats: tuple[str, ...] = ("html", "md", "json", "csv")
    fail_on: tuple[str, ...] = ()
    missing: str = "error"  # or "skip"
    history: bool = True
    quiet: bool = False
    debug: bool = False
    engine: str | None = None  # overrides the configs' engine
    verbose: bool = False  # say where each run's time goes (abrank.timings)
    started: float | None = None  # when the process started (perf_counter), for verbose

    @property
    def explains(self) -> bool:
        """Whether an output of :attr:`formats` holds the explanation tables: csv writes
        them (queries.parquet, rankings.parquet), html and md report what moved from them."""
        return bool(EXPLAINED_FORMATS & set(self.formats))

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-safe builtins."""
        return dict(self.__dict__)


@dataclass(frozen=True)
class _Analysed:
    """A run whose readout is computed, waiting to be written and recorded."""

    config: str
    experiment: Experiment
    date: str | None
    folder: Path
    recording: Any
    readout: Any
    clock: Any = None  # the run's StageClock, with --verbose


def run_batch(
    configs: Sequence[str | Path],
    dates: tuple[str | None, str | None, str | None],
    options: RunOptions,
    *,
    large_logs: Callable[[], None] | None = None,
) -> int:
    """Run every config (folders: their configs) for every date; return the exit code.

    ``dates`` is (``--date``, ``--from``, ``--to``). A single run raises its errors (the
    CLI reports them); a batch reports each run on one line and goes on. Runs are written
    in order, in a batch each one while the next is computed (the readout of a date is
    written, and its rows stored, before the next date's reads the history; SIGTERM then
    lets the readout being written complete, and stops the rest). ``large_logs`` is called
    once before the first experiment whose design reads large logs (the CLI's memory
    settings; :attr:`abrank.designs.Design.large_logs`).
    """
    from abrank.config import load_experiment
    from abrank.workers import start_chart_workers

    days = run_dates(*dates)
    paths = config_files(configs)
    several = len(paths) > 1 or any(_is_folder(p) for p in configs)
    batch = several or len(days) > 1
    if {"html", "md"} & set(options.formats):
        start_chart_workers()  # they import matplotlib while this process computes
    outcomes: list[RunOutcome] = []

    def report(outcome: RunOutcome) -> None:
        outcomes.append(outcome)
        if batch:
            print(outcome.line(), file=sys.stdout if outcome.code == 0 else sys.stderr)

    with ThreadPoolExecutor(1, thread_name_prefix="abrank-writer") as writer:
        pending: Future | None = None
        try:
            for path in paths:
                try:
                    experiment = load_experiment(path)
                except AbrankError as exc:
                    if options.debug or not batch:
                        raise
                    report(_failed(str(path), None, None, exc))
                    continue
                if large_logs is not None and DESIGNS.of(experiment).large_logs:
                    large_logs()
                    large_logs = None
                open_ended = dates[1] is not None and dates[2] is None
                for day in _through_last_input(experiment, days) if open_ended else days:
                    step = _analyse(experiment, day, several, batch, options)
                    if pending is not None:
                        report(pending.result())
                        pending = None
                    if isinstance(step, RunOutcome):
                        report(step)
                        continue
                    if batch:
                        pending = writer.submit(_finish, step, batch, options)
                    else:  # in this thread: SIGTERM stops the one run where it stands
                        report(_finish(step, batch, options))
            if pending is not None:
                report(pending.result())
                pending = None
        finally:
            if pending is not None:  # stopped: let the readout being written complete
                pending.exception()
    return worst(outcome.code for outcome in outcomes)


def _through_last_input(experiment: Experiment, days: list[dt.date | None]) -> list:
    """The dates of a backfill without ``--to`` that run: through the last one whose inputs
    all exist. The days after it are not there yet: they are not runs (no skip, no error,
    no exit code), and a note says where the backfill stopped. With no such date, the first
    date alone, whose missing input is then reported."""
    from abrank.inputs import missing_inputs

    if experiment.source is None or not experiment.dated:
        return days
    for index in range(len(days) - 1, -1, -1):
        try:
            complete = not missing_inputs(experiment.for_date(days[index]))
        except AbrankError:  # reported by the run of that date
            complete = True
        if complete:
            break
    else:
        index = 0
    if index < len(days) - 1:
        print(
            f"abrank: note: {experiment.name}: --from {days[0]} without --to runs through "
            f"{days[index]}, the last date whose inputs exist ({days[index + 1]} through "
            f"{days[-1]} are not there yet)",
            file=sys.stderr,
        )
    return days[: index + 1]


def _failed(config: str, name: str | None, date: str | None, exc: BaseException) -> RunOutcome:
    exc = write_failure(exc) or exc
    if isinstance(exc, AbrankError):
        return RunOutcome(config, name, date, EXIT_BAD_INPUT, "error", str(exc))
    reason = f"internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)"
    return RunOutcome(config, name, date, EXIT_FAILURE, "failed", reason)


def _analyse(
    experiment: Experiment, date: dt.date | None, several: bool, batch: bool, options: RunOptions
) -> _Analysed | RunOutcome:
    """Compute one (config, date) run's readout; or its outcome when it ends here (an input
    not there yet, an error in a batch)."""
    from abrank.analysis import check_output_folder, display_path, readout_folder, run_experiment
    from abrank.analysis.record import recording_for
    from abrank.inputs import missing_input_error, resolve_inputs

    config = experiment.source
    day = None if date is None else date.isoformat()
    try:
        run = experiment.for_date(date)  # an undated run of a dated config: the run says so
        inputs = resolve_inputs(run) if day is not None else None
        missing = inputs.missing() if inputs is not None else []
        if missing and day is not None:  # (only a dated run has missing inputs)
            key, file = missing[0]
            if options.missing == "skip":
                detail = f"{key}: {display_path(file)} does not exist yet (nothing written)"
                if not batch:
                    print(f"abrank: skipped: {experiment.name} {day}: {detail}", file=sys.stderr)
                return RunOutcome(config, experiment.name, day, EXIT_SKIPPED, "skipped", detail)
            raise missing_input_error(key, file, day)
        out: str | Path | None = options.out
        out = Path(out) / experiment.name if out and several else out
        folder = readout_folder(run, out)
        # a refused output path fails before the analysis runs
        check_output_folder(folder, within=folder.parent if run.date is not None else None)
        recording = recording_for(run, folder, out) if options.history else None
        progress = None if batch or options.quiet else _progress
        clock = None
        timing: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if options.verbose and not batch:  # each stage timed, the engine's statements too
            from abrank.timings import StageClock, statements_timed

            clock = StageClock(options.started, echo=progress)
            progress, timing = clock.progress, statements_timed(clock.statement)
        with timing:
            readout = run_experiment(
                run,
                seed=options.seed,
                progress=progress,
                engine=options.engine,
                inputs=inputs,
                explain=options.explains,
            )
    except Exception as exc:
        if options.debug or not batch:
            raise
        return _failed(config, experiment.name, day, exc)
    return _Analysed(config, run, day, folder, recording, readout, clock)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _finish(step: _Analysed, batch: bool, options: RunOptions) -> RunOutcome:
    """Write one computed run, record it, tell what it found; its outcome."""
    from abrank.analysis import write_readout
    from abrank.analysis.alerts import fired_alerts
    from abrank.analysis.record import attach_history, store_run
    from abrank.readout.typed import readout_summary
    from abrank.render.headline import alarms, headline_lines

    name, folder = step.experiment.name, step.folder
    # where a dated run's rows were stored, said after the run (an undated run's default
    # readout is recorded too, under the day it ran: its output is left as it was)
    recorded = step.recording is not None and step.date is not None
    stored = step.recording.file if recorded else None
    try:
        readout, notes = step.readout, []
        if step.recording is not None:
            readout, rows = attach_history(readout, step.experiment, step.recording)
        if step.clock is not None:
            step.clock.begin(f"writing the readout ({', '.join(options.formats)})")
        write_readout(readout, folder, formats=options.formats)
        if step.recording is not None:
            if step.clock is not None:
                step.clock.begin("recording the run in the history")
            notes = store_run(step.recording, rows)
    except Exception as exc:
        if options.debug or not batch:
            raise
        return _failed(step.config, name, step.date, exc)
    summary = readout.summary
    if not options.quiet and not batch:
        typed = readout_summary(readout)  # the reports' typed summary, not converted again
        print(f"{summary['experiment']['title']}")
        if typed.decision is not None:
            print(typed.decision.headline)
        for alarm in alarms(typed):
            print(f"ALARM: {alarm}")
        for line in headline_lines(typed):
            print(line)
        print(f"readout written to {folder}/")
        if stored is not None:
            print(f"history: {stored}")
        shown = set(alarms(typed))
        for warning in summary["diagnostics"]["warnings"]:
            if warning not in shown:
                print(f"note: {warning}", file=sys.stderr)
        notes = [note for note in notes if note not in summary["diagnostics"]["warnings"]]
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    fired = fired_alerts(summary, options.fail_on)
    for reason in fired:
        print(f"abrank: alert: {name}: {reason}", file=sys.stderr)
    decided = (summary.get("decision") or {}).get("status")
    detail = f"{verdict_counts(summary)}; readout {folder}/"
    detail = f"{decided}; {detail}" if decided else detail
    if stored is not None:
        detail += f"; history {stored}"
    code, status = (EXIT_ALERT, "alert") if fired else (EXIT_OK, "ok")
    if step.clock is not None:
        step.clock.print()
    return RunOutcome(step.config, name, step.date, code, status, detail, str(folder))
