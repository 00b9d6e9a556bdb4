"""The input paths of a config, checked and made absolute against the config's folder.

A path is refused at once when it names something that is no regular file (a FIFO would
block the read forever). A ``{date}`` template is checked as a template (each date's file is
looked for when that date runs); a glob or a folder of an arm's or the log's files is
checked as a pattern; any other path must name an existing file.
"""

from __future__ import annotations

from pathlib import Path

from abrank.config.dates import check_template, is_dated
from abrank.config.engine import is_pattern, pattern_problem
from abrank.config.problems import Checks

#: The sections whose path may be a glob or a folder of several files.
PATTERN_SECTIONS = ("log", "control", "treatments")


def resolved(checks: Checks, loc: tuple, value: str) -> str:
    """The absolute path of the input ``value`` at ``loc``; its problems go to ``checks``."""
    from abrank.io.files import path_problem

    base_dir = checks.base_dir
    problem = path_problem(base_dir / value)
    if problem is not None and problem not in ("no such file", "a folder"):
        checks.add(loc, f"expected a file, got {value!r}: {problem}")
        return str(base_dir / value)
    full = (base_dir / value).resolve() if not Path(value).is_absolute() else Path(value)
    if is_dated(value):  # the file of each date is looked for when that date runs
        problem = check_template(value)
        if problem is not None:
            checks.add(loc, problem)
    elif loc[0] in PATTERN_SECTIONS and is_pattern(value, full):
        problem = pattern_problem(value, full)  # a glob or a folder: several files
        if problem is not None:
            checks.add(loc, problem)
    elif not full.exists():
        checks.add(loc, f"expected an existing file, got {value!r} ({full} does not exist)")
    elif full.is_dir():
        checks.add(loc, f"expected a file, got the folder {value!r}")
    return str(full)
