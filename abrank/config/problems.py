"""The words of a config problem: file, YAML line, field path, what was expected, what came.

Every check of a config adds its problems to the config's one :class:`Checks`; each
problem is a :class:`Problem`, a string that also carries its line and field path, so that
all of them are reported at once, sorted by line, and a problem that only follows from a
key set aside (refused by the models) is not reported twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class Problem(str):
    """One problem's message, with the config line it names (None when it names none),
    the field path it is about, the field path as the models gave it, and its kind."""

    line: int | None
    loc: tuple
    raw_loc: tuple
    kind: str


def field_path(loc: tuple) -> str:
    """A field path as a user writes it: ``treatments[0].path``; the whole config is
    ``(top level)``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def problem_at(
    source: str,
    lines: dict,
    loc: tuple,
    message: str,
    *,
    about: tuple | None = None,
    raw_loc: tuple | None = None,
    kind: str = "",
) -> Problem:
    """The problem ``message`` of the field at ``loc``, worded with the file and the line of
    the field (or of the nearest field above it that the YAML holds). ``about`` is the field
    it concerns when that is not ``loc``; ``raw_loc`` the path as the models gave it."""
    line = None
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in lines:
            line = lines[loc[:cut]]
            break
    where = f"line {line}: " if line else ""
    problem = Problem(f"{source}: {where}{field_path(loc)}: {message}")
    problem.line = line
    problem.loc = loc if about is None else about
    problem.raw_loc = loc if raw_loc is None else raw_loc
    problem.kind = kind
    return problem


def follows_from(problem: str, aside: list[tuple]) -> bool:
    """Whether ``problem`` is about a field set aside (or one inside it)."""
    about = getattr(problem, "loc", None)
    if about is None:
        return False
    return any(about[: len(loc)] == loc for loc in aside)


def line_of(problem: str) -> tuple[int, int]:
    """Sort key of a problem: its config line (problems without one last)."""
    line = getattr(problem, "line", None)
    return (0, line) if line is not None else (1, 0)


@dataclass
class Checks:
    """The problems found so far in one config (``source``, its field paths' ``lines``),
    whose relative paths are read from ``base_dir``."""

    source: str
    lines: dict[tuple, int]
    base_dir: Path
    problems: list[str] = field(default_factory=list)

    def add(self, loc: tuple, message: str, *, about: tuple | None = None) -> None:
        """A problem of the field at ``loc`` (``about``: the field it concerns, when another)."""
        self.problems.append(problem_at(self.source, self.lines, loc, message, about=about))
