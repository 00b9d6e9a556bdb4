"""Speed of `abrank run` on a large online A/B log, beside the pandas notebook an analyst would write.

Generates a user-randomized click log with the online demo's model (default 400,000 users x
5 impressions x 10 shown results = about 20,000,000 rows) as one Parquet file with an ``arm``
column, writes a config beside it (click_rr@10, ctr@3 and abandonment, users as the unit,
10,000 unit-level resamples, device segments), then times, each as a whole child process
with its peak resident memory:

* ``abrank run CONFIG --out DIR`` (the memory engine: load, per-impression metrics, per-user
  sums, clustered statistics, the full readout);
* a "notebook": ``pandas.read_parquet``, a groupby per impression and then per user for the
  same per-user sums, the three ratio means per arm, and a plain 1,000-resample user-level
  bootstrap (numpy, resampling user indices) of the click_rr@10 difference.

Goal: ``abrank run`` under 20 s and under 4 GB, and faster than the notebook. Prints a table
with the ratios against the goals, and checks that both agree on the arms' means. If
``abrank run`` fails (for instance before online logs are supported), the failure is
reported with its message and the notebook's figures are still printed.

    python benchmarks/bench_online.py                          # full size, a few minutes
    python benchmarks/bench_online.py --users 2000 --keep /tmp/online
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 20.0
GOAL_MB = 4096.0
METRICS = ["click_rr@10", "ctr@3", "abandonment"]
LOG_NAME = "online-log.parquet"

# Runs a command as its only child and reports the child's wall time and peak RSS.
_LAUNCHER = textwrap.dedent("""\
    import json, resource, subprocess, sys, time
    command = json.loads(sys.argv[1])
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    peak_mb = peak / 2**20 if sys.platform == "darwin" else peak / 1024
    print(json.dumps({"returncode": done.returncode, "wall": wall, "peak_mb": peak_mb,
                      "stdout": done.stdout, "stderr": done.stderr}))
""")

# Writes the log with the online demo's model; prints its sizes as JSON.
_GENERATE = textwrap.dedent("""\
    import json, sys
    from abrank.demo.online import make_online_demo, write_log_parquet
    path, users, seed, per_user = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    data = make_online_demo(users, seed, impressions_per_user=per_user, pre_period=False)
    write_log_parquet(path, data.log, compression_level=3)
    print(json.dumps(data.to_dict()))
""")

# The notebook: what an analyst writes with pandas and numpy for the same readout.
_NOTEBOOK = textwrap.dedent("""\
    import json, sys, time
    import numpy as np
    import pandas as pd
    path, resamples = sys.argv[1], int(sys.argv[2])
    steps = {}
    start = time.perf_counter()
    log = pd.read_parquet(path, columns=["impression_id", "user_id", "rank", "clicked", "arm"])
    steps["read"] = time.perf_counter() - start

    mark = time.perf_counter()
    clicks = log[log["clicked"] == 1]
    first_click = clicks.groupby("impression_id")["rank"].min()
    top3 = clicks[clicks["rank"] <= 3].groupby("impression_id").size()
    per_impression = log.groupby("impression_id")[["user_id", "arm"]].first()
    per_impression["click_rr@10"] = (1.0 / first_click).reindex(per_impression.index, fill_value=0.0)
    per_impression["ctr@3"] = (top3.reindex(per_impression.index, fill_value=0) > 0).astype(float)
    per_impression["abandonment"] = (~per_impression.index.isin(first_click.index)).astype(float)
    per_user = per_impression.groupby(["arm", "user_id"]).agg(
        impressions=("click_rr@10", "size"),
        rr=("click_rr@10", "sum"),
        ctr3=("ctr@3", "sum"),
        abandoned=("abandonment", "sum"),
    )
    totals = per_user.groupby(level="arm").sum()
    means = {
        metric: (totals[column] / totals["impressions"]).to_dict()
        for metric, column in (("click_rr@10", "rr"), ("ctr@3", "ctr3"), ("abandonment", "abandoned"))
    }
    steps["per-user sums and means"] = time.perf_counter() - mark

    mark = time.perf_counter()
    rng = np.random.default_rng(7)
    arms = {arm: per_user.loc[arm] for arm in ("bm25", "reranker")}
    sums = {arm: (f["rr"].to_numpy(), f["impressions"].to_numpy()) for arm, f in arms.items()}
    differences = np.empty(resamples)
    for b in range(resamples):
        ratio = {}
        for arm, (rr, n) in sums.items():
            pick = rng.integers(0, len(n), size=len(n))
            ratio[arm] = rr[pick].sum() / n[pick].sum()
        differences[b] = ratio["reranker"] - ratio["bm25"]
    low, high = np.percentile(differences, [2.5, 97.5])
    steps[f"bootstrap ({resamples:,} user resamples)"] = time.perf_counter() - mark
    users = {arm: len(f) for arm, f in arms.items()}
    print(json.dumps({"steps": steps, "means": means, "ci": [low, high], "users": users}))
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
        "--bootstrap", type=int, default=1000, help="the notebook's resamples (default 1000)"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="write data, config and readout into DIR and keep them (default: a temporary "
        "folder, removed at the end); data already in DIR for the same sizes is reused",
    )
    args = parser.parse_args()

    workdir = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="bench-online-"))
    try:
        return run(args, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run(args: argparse.Namespace, workdir: Path) -> int:
    """Generate (or reuse) the data, time both jobs, print the table; 0 when abrank ran."""
    sizes, generated = generate(workdir, args.users, args.seed, args.impressions_per_user)
    config = write_config(workdir, args.users)
    out = workdir / "out"
    shutil.rmtree(out, ignore_errors=True)

    rows: list[tuple[str, float, float | None, str]] = []
    if generated is not None:
        rows.append(("generate the log (not timed against a goal)", generated, None, ""))
    abrank = measure([sys.executable, "-m", "abrank", "run", str(config), "--out", str(out)])
    abrank_ok = abrank["returncode"] == 0
    if abrank_ok:
        rows.append(("abrank run", abrank["wall"], abrank["peak_mb"], "goal"))
    else:
        rows.append(("abrank run", float("nan"), None, f"FAILED (exit {abrank['returncode']})"))

    log = str(workdir / "data" / LOG_NAME)
    notebook = measure([sys.executable, "-c", _NOTEBOOK, log, str(args.bootstrap)])
    report = None
    if notebook["returncode"] != 0:
        rows.append(("notebook (pandas + numpy bootstrap)", float("nan"), None, "FAILED"))
    else:
        report = json.loads(notebook["stdout"].strip().splitlines()[-1])
        for step, seconds in report["steps"].items():
            rows.append((f"  notebook: {step}", seconds, None, ""))
        rows.append(("notebook in all (with imports)", notebook["wall"], notebook["peak_mb"], ""))

    print()
    print(
        f"log: {sizes['users']:,} users, {sizes['impressions']:,} impressions, "
        f"{sizes['rows']:,} shown results (Parquet); metrics {', '.join(METRICS)}; "
        f"abrank: 10,000 unit resamples and device segments; notebook: {args.bootstrap:,} "
        "user resamples of one difference"
    )
    print(f"machine: {_machine()}")
    print()
    header = f"{'step':<48} {'wall s':>8} {'peak MB':>9}   notes"
    print(header)
    print("-" * len(header))
    for label, wall, peak, note in rows:
        peak_text = f"{peak:9,.0f}" if peak is not None else f"{'':>9}"
        if note == "goal":
            note = f"{wall / GOAL_SECONDS:.2f} x the 20 s goal, {peak / GOAL_MB:.2f} x 4 GB"
            if report is not None:
                note += f"; the notebook takes {notebook['wall'] / wall:.2f} x this"
        print(f"{label:<48} {wall:8.2f} {peak_text}   {note}")

    if not abrank_ok:
        print(f"\nabrank run failed with exit code {abrank['returncode']}:")
        print(textwrap.indent((abrank["stderr"].strip() or "(no message)")[-3000:], "    "))
    if notebook["returncode"] != 0:
        print("\nthe notebook failed:")
        print(textwrap.indent(notebook["stderr"].strip()[-3000:], "    "))
    if report is not None:
        print("\nper-arm means (ratio of per-user sums):")
        low, high = report["ci"]
        for metric, values in report["means"].items():
            shown = ", ".join(f"{arm} {value:.6f}" for arm, value in values.items())
            print(f"  notebook  {metric:<12} {shown}")
        print(f"  notebook  click_rr@10 difference, 95% bootstrap CI [{low:+.5f}, {high:+.5f}]")
        if abrank_ok:
            compare_means(report["means"], out)
    if abrank_ok:
        met = abrank["wall"] < GOAL_SECONDS and abrank["peak_mb"] < GOAL_MB
        faster = report is not None and abrank["wall"] < notebook["wall"]
        print(
            f"\ngoals: < {GOAL_SECONDS:.0f} s and < 4 GB {'met' if met else 'NOT met'}; "
            f"faster than the notebook: {'yes' if faster else 'no'}"
        )
    return 0 if abrank_ok else 1


def generate(workdir: Path, users: int, seed: int, per_user: float) -> tuple[dict, float | None]:
    """The log's sizes, and the seconds it took to write (None when reused from ``workdir``)."""
    data = workdir / "data"
    stamp = data / "stamp.json"
    generator = hashlib.sha256((ROOT / "abrank" / "demo" / "online.py").read_bytes()).hexdigest()
    wanted = {"users": users, "seed": seed, "per_user": per_user, "generator": generator}
    if stamp.exists():
        cached = json.loads(stamp.read_text())
        if cached.get("wanted") == wanted and (data / LOG_NAME).exists():
            print(f"reusing the log in {data}")
            return cached["sizes"], None
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    start = time.perf_counter()
    # In a child process, so that this one stays small while it times the others.
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _GENERATE,
            str(data / LOG_NAME),
            str(users),
            str(seed),
            str(per_user),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=_environment(),
    )
    if done.returncode != 0:
        raise SystemExit(f"generating the log failed:\n{done.stderr.strip()[-3000:]}")
    elapsed = time.perf_counter() - start
    sizes = json.loads(done.stdout.strip().splitlines()[-1])
    stamp.write_text(json.dumps({"wanted": wanted, "sizes": sizes}))
    print(f"generated {data / LOG_NAME} in {elapsed:.1f} s")
    return sizes, elapsed


def write_config(workdir: Path, users: int) -> Path:
    """The experiment config beside the data: the online demo's keys, without covariates."""
    path = workdir / "bench-online.yaml"
    path.write_text(
        textwrap.dedent(f"""\
            name: bench-online
            title: "Benchmark: {users:,} users, online A/B test"
            description: A user-randomized click log with the online demo's model, at scale.
            log: {{path: data/{LOG_NAME}}}
            control: {{name: bm25, label: BM25 (production)}}
            treatments:
              - {{name: reranker, label: Cross-encoder reranker}}
            metrics: [{", ".join(METRICS)}]
            primary_metric: click_rr@10
            analysis: {{design: independent, unit: user_id, resamples: 10000}}
            segments:
              columns: [device]
        """)
    )
    return path


def measure(command: list[str]) -> dict:
    """Run ``command`` as the only child of a fresh launcher; its wall time and peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, json.dumps(command)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        env=_environment(),
    )
    return json.loads(done.stdout)


def _environment() -> dict[str, str]:
    """The children import abrank from this checkout, whatever is installed."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def compare_means(notebook: dict[str, dict[str, float]], out: Path) -> None:
    """Print whether abrank's overall arm means equal the notebook's (to 1e-9)."""
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError) as exc:
        print(f"  abrank    no summary.json to compare ({exc})")
        return
    for metric, values in notebook.items():
        entry = next(
            (
                c
                for c in summary.get("comparisons", [])
                if c.get("metric") == metric and not c.get("segment")
            ),
            None,
        )
        if entry is None:
            print(f"  abrank    {metric:<12} not in summary.json")
            continue
        ours = {"bm25": entry["control_mean"], "reranker": entry["treatment_mean"]}
        gap = max(abs(ours[arm] - values[arm]) for arm in ours)
        status = "agree" if gap < 1e-9 else f"DIFFER by {gap:.2e}"
        shown = ", ".join(f"{arm} {value:.6f}" for arm, value in ours.items())
        print(f"  abrank    {metric:<12} {shown}   ({status})")


def _machine() -> str:
    import platform

    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"


if __name__ == "__main__":
    raise SystemExit(main())
