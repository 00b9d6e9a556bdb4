"""Speed and memory of the metrics engine against ranx, pytrec_eval and ir_measures.

Two synthetic collections of 100,000 queries x 100 documents (10 million run lines) are
written as TREC files under ``benchmarks/scratch/`` (git-ignored):

- sparse: graded judgments, 20 per query (grades 0-3), about 12 of them retrieved, numeric
  doc ids of up to 7 bytes;
- dense: 58 judgments per query, 46 of them among the retrieved documents (weighted to the
  top, as pooling gives), 9-byte doc ids (``d`` + 8 digits), as pooled test collections have.

For each, the script times, for mrr@10, ndcg@10, recall@100 and map per query:

- ``abrank metrics`` as a whole process (files -> printed values), and its peak memory;
- ``read_trec_run`` + ``read_trec_qrels``, and ``abrank.evaluate`` on the in-memory frames;
- ranx: loading the files, the first (JIT-compiling) evaluation and a warm one;
- pytrec_eval (pytrec-eval-terrier): its ``parse_qrel`` / ``parse_run`` readers, then
  ``RelevanceEvaluator`` + ``evaluate``;
- ir_measures: reading the files and computing;

checks that every tool's per-query values agree with abrank's, and prints times and ratios.
Run:  python benchmarks/bench_metrics.py [--shape sparse,dense] [--queries N] [--skip-ranx] ...
Install the anchors with ``pip install -e .[bench]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

HERE = Path(__file__).resolve().parent
WORK = HERE / "scratch"
METRICS = ["mrr@10", "ndcg@10", "recall@100", "map"]
#: CPU seconds (user + system, all threads) of each timing, beside its wall time: on a
#: shared machine other work stretches wall times far more than CPU times
CPU: dict[str, float] = {}
TREC_EVAL_BINARY_SECONDS = 61.8  # trec_eval 9.0.8 end to end at this size, measured earlier


def write_collection(
    queries: int, depth: int, judged: int, prefix: str = "", seed: int = 7
) -> tuple[Path, Path]:
    """Write run and qrels files (cached by size) and return their paths."""
    WORK.mkdir(exist_ok=True)
    tag = f".{prefix.strip('_')}" if prefix else ""
    run_path = WORK / f"run.{queries}x{depth}{tag}.txt"
    qrels_path = WORK / f"qrels.{queries}x{judged}{tag}.txt"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    rng = np.random.default_rng(seed)
    n = queries * depth
    qnum = np.repeat(np.arange(queries), depth)
    # MS MARCO-like numeric passage ids, distinct within each query
    offsets = np.tile(np.arange(depth), queries)
    docs = (np.repeat(rng.integers(0, 8_000_000, queries), depth) + offsets * 7) % 8_841_823
    score = np.round(np.sort(rng.gamma(2.0, 4.0, size=(queries, depth)), axis=1)[:, ::-1], 3)
    score = score.ravel()  # descending within each query, with some exact ties
    qid = pc.binary_join_element_wise("q", pc.cast(pa.array(qnum), pa.string()), "")
    doc = pc.binary_join_element_wise(prefix, pc.cast(pa.array(docs), pa.string()), "")
    rank = np.tile(np.arange(1, depth + 1), queries)
    run = pa.table(
        {
            "q": qid,
            "i": pa.array(np.full(n, "Q0")),
            "d": doc,
            "r": rank,
            "s": score,
            "t": pa.array(np.full(n, "bench")),
        }
    )
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(run, run_path, write_options=options)
    # judgments: `judged` per query; about 60% of them retrieved, biased to the top
    in_run = int(judged * 0.6)
    picks = np.minimum(rng.geometric(0.04, size=(queries, in_run)) - 1, depth - 1)
    picks = np.sort(picks, axis=1)
    picks[:, 1:] += np.cumsum(picks[:, 1:] == picks[:, :-1], axis=1)  # mostly distinct
    picks = np.minimum(picks, depth - 1)
    rows = (np.arange(queries)[:, None] * depth + picks).ravel()
    jq = np.concatenate([qnum[rows], np.repeat(np.arange(queries), judged - in_run)])
    jd = np.concatenate(
        [docs[rows], rng.integers(8_841_823, 9_999_999, queries * (judged - in_run))]
    )
    pairs = np.unique(np.column_stack([jq, jd]), axis=0)
    grades = rng.choice([0, 1, 2, 3], size=len(pairs), p=[0.5, 0.25, 0.15, 0.1])
    qrels = pa.table(
        {
            "q": pc.binary_join_element_wise("q", pc.cast(pa.array(pairs[:, 0]), pa.string()), ""),
            "i": pa.array(np.zeros(len(pairs), dtype=np.int64)),
            "d": pc.binary_join_element_wise(
                prefix, pc.cast(pa.array(pairs[:, 1]), pa.string()), ""
            ),
            "g": grades,
        }
    )
    pacsv.write_csv(qrels, qrels_path, write_options=options)
    return run_path, qrels_path


def write_dense_collection(
    queries: int, depth: int, judged: int, seed: int = 11
) -> tuple[Path, Path]:
    """A pooled-collection shape: ``judged`` judgments per query, most of them (80%) among
    the run's documents and biased to the top, and 9-byte doc ids (``d`` + 8 digits), which
    take the hashed-key path of the join. Cached by size under ``benchmarks/scratch/``."""
    WORK.mkdir(exist_ok=True)
    run_path = WORK / f"run.{queries}x{depth}.dense.txt"
    qrels_path = WORK / f"qrels.{queries}x{judged}.dense.txt"
    if run_path.exists() and qrels_path.exists():
        return run_path, qrels_path
    rng = np.random.default_rng(seed)
    n = queries * depth
    qnum = np.repeat(np.arange(queries), depth)
    offsets = np.tile(np.arange(depth), queries)
    docs = 10_000_000 + (np.repeat(rng.integers(0, 8_000_000, queries), depth) + offsets * 7) % (
        8_841_823
    )
    score = np.round(np.sort(rng.gamma(2.0, 4.0, size=(queries, depth)), axis=1)[:, ::-1], 3)
    qid = pc.binary_join_element_wise("q", pc.cast(pa.array(qnum), pa.string()), "")
    doc = pc.binary_join_element_wise("d", pc.cast(pa.array(docs), pa.string()), "")
    run = pa.table(
        {
            "q": qid,
            "i": pa.array(np.full(n, "Q0")),
            "d": doc,
            "r": np.tile(np.arange(1, depth + 1), queries),
            "s": score.ravel(),
            "t": pa.array(np.full(n, "dense")),
        }
    )
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pacsv.write_csv(run, run_path, write_options=options)
    # the pool: `in_run` distinct retrieved positions per query, weighted to the top
    # (Gumbel top-k: weighted sampling without replacement), plus unretrieved documents
    in_run = min(int(round(judged * 0.8)), depth)
    weight = np.log(0.97) * np.arange(depth) - np.log(-np.log(rng.random((queries, depth))))
    picks = np.sort(np.argpartition(-weight, in_run - 1, axis=1)[:, :in_run], axis=1)
    rows = (np.arange(queries)[:, None] * depth + picks).ravel()
    extra = judged - in_run
    jq = np.concatenate([qnum[rows], np.repeat(np.arange(queries), extra)])
    jd = np.concatenate([docs[rows], rng.integers(20_000_000, 99_999_999, queries * extra)])
    order = np.lexsort((jd, jq))
    jq, jd = jq[order], jd[order]
    keep = np.ones(jq.size, dtype=bool)
    keep[1:] = (jq[1:] != jq[:-1]) | (jd[1:] != jd[:-1])
    jq, jd = jq[keep], jd[keep]
    grades = rng.choice([0, 1, 2, 3], size=jq.size, p=[0.55, 0.25, 0.12, 0.08])
    qrels = pa.table(
        {
            "q": pc.binary_join_element_wise("q", pc.cast(pa.array(jq), pa.string()), ""),
            "i": pa.array(np.zeros(jq.size, dtype=np.int64)),
            "d": pc.binary_join_element_wise("d", pc.cast(pa.array(jd), pa.string()), ""),
            "g": grades,
        }
    )
    pacsv.write_csv(qrels, qrels_path, write_options=options)
    return run_path, qrels_path


def timed(label: str, func, results: dict, repeat: int = 1):
    """Run func `repeat` times; record and print the best wall time (the machine may be
    shared, and the minimum is the least disturbed run)."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        value = func()
        best = min(best, (time.perf_counter() - start, time.process_time() - cpu))
    results[label] = best[0]
    CPU[label] = best[1]
    note = f" (best of {repeat})" if repeat > 1 else ""
    print(f"  {label:<44s} {best[0]:8.2f} s{note}; cpu {best[1]:.2f} s", flush=True)
    return value


def process(label: str, command: list[str], results: dict, repeat: int):
    """Time a whole process; also report its CPU time (user + system), which shared
    cores inflate less than wall time."""
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        out = subprocess.run(command, capture_output=True, check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, (wall, cpu))
    results[label] = best[0]
    CPU[label] = best[1]
    print(f"  {label:<44s} {best[0]:8.2f} s (best of {repeat}; cpu {best[1]:.2f} s)", flush=True)
    return out


# Runs a command as its only child and prints that child's peak resident memory (MB). A
# child forked straight from this script would report this script's own memory as its
# peak (the high-water mark survives exec), once this script holds loaded collections.
_PEAK = (
    "import resource, subprocess, sys; "
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)"
)


# pytrec_eval's parse + evaluate (as timed in this script) in a process of its own, which
# prints its peak resident memory (MB)
_PYTREC_PEAK = """
import resource, sys
import pytrec_eval
with open(sys.argv[1]) as handle:
    qrel = pytrec_eval.parse_qrel(handle)
with open(sys.argv[2]) as handle:
    run = pytrec_eval.parse_run(handle)
measures = {"recip_rank", "ndcg_cut.10", "recall.100", "map"}
pytrec_eval.RelevanceEvaluator(qrel, measures).evaluate(run)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def child_peak_mb(command: list[str]) -> float:
    """Peak resident memory of ``command`` run alone, in MB."""
    out = subprocess.run([sys.executable, "-c", _PEAK, *command], capture_output=True, check=True)
    return float(out.stdout)


def print_table(
    title: str, rows: list[tuple[str, float, float | None, float | None]], base: tuple[float, float]
) -> None:
    """A table of whole timings: tool, wall seconds and CPU seconds with how many times
    abrank's each is (above 1: abrank is faster), peak memory in MB ("-": not measured)."""
    print(title)
    print(
        f"  {'tool':<50s} {'wall s':>7s} {'x abrank':>9s} {'cpu s':>7s} {'x abrank':>9s} "
        f"{'peak MB':>8s}"
    )
    for name, wall, cpu, peak in rows:
        shown = f"{peak:,.0f}" if peak else "-"
        cpu_text = f"{cpu:7.2f} {cpu / base[1]:8.1f}x" if cpu else f"{'-':>7s} {'-':>9s}"
        print(f"  {name:<50s} {wall:7.2f} {wall / base[0]:8.1f}x {cpu_text} {shown:>8s}")


def agree(name: str, ours, theirs: dict, metric_map: dict, tolerance: float = 1e-9) -> None:
    """Max per-query difference between abrank (NaN -> 0, as trec_eval) and a tool."""
    table = ours.fillna(0.0)
    for metric, column in metric_map.items():
        mine = table[metric]
        other = mine.index.map(theirs[column]).to_numpy(dtype=float, na_value=np.nan)
        diff = np.abs(mine.to_numpy() - other)
        missing = int(np.isnan(other).sum())
        differing = int((diff > tolerance).sum())
        print(
            f"  {name} {metric:<11s} max |diff| {np.nanmax(diff):.1e}; "
            f"{differing} of {len(mine):,} queries differ by more than {tolerance:g}, "
            f"{missing} missing"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--shape",
        default="sparse,dense",
        help="comma-separated collection shapes: sparse (20 judgments per query, about 12 "
        "retrieved) and dense (58 per query, 9-byte doc ids, as pooled collections have); "
        "default both",
    )
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument(
        "--judged", type=int, help="judgments per query (default 20 sparse, 58 dense)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs of each abrank timing")
    parser.add_argument(
        "--anchor-repeat", type=int, default=3, help="runs of each pytrec_eval timing (best kept)"
    )
    parser.add_argument("--skip-ranx", action="store_true")
    parser.add_argument("--skip-pytrec", action="store_true")
    parser.add_argument("--skip-irm", action="store_true")
    parser.add_argument(
        "--long-ids",
        action="store_true",
        help="sparse shape: prefix doc ids with 'msmarco_passage_' (hashed-key path)",
    )
    args = parser.parse_args()
    shapes = [s.strip() for s in args.shape.split(",") if s.strip()]
    unknown = sorted(set(shapes) - {"sparse", "dense"})
    if unknown or not shapes:
        parser.error(f"--shape: expected sparse and/or dense, got {args.shape!r}")
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"machine: {os.cpu_count()} cores, load average {load} (other work slows every timing)")
    compiled_as_installed()
    summary = [bench(shape, args) for shape in shapes]
    print("\nsummary: abrank metrics (whole process) vs pytrec_eval (parse + evaluate); goal >= 5x")
    print(
        f"  {'shape':<7s} {'abrank s':>9s} {'cpu s':>6s} {'peak MB':>8s} {'cl s':>6s} "
        f"{'pytrec_eval s':>14s} {'cpu s':>6s} {'peak MB':>8s} {'ratio':>6s} {'cpu ratio':>10s} "
        f"{'ratio cl':>9s}"
    )
    for shape, ours, dropin, theirs, info in summary:
        pytrec = f"{theirs:.2f}" if theirs else "-"
        ratio = f"{theirs / ours:.1f}x" if theirs else "-"
        ratio_dropin = f"{theirs / dropin:.1f}x" if theirs else "-"
        their_cpu = info.get("cpu pytrec_eval")
        cpu_ratio = f"{their_cpu / info['cpu abrank']:.1f}x" if their_cpu else "-"
        their_peak = f"{info['peak pytrec_eval']:,.0f}" if "peak pytrec_eval" in info else "-"
        print(
            f"  {shape:<7s} {ours:9.2f} {info['cpu abrank']:6.2f} {info['peak abrank']:8,.0f} "
            f"{dropin:6.2f} {pytrec:>14s} {f'{their_cpu:.2f}' if their_cpu else '-':>6s} "
            f"{their_peak:>8s} {ratio:>6s} {cpu_ratio:>10s} {ratio_dropin:>9s}"
        )
    print(
        "  (cl: abrank metrics with trec_eval's command line, -q -m recip_rank -m ndcg_cut.10 ...;"
        " cpu: user + system seconds, which other work on the machine inflates far less)"
    )
    return 0


def compiled_as_installed() -> None:
    """Compile abrank's modules to bytecode, as ``pip install .`` does, so that the timed
    processes start as an installed ``abrank`` starts. An editable checkout run with
    ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every module at every start
    (about 0.05 s of each run here); pytrec_eval is a compiled extension."""
    import compileall

    import abrank

    folder = Path(abrank.__file__).parent
    compiled = compileall.compile_dir(folder, quiet=1)
    state = "compiled" if compiled else "NOT compiled (timings include compiling)"
    print(f"abrank's modules in {folder}: {state} to bytecode, as an installed package is")


def bench(
    shape: str, args: argparse.Namespace
) -> tuple[str, float, float, float | None, dict[str, float]]:
    """Every timing of one collection shape; returns (shape, abrank s, abrank with
    trec_eval's command line s, pytrec_eval s, peak MB and CPU s by tool)."""
    judged = args.judged or (58 if shape == "dense" else 20)
    print(
        f"\n{shape} collection: {args.queries:,} queries x {args.depth} documents, "
        f"{judged} judgments per query",
        flush=True,
    )
    start = time.perf_counter()
    if shape == "dense":
        run_path, qrels_path = write_dense_collection(args.queries, args.depth, judged)
    else:
        prefix = "msmarco_passage_" if args.long_ids else ""
        run_path, qrels_path = write_collection(args.queries, args.depth, judged, prefix)
    print(
        f"  files ready in {time.perf_counter() - start:.1f} s: {run_path.name} "
        f"({run_path.stat().st_size / 1e6:.0f} MB), {qrels_path.name} "
        f"({qrels_path.stat().st_size / 1e6:.0f} MB)",
        flush=True,
    )
    t: dict[str, float] = {}
    info: dict[str, float] = {}  # peak MB and CPU seconds by tool, for the summary

    print("abrank")
    command = [
        sys.executable,
        "-m",
        "abrank",
        "metrics",
        str(qrels_path),
        str(run_path),
        "-m",
        *METRICS,
        "--per-query",
    ]
    out = process("abrank metrics --per-query (whole process)", command, t, args.repeat)
    peak = child_peak_mb(command)
    info["peak abrank"] = peak
    lines = out.stdout.count(b"\n")
    print(f"  printed {lines:,} lines; peak memory of the process {peak:,.0f} MB")
    command_all = [c for c in command if c != "--per-query"]
    process("abrank metrics, means only (whole process)", command_all, t, args.repeat)
    # the drop-in form: trec_eval's own command line and output, the measures pytrec_eval
    # computes below (recip_rank without a cutoff)
    trec_eval_command = [
        *command[:4],
        "-q",
        *("-m", "recip_rank", "-m", "ndcg_cut.10", "-m", "recall.100", "-m", "map"),
        str(qrels_path),
        str(run_path),
    ]
    process("abrank metrics -q -m recip_rank ... (trec_eval's)", trec_eval_command, t, args.repeat)

    from abrank.engines.evaluate import evaluate
    from abrank.io.trec import read_trec_qrels, read_trec_run

    run = timed("abrank read_trec_run", lambda: read_trec_run(run_path), t, args.repeat)
    qrels = timed("abrank read_trec_qrels", lambda: read_trec_qrels(qrels_path), t, args.repeat)
    timed("abrank evaluate (first call)", lambda: evaluate(run, qrels, METRICS), t)
    ours = timed("abrank evaluate (warm)", lambda: evaluate(run, qrels, METRICS), t, args.repeat)
    print("  means: " + ", ".join(f"{m} {ours[m].fillna(0).mean():.4f}" for m in METRICS))
    timed(
        "abrank evaluate mrr@10 + ndcg@10 (warm)",
        lambda: evaluate(run, qrels, ["mrr@10", "ndcg@10"]),
        t,
        args.repeat,
    )

    if not args.skip_pytrec:
        print("pytrec_eval (pytrec-eval-terrier)")
        import pytrec_eval

        def load_pytrec_files():
            # pytrec_eval's own readers, as its README shows
            with open(qrels_path) as handle:
                qrel_dict = pytrec_eval.parse_qrel(handle)
            with open(run_path) as handle:
                run_dict = pytrec_eval.parse_run(handle)
            return qrel_dict, run_dict

        # best of a few, as abrank's times are: one run of a shared machine's slow moment
        # would flatter the ratio
        qrel_dict, run_dict = timed(
            "pytrec_eval parse_qrel + parse_run", load_pytrec_files, t, args.anchor_repeat
        )
        measures = {"recip_rank", "ndcg_cut.10", "recall.100", "map"}

        def evaluate_pytrec():
            evaluator = pytrec_eval.RelevanceEvaluator(qrel_dict, measures)
            return evaluator.evaluate(run_dict)

        # pytrec_eval's recip_rank has no cutoff, so MRR@10 is not compared
        scores = timed(
            "pytrec_eval RelevanceEvaluator + evaluate", evaluate_pytrec, t, args.anchor_repeat
        )
        theirs = {
            name: {q: v[name] for q, v in scores.items()}
            for name in ("ndcg_cut_10", "recall_100", "map")
        }
        agree(
            "pytrec_eval",
            ours,
            theirs,
            {"ndcg@10": "ndcg_cut_10", "recall@100": "recall_100", "map": "map"},
        )
        del qrel_dict, run_dict, scores
        out = subprocess.run(
            [sys.executable, "-c", _PYTREC_PEAK, str(qrels_path), str(run_path)],
            capture_output=True,
            check=True,
        )
        info["peak pytrec_eval"] = float(out.stdout)

    if not args.skip_ranx:
        print("ranx")
        from ranx import Qrels, Run
        from ranx import evaluate as ranx_evaluate

        ranx_qrels = timed(
            "ranx Qrels.from_file", lambda: Qrels.from_file(str(qrels_path), kind="trec"), t
        )
        ranx_run = timed("ranx Run.from_file", lambda: Run.from_file(str(run_path), kind="trec"), t)
        ranx_metrics = ["mrr@10", "ndcg@10", "recall@100", "map"]
        timed(
            "ranx evaluate (first call, JIT)",
            lambda: ranx_evaluate(
                ranx_qrels, ranx_run, ranx_metrics, return_mean=False, make_comparable=True
            ),
            t,
        )
        per_query = timed(
            "ranx evaluate (warm)",
            lambda: ranx_evaluate(
                ranx_qrels, ranx_run, ranx_metrics, return_mean=False, make_comparable=True
            ),
            t,
        )
        timed(
            "ranx evaluate mrr@10 + ndcg@10 (warm)",
            lambda: ranx_evaluate(
                ranx_qrels, ranx_run, ["mrr@10", "ndcg@10"], return_mean=False, make_comparable=True
            ),
            t,
        )
        qids = list(ranx_run.keys())
        order = np.argsort(qids)
        theirs = {
            m: dict(zip(np.array(qids)[order], np.asarray(per_query[m])[order], strict=True))
            for m in ranx_metrics
        }
        # ranx keeps file order for tied scores; compare on ndcg/recall where ties rarely matter
        agree("ranx", ours, theirs, {m: m for m in ranx_metrics}, tolerance=1e-6)
        print("  (ranx keeps tied scores in file order; trec_eval and abrank order them by doc id")
        print("   descending, so queries with ties near the top differ, as DESIGN.md warns)")
        del ranx_qrels, ranx_run, per_query

    if not args.skip_irm:
        print("ir_measures")
        import ir_measures
        from ir_measures import AP, RR, R, nDCG

        def irm():
            qrels_iter = ir_measures.read_trec_qrels(str(qrels_path))
            run_iter = ir_measures.read_trec_run(str(run_path))
            return list(
                ir_measures.iter_calc([RR @ 10, nDCG @ 10, R @ 100, AP], qrels_iter, run_iter)
            )

        rows = timed("ir_measures read + calc (files)", irm, t)
        theirs: dict = {}
        for row in rows:
            theirs.setdefault(str(row.measure), {})[row.query_id] = row.value
        agree(
            "ir_measures", ours, theirs, {"ndcg@10": "nDCG@10", "recall@100": "R@100", "map": "AP"}
        )

    print("ratios (how many times faster abrank is)")
    whole_label = "abrank metrics --per-query (whole process)"
    whole = t[whole_label]
    pytrec_total = None
    if "pytrec_eval RelevanceEvaluator + evaluate" in t:
        pytrec_total = (
            t["pytrec_eval parse_qrel + parse_run"] + t["pytrec_eval RelevanceEvaluator + evaluate"]
        )
        print(
            f"  abrank metrics vs pytrec_eval load + compute : {pytrec_total / whole:6.1f}x "
            f"({pytrec_total:.1f} s vs {whole:.1f} s; goal >= 5x)"
        )
        dropin = t["abrank metrics -q -m recip_rank ... (trec_eval's)"]
        print(
            f"  the same, trec_eval's command line            : {pytrec_total / dropin:6.1f}x "
            f"({pytrec_total:.1f} s vs {dropin:.1f} s)"
        )
    if shape == "sparse" and args.judged in (None, 20) and not args.long_ids:
        print(
            f"  abrank metrics vs trec_eval binary ({TREC_EVAL_BINARY_SECONDS} s, earlier): "
            f"{TREC_EVAL_BINARY_SECONDS / whole:6.1f}x (goal >= 10x)"
        )
    if "ranx evaluate (warm)" in t:
        ranx_warm = t["ranx evaluate (warm)"]
        print(
            f"  evaluate vs ranx evaluate (warm)             : "
            f"{ranx_warm / t['abrank evaluate (warm)']:6.1f}x "
            f"({ranx_warm:.2f} s vs {t['abrank evaluate (warm)']:.2f} s; goal >= 10x)"
        )
        two = t["ranx evaluate mrr@10 + ndcg@10 (warm)"]
        ours_two = t["abrank evaluate mrr@10 + ndcg@10 (warm)"]
        print(
            f"  evaluate vs ranx, mrr@10 + ndcg@10 (warm)    : {two / ours_two:6.1f}x "
            f"({two:.2f} s vs {ours_two:.2f} s; goal >= 10x)"
        )
        ranx_load = t["ranx Qrels.from_file"] + t["ranx Run.from_file"] + ranx_warm
        print(f"  abrank metrics vs ranx load + warm compute   : {ranx_load / whole:6.1f}x")
    if "ir_measures read + calc (files)" in t:
        irm = t["ir_measures read + calc (files)"]
        print(f"  abrank metrics vs ir_measures                : {irm / whole:6.1f}x")
    print(f"  peak memory of abrank metrics: {peak:,.0f} MB (goal < 2,000 MB)")
    dropin_label = "abrank metrics -q -m recip_rank ... (trec_eval's)"
    rows: list[tuple[str, float, float | None, float | None]] = [
        ("abrank metrics --per-query (whole process)", whole, CPU.get(whole_label), peak),
        (dropin_label, t[dropin_label], CPU.get(dropin_label), None),
    ]
    if pytrec_total is not None:
        info["cpu pytrec_eval"] = pytrec_cpu = (
            CPU["pytrec_eval parse_qrel + parse_run"]
            + CPU["pytrec_eval RelevanceEvaluator + evaluate"]
        )
        rows.append(
            (
                "pytrec_eval parse_qrel + parse_run + evaluate",
                pytrec_total,
                pytrec_cpu,
                info.get("peak pytrec_eval"),
            )
        )
    if "ranx evaluate (warm)" in t:
        rows.append(("ranx from_file + warm evaluate", ranx_load, None, None))
    if "ir_measures read + calc (files)" in t:
        irm_label = "ir_measures read + calc (files)"
        rows.append(("ir_measures read + calc", t[irm_label], CPU.get(irm_label), None))
    print_table(
        f"{shape}: whole timings (x abrank: the tool's time over abrank's)",
        rows,
        (whole, CPU[whole_label]),
    )
    info["cpu abrank"] = CPU[whole_label]
    return shape, whole, t[dropin_label], pytrec_total, info


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    raise SystemExit(main())
