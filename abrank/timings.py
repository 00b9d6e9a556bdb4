"""Where a run's time goes: ``abrank run --verbose``.

A run says what it does as it goes (its progress lines: "aggregating on duckdb",
"comparing arms", ...); :class:`StageClock` times each of those stages from one line to
the next, the start-up before the first (the interpreter and the imports of the command),
and the writing of the readout after the last. The SQL engines report each statement they
run (:func:`statements_timed`), so that a stage that reads the logs in an engine shows how
much of it the engine took, statement by statement, and how much was Python around it.
Only wall time is measured: nothing here changes what a run computes.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

__all__ = ["Stage", "StageClock", "process_started", "record_statement", "statements_timed"]

#: Where the SQL backends report each statement (what it was, seconds); None: nobody asked.
_statement_clock: contextvars.ContextVar[Callable[[str, float], None] | None] = (
    contextvars.ContextVar("abrank_statement_clock", default=None)
)


@contextlib.contextmanager
def statements_timed(report: Callable[[str, float], None]) -> Iterator[None]:
    """While the block runs, every statement an SQL backend runs is reported to ``report``
    (what it was, its wall seconds)."""
    token = _statement_clock.set(report)
    try:
        yield
    finally:
        _statement_clock.reset(token)


def record_statement(what: str, seconds: float) -> None:
    """A backend's statement done (reported when :func:`statements_timed` asked for it)."""
    report = _statement_clock.get()
    if report is not None:
        report(what, seconds)


def process_started() -> float | None:
    """When this process started, on :func:`time.perf_counter`'s clock (Linux: from
    ``/proc``, to a clock tick; None where that cannot be read)."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as uptime:
            since_boot = float(uptime.read().split()[0])
        age = since_boot - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return time.perf_counter() - max(age, 0.0)


@dataclass
class Stage:
    """One stage of a run: what it was, when it began and ended (perf_counter seconds), and
    the engine statements run in it (what, seconds)."""

    name: str
    start: float
    end: float | None = None
    statements: list[tuple[str, float]] = field(default_factory=list)

    @property
    def seconds(self) -> float:
        return (self.end if self.end is not None else time.perf_counter()) - self.start

    def to_dict(self) -> dict[str, object]:
        """JSON-safe builtins."""
        return {
            "name": self.name,
            "seconds": self.seconds,
            "statements": [list(s) for s in self.statements],
        }


class StageClock:
    """Times a run's stages: :meth:`progress` is its progress callback (each message begins a
    stage), :meth:`begin` begins one by name, :meth:`statement` is where the engine's
    statements are counted, :meth:`lines` is the breakdown printed at the end."""

    def __init__(self, started: float | None = None, *, echo: Callable[[str], None] | None = None):
        now = time.perf_counter()
        self.stages: list[Stage] = []
        if started is not None and started < now:
            self.stages.append(Stage("start-up: Python and the command's imports", started, now))
        self.stages.append(Stage("reading the config, resolving the inputs", now))
        self.echo = echo

    def begin(self, name: str) -> None:
        """End the current stage and begin ``name``."""
        now = time.perf_counter()
        self.stages[-1].end = now
        self.stages.append(Stage(name, now))

    def progress(self, message: str) -> None:
        """A progress line (``[  1.2s] what``): shown (when echoing) and begun as a stage."""
        if self.echo is not None:
            self.echo(message)
        name = message.split("] ", 1)[1] if message.startswith("[") and "] " in message else message
        self.begin(name)

    def statement(self, what: str, seconds: float) -> None:
        """An engine statement of the current stage."""
        self.stages[-1].statements.append((what, seconds))

    def lines(self) -> list[str]:
        """Each stage's seconds (with its engine statements beneath it), then the total."""
        self.stages[-1].end = self.stages[-1].end or time.perf_counter()
        out = ["where the time went (wall seconds):"]
        for stage in self.stages:
            out.append(f"  {stage.seconds:7.2f}  {stage.name}")
            if stage.statements:
                inside = sum(seconds for _, seconds in stage.statements)
                for what, seconds in stage.statements:
                    out.append(f"  {'':7}    {seconds:7.2f}  engine: {what}")
                out.append(
                    f"  {'':7}    {stage.seconds - inside:7.2f}  outside the engine's statements"
                )
        total = self.stages[-1].end - self.stages[0].start
        out.append(f"  {total:7.2f}  in all")
        return out

    def print(self) -> None:
        """The breakdown, on stderr."""
        print("\n".join(self.lines()), file=sys.stderr, flush=True)
