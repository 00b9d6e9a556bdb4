"""End-to-end speed of `abrank run` on a large experiment, beside ranx on the same data.

Generates a two-arm experiment (default 100,000 queries x 100 documents per arm, the demo
generator's model at a larger size) as Parquet files and as TREC files, then times, each as
a whole child process with its peak resident memory:

* ``abrank run`` on the Parquet config and on the TREC config (load, score, compare with
  10,000 resamples, write the full readout);
* ranx loading the same qrels and two TREC runs and calling ``compare()`` (paired t-test),
  once in a fresh process (including numba's compilation on a first call) and again in
  the same process (warm).

Goal: ``abrank run`` under 15 s and under 4 GB. Prints a table with the ratios against
the goals and against ranx, and checks that both tools agree on the arms' mean MRR@10.

    python benchmarks/bench_run.py                      # 100k x 100, about 2-3 minutes
    python benchmarks/bench_run.py --queries 20000 --docs 50 --skip-ranx
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 15.0
GOAL_MB = 4096.0
METRICS = ["mrr@10", "ndcg@10", "recall@100"]

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

# ranx: load the qrels and two runs, compare; twice in one process (cold, then warm).
_RANX = textwrap.dedent("""\
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    folder, metrics = sys.argv[1], json.loads(sys.argv[2])
    start = time.perf_counter()
    from ranx import Qrels, Run, compare
    imported = time.perf_counter() - start
    timings = []
    for attempt in range(2):
        start = time.perf_counter()
        qrels = Qrels.from_file(f"{folder}/qrels.txt", kind="trec")
        control = Run.from_file(f"{folder}/control.run", kind="trec", name="control")
        treatment = Run.from_file(f"{folder}/treatment.run", kind="trec", name="treatment")
        loaded = time.perf_counter()
        compare(qrels, runs=[control, treatment], metrics=metrics, max_p=0.05,
                make_comparable=True)
        timings.append({"load": loaded - start, "compare": time.perf_counter() - loaded})
    judged = qrels.to_dict()
    relevant = [q for q, docs in judged.items() if any(g >= 1 for g in docs.values())]
    means = {
        run.name: sum(run.scores["mrr@10"].get(q, 0.0) for q in relevant) / len(relevant)
        for run in (control, treatment)
    }
    print(json.dumps({"import": imported, "timings": timings, "mrr@10": means}))
""")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100_000, help="queries (default 100000)")
    parser.add_argument("--docs", type=int, default=100, help="documents per query and arm")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=ROOT / "benchmarks" / "scratch" / "run",
        help="where data, configs and readouts go (default benchmarks/scratch/run)",
    )
    parser.add_argument("--seed", type=int, default=20261130, help="generator seed")
    parser.add_argument("--skip-ranx", action="store_true", help="time abrank only")
    parser.add_argument("--regenerate", action="store_true", help="rebuild data even if cached")
    args = parser.parse_args()

    workdir = args.workdir.resolve()
    data = workdir / "data"
    sizes = generate(data, args.queries, args.docs, args.seed, args.regenerate)
    configs = write_configs(workdir, args.queries)

    rows: list[tuple[str, float, float | None, str]] = []
    means: dict[str, dict[str, float]] = {}
    abrank_walls = []
    stages: dict[str, list[str]] = {}
    for kind, config in configs.items():
        result = measure([sys.executable, "-m", "abrank", "run", str(config)])
        stages[kind] = stage_lines(result["stderr"])
        if result["returncode"] != 0:
            print(f"abrank run ({kind}) failed with exit code {result['returncode']}:")
            print(textwrap.indent(result["stderr"].strip()[-3000:], "    "))
            rows.append((f"abrank run ({kind})", float("nan"), None, "FAILED"))
            continue
        abrank_walls.append(result["wall"])
        rows.append((f"abrank run ({kind})", result["wall"], result["peak_mb"], "goal"))
        means[f"abrank ({kind})"] = readout_means(workdir / "out" / config.stem)

    ranx_warm = ranx_first = None
    if not args.skip_ranx:
        result = measure([sys.executable, "-c", _RANX, str(data), json.dumps(METRICS)])
        if result["returncode"] != 0:
            print("ranx failed:")
            print(textwrap.indent(result["stderr"].strip()[-3000:], "    "))
        else:
            report = json.loads(result["stdout"].strip().splitlines()[-1])
            cold, warm = report["timings"]
            ranx_warm = warm["load"] + warm["compare"]
            first = ranx_first = cold["load"] + cold["compare"]
            rows += [
                ("ranx import (ranx, numba)", report["import"], None, ""),
                (
                    "ranx load + compare, first call (with JIT)",
                    first,
                    None,
                    f"load {cold['load']:.1f} s, compare {cold['compare']:.1f} s",
                ),
                (
                    "ranx load + compare, warm",
                    ranx_warm,
                    None,
                    f"load {warm['load']:.1f} s, compare {warm['compare']:.1f} s",
                ),
                (
                    "ranx child process in all",
                    result["wall"],
                    result["peak_mb"],
                    "import, two rounds, per-query means",
                ),
            ]
            means["ranx"] = report["mrr@10"]

    print()
    print(
        f"experiment: {args.queries:,} queries x {args.docs} documents, 2 arms "
        f"({sizes['rows']['control']:,} + {sizes['rows']['treatment']:,} ranking rows, "
        f"{sizes['rows']['judgments']:,} judgments); metrics {', '.join(METRICS)}; "
        f"10,000 resamples"
    )
    print(f"machine: {_machine()}")
    print()
    header = f"{'step':<48} {'wall s':>8} {'peak MB':>9}   notes"
    print(header)
    print("-" * len(header))
    for label, wall, peak, note in rows:
        peak_text = f"{peak:9,.0f}" if peak is not None else f"{'':>9}"
        if note == "goal":
            note = f"{wall / GOAL_SECONDS:.2f} x the 15 s goal, {peak / GOAL_MB:.2f} x 4 GB"
            if ranx_warm and ranx_first:
                note += (
                    f"; ranx takes {ranx_warm / wall:.2f} x this warm, "
                    f"{ranx_first / wall:.2f} x on a first call"
                )
        print(f"{label:<48} {wall:8.2f} {peak_text}   {note}")
    for kind, lines in stages.items():
        if lines:
            print(f"\nabrank run ({kind}), its own progress (time since start):")
            print(textwrap.indent("\n".join(lines), "  "))
    if means:
        print()
        print("mean MRR@10 over queries with a relevant judgment (missing queries score 0):")
        for tool, values in means.items():
            shown = ", ".join(f"{arm} {value:.6f}" for arm, value in values.items())
            print(f"  {tool:<18} {shown}")
        check_agreement(means)
    if abrank_walls:
        verdict = "met" if max(abrank_walls) < GOAL_SECONDS else "NOT met"
        print(
            f"\nspeed goal ({GOAL_SECONDS:.0f} s): {verdict} (slowest abrank run "
            f"{max(abrank_walls):.2f} s)"
        )
    return 0 if abrank_walls else 1


def generate(folder: Path, queries: int, docs: int, seed: int, regenerate: bool) -> dict:
    """Write the experiment's Parquet and TREC files (reused when the same sizes are cached)."""
    stamp = folder / "stamp.json"
    generator = hashlib.sha256((ROOT / "abrank" / "demo" / "offline.py").read_bytes()).hexdigest()
    wanted = {"queries": queries, "docs": docs, "seed": seed, "generator": generator}
    if not regenerate and stamp.exists():
        cached = json.loads(stamp.read_text())
        if cached.get("wanted") == wanted:
            print(f"reusing the data in {folder}")
            return cached["sizes"]
    shutil.rmtree(folder, ignore_errors=True)
    start = time.perf_counter()
    # In a child process, so that this one stays small while it times the others.
    code = (
        "import sys; from abrank.demo import write_demo; "
        "write_demo(sys.argv[1], seed=int(sys.argv[2]), n_queries=int(sys.argv[3]), "
        "depth=int(sys.argv[4]), formats=('parquet', 'trec'))"
    )
    subprocess.run(
        [sys.executable, "-c", code, str(folder), str(seed), str(queries), str(docs)], check=True
    )
    elapsed = time.perf_counter() - start
    # The sizes, without regenerating: count rows from the files written.
    import pyarrow.parquet as pq

    sizes = {
        "rows": {
            name: pq.ParquetFile(folder / f"{name}.parquet").metadata.num_rows
            for name in ("control", "treatment", "judgments")
        }
    }
    stamp.write_text(json.dumps({"wanted": wanted, "sizes": sizes}))
    print(f"generated {folder} in {elapsed:.1f} s")
    return sizes


def write_configs(workdir: Path, queries: int) -> dict[str, Path]:
    """One experiment config over the Parquet files, one over the TREC files."""
    common = textwrap.dedent(f"""\
        metrics: [{", ".join(METRICS)}]
        analysis: {{design: paired, seed: 7, resamples: 10000}}
    """)
    parquet = (
        textwrap.dedent(f"""\
        name: bench-parquet
        title: "Benchmark: {queries:,} queries, Parquet"
        control:
          name: control
          label: Control
          path: data/control.parquet            # columns qid, docno, rank, score, locale, device
        treatments:
          - name: treatment
            label: Treatment
            path: data/treatment.parquet
        judgments:
          path: data/judgments.parquet          # columns query_id, doc_id, grade
        output: out/bench-parquet
    """)
        + common
    )
    trec = (
        textwrap.dedent(f"""\
        name: bench-trec
        title: "Benchmark: {queries:,} queries, TREC"
        control:
          name: control
          label: Control
          path: data/control.run
          format: trec
        treatments:
          - name: treatment
            label: Treatment
            path: data/treatment.run
            format: trec
        judgments:
          path: data/qrels.txt
          format: trec
        output: out/bench-trec
    """)
        + common
    )
    paths = {}
    for kind, text in (("parquet", parquet), ("trec", trec)):
        path = workdir / f"bench-{kind}.yaml"
        path.write_text(text)
        paths[kind] = path
    return paths


def measure(command: list[str]) -> dict:
    """Run ``command`` as the only child of a fresh launcher; its wall time and peak RSS."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, json.dumps(command)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return json.loads(done.stdout)


def stage_lines(stderr: str) -> list[str]:
    """The ``[  12.3s] stage`` progress lines that ``abrank run`` prints on stderr."""
    return [line for line in stderr.splitlines() if line.startswith("[") and "s]" in line[:12]]


def readout_means(folder: Path) -> dict[str, float]:
    """Control and treatment mean MRR@10 from a readout's summary.json."""
    summary = json.loads((folder / "summary.json").read_text())
    entry = next(c for c in summary["comparisons"] if c["metric"] == "mrr@10" and not c["segment"])
    return {"control": entry["control_mean"], "treatment": entry["treatment_mean"]}


def check_agreement(means: dict[str, dict[str, float]]) -> None:
    tools = list(means)
    reference = means[tools[0]]
    for tool in tools[1:]:
        for arm, value in means[tool].items():
            gap = abs(value - reference[arm])
            status = "agree" if gap < 1e-9 else f"DIFFER by {gap:.2e}"
            print(f"  {tools[0]} vs {tool}, {arm}: {status}")


def _machine() -> str:
    import os
    import platform

    return f"{os.cpu_count()} cores, Python {platform.python_version()}, {platform.machine()}"


if __name__ == "__main__":
    raise SystemExit(main())
