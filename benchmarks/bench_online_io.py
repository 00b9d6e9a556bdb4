"""Speed and memory of the online log's data path, step by step, at issue 10's size.

Generates (with :mod:`abrank.demo.online`, as ``bench_online.py`` does) or reuses
(``--keep DIR``, the same folder layout as ``bench_online.py``) a user-randomized click log
as one Parquet file with an ``arm`` column, default 400,000 users x 5 impressions x 10
shown results = about 20,000,000 rows. Then, in a fresh child process, runs the steps of
``abrank run``'s data path one after the other, as :func:`abrank.designs.online.logs.load_online`
and :func:`~abrank.designs.online.logs.score_online` run them (click_rr@10, ctr@3 and
abandonment, users as the unit, device segments):

* read: :func:`abrank.io.read_impressions` of the columns the metrics read;
* split/check: :func:`abrank.io.split_log` and :func:`abrank.io.check_arms`;
* score: each arm's :class:`abrank.engines.clicks.ImpressionIndex` and
  :func:`~abrank.engines.clicks.score_impressions`;
* unit sums: :func:`abrank.engines.clicks.unit_sums` per arm, overall and per device
  (on the arm's index);
* ctr by rank: :func:`abrank.engines.clicks.ctr_by_rank` per arm;
* per-impression table: what ``score_online`` keeps per impression, then the readout's
  table (:func:`abrank.analysis.unit_readout.build_unit_readout`, without comparisons) and
  its ``per_query.csv`` (:func:`abrank.analysis.write_readout` with ``formats=["csv"]``);
* then, in a second fresh child, the whole data path through ``load_online`` +
  ``score_online`` + the readout + ``per_query.csv``, as ``abrank run`` calls them.

Each step prints its wall time and the peak resident memory of the process while it ran
(sampled every few milliseconds by a thread reading ``/proc/self/statm``; what earlier
steps hold is included), beside the figures measured before the data path was made fast
(``BEFORE``, at 20,000,000 rows: every column read, ids cast to text row by row). The child
sets the allocator as ``abrank run`` does for an online experiment
(:func:`abrank.runtime.reuse_freed_memory`).

    python benchmarks/bench_online_io.py                       # full size, heavy
    python benchmarks/bench_online_io.py --users 40000 --keep /tmp/online-io
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_online import LOG_NAME, _environment, generate, write_config  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: Seconds and peak MB of each step at 400,000 users (20,030,650 rows), measured on the data
#: path as it was before it was made fast (this 2-core machine, shared: +-20%; the whole
#: path then ran in the steps' process, after them, with the log already in the page cache).
BEFORE: dict[str, tuple[float, float]] = {
    "read": (35.34, 6171),
    "split/check": (5.46, 5720),
    "score": (0.57, 4060),
    "unit sums (overall + device)": (5.60, 3976),
    "ctr by rank": (0.51, 2507),
    "data path in all (load + score + readout + csv)": (50.69, 6131),
}

# Runs the steps in a child process and prints one JSON line per step.
_STEPS = textwrap.dedent("""\
    import json, os, sys, threading, time
    from pathlib import Path

    PAGE = os.sysconf("SC_PAGE_SIZE")

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * PAGE / 2**20

    class Peak:
        def __init__(self):
            self.value = rss()
            self.running = True
            threading.Thread(target=self.watch, daemon=True).start()
        def watch(self):
            while self.running:
                self.value = max(self.value, rss())
                time.sleep(0.005)
        def reset(self):
            self.value = rss()

    peak = Peak()
    config_path, out, mode = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    from abrank.runtime import reuse_freed_memory
    reuse_freed_memory()  # as `abrank run` does for an online experiment
    from abrank.config import load_experiment
    from abrank.io import check_arms, read_impressions, split_log
    from abrank.engines.clicks import ImpressionIndex, ctr_by_rank, score_impressions, unit_sums
    from abrank.metrics import parse_metric
    from abrank.designs.online.logs import load_online, needed_columns, online_evidence, score_online
    from abrank.analysis.units import sample_ratio
    from abrank.analysis.unit_readout import build_unit_readout
    from abrank.analysis import write_readout

    experiment = load_experiment(config_path)
    unit = experiment.analysis.unit
    names = [arm.name for arm in experiment.arms]
    metrics = [parse_metric(m) for m in experiment.metrics]
    log_path = str(experiment.log.path)

    def step(label, work):
        peak.reset()
        start = time.perf_counter()
        result = work()
        wall = time.perf_counter() - start
        time.sleep(0.01)
        print(json.dumps({"step": label, "wall": wall, "peak_mb": peak.value}), flush=True)
        return result

    keep = [*needed_columns(experiment), "arm"]
    def whole_path():
        data = load_online(experiment)
        scores = score_online(experiment, data)
        evidence = online_evidence(experiment, data, scores)
        srm = sample_ratio(experiment, evidence)
        readout = build_unit_readout(experiment, evidence, [], [], srm)
        write_readout(readout, out, formats=["csv"])
        return readout

    if mode == "whole":
        readout = step("data path in all (load + score + readout + csv)", whole_path)
        print(json.dumps({"impressions": len(readout.per_query)}), flush=True)
        sys.exit(0)

    log = step("read", lambda: read_impressions(log_path, keep=keep))
    rows = len(log)

    def split_check():
        frames = split_log(log, names, path=log_path)
        check_arms(frames, {n: log_path for n in names}, unit=unit)
        return frames

    frames = step("split/check", split_check)
    del log
    def score():
        index = {n: ImpressionIndex.of(f) for n, f in frames.items()}
        return index, {n: score_impressions(f, metrics, index=index[n]) for n, f in frames.items()}

    index, scored = step("score", score)

    def sums():
        return {
            n: (unit_sums(f, scored[n], unit=unit, index=index[n]),
                unit_sums(f, scored[n], unit=unit, by="device", index=index[n]))
            for n, f in frames.items()
        }

    step("unit sums (overall + device)", sums)
    step("ctr by rank", lambda: {n: ctr_by_rank(f) for n, f in frames.items()})
    print(json.dumps({"rows": rows}), flush=True)
""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=400_000, help="users (default 400000)")
    parser.add_argument(
        "--impressions-per-user",
        type=float,
        default=5.0,
        help="mean impressions per user, at least 1 (default 5)",
    )
    parser.add_argument("--seed", type=int, default=20261201, help="generator seed")
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="write the data into DIR and keep it (default: a temporary folder, removed at "
        "the end); data already in DIR for the same sizes is reused (bench_online.py's too)",
    )
    args = parser.parse_args()
    workdir = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="bench-io-"))
    try:
        return run(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> int:
    """Generate or reuse the log, run the steps in a child process, print the table."""
    sizes, _ = generate(workdir, args.users, args.seed, args.impressions_per_user)
    config = write_config(workdir, args.users)
    out = workdir / "out-io"
    shutil.rmtree(out, ignore_errors=True)
    records, failed = [], []
    for mode in ("steps", "whole"):  # the whole path in a fresh process, as `abrank run` runs
        done = subprocess.run(
            [sys.executable, "-c", _STEPS, str(config), str(out), mode],
            capture_output=True,
            text=True,
            cwd=workdir,
            env=_environment(),
        )
        records += [json.loads(line) for line in done.stdout.splitlines() if line[:1] == "{"]
        if done.returncode != 0:
            failed.append(f"{mode} (exit {done.returncode}):\n{done.stderr.strip()[-3000:]}")
    steps = [r for r in records if "step" in r]
    full = args.users == 400_000 and args.impressions_per_user == 5.0
    print()
    print(
        f"log: {sizes['users']:,} users, {sizes['impressions']:,} impressions, "
        f"{sizes['rows']:,} shown results ({workdir / 'data' / LOG_NAME})"
    )
    header = f"{'step':<50} {'wall s':>8} {'peak MB':>9}   {'before s':>9} {'before MB':>10}"
    print(header)
    print("-" * len(header))
    for record in steps:
        before = BEFORE.get(record["step"]) if full else None
        shown = f"{before[0]:9.2f} {before[1]:10,.0f}" if before else ""
        print(f"{record['step']:<50} {record['wall']:8.2f} {record['peak_mb']:9,.0f}   {shown}")
    if not full:
        print("(the before figures are for the full size only: --users 400000)")
    for failure in failed:
        print(f"\nfailed: {textwrap.indent(failure, '    ').strip()}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
