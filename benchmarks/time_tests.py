"""Time the test suite and list the tests that the quick profile leaves out.

Runs ``pytest -m "not slow" --durations=0`` (or reads a log of such a run with ``--log``),
sums each test's setup, call and teardown over all its parametrized cases, and prints the
profile's wall time, the time it would take without the tests above the threshold, and
those tests. With ``--write`` it adds them to ``tests/slow_tests.txt``, which
``tests/conftest.py`` reads to mark them ``slow``.

A test is listed by ``file::name`` (its cases together), since a parametrized test whose
cases each take half a second costs as much as one slow case.

    python benchmarks/time_tests.py                   # measure, print
    python benchmarks/time_tests.py --threshold 1.0 --write
    python benchmarks/time_tests.py --log run.log --scale 0.5   # a run on a loaded machine
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "slow_tests.txt"
DURATION = re.compile(r"^\s*([\d.]+)s (?:call|setup|teardown)\s+(\S+)")
WALL = re.compile(r" in ([\d.]+)s")


def test_seconds(log: str) -> dict[str, float]:
    """Seconds per ``file::test`` (every case, setup and teardown included) in a pytest log."""
    seconds: dict[str, float] = defaultdict(float)
    for line in log.splitlines():
        found = DURATION.match(line)
        if found:
            path, name = found[2].split("::", 1)
            seconds[f"{Path(path).name}::{name.split('[')[0]}"] += float(found[1])
    return dict(seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=1.0, help="seconds (default 1.0)")
    parser.add_argument("--log", type=Path, help="read this pytest --durations=0 log")
    parser.add_argument(
        "--scale", type=float, default=1.0, help="multiply the logged times (a loaded machine)"
    )
    parser.add_argument("--write", action="store_true", help=f"add the tests to {LIST.name}")
    args = parser.parse_args(argv)

    if args.log is not None:
        log = args.log.read_text()
    else:
        command = [sys.executable, "-m", "pytest", "-q", "-n", "0", "-m", "not slow", "--durations=0",
                   "-p", "no:cacheprovider"]
        log = subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout
    seconds = {name: s * args.scale for name, s in test_seconds(log).items()}
    walls = WALL.findall(log)
    total = sum(seconds.values())
    slow = sorted((name for name, s in seconds.items() if s > args.threshold),
                  key=lambda name: -seconds[name])
    kept = total - sum(seconds[name] for name in slow)
    if walls:
        print(f"quick profile wall time: {float(walls[-1]) * args.scale:.0f} s")
    print(f"tests: {len(seconds)}, their time: {total:.0f} s")
    print(f"over {args.threshold:g} s: {len(slow)} tests, {total - kept:.0f} s; "
          f"the rest: {kept:.0f} s ({kept / total:.0%})")
    for name in slow:
        print(f"{seconds[name]:8.2f}  {name}")
    if args.write:
        listed = LIST.read_text().splitlines() if LIST.exists() else []
        names = {line for line in listed if line and not line.startswith("#")}
        added = [name for name in slow if name not in names]
        with LIST.open("a") as out:
            out.writelines(f"{name}\n" for name in added)
        print(f"{len(added)} tests added to {LIST.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
