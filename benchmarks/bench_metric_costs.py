"""What each judged metric costs beside ndcg@10 on the memory engine.

The dense collection of ``bench_metrics.py`` (100,000 queries x 100 documents, 58
judgments per query, 9-byte doc ids; written once under ``benchmarks/scratch/``) is read
and joined once (:func:`abrank.engines.memory.prepare`); then each metric's kernel
(:func:`abrank.engines.memory.compute` on that one metric) is timed, best of ``--repeat``,
and printed with its ratio to ndcg@10's. The join is shared by every metric of a run, so
the kernel is what one more metric adds; the goal for the measures added with trec_eval
10 (err, rbp and its residual, gm_map, rprec, infap, and alpha_ndcg and err_ia, here on
ordinary judgments: one subtopic a query; ``bench_diversity.py`` times them on subtopic
judgments) is at most 1.5 x ndcg@10 each.

Run:  python benchmarks/bench_metric_costs.py [--queries N] [--repeat R]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_metrics import write_dense_collection  # noqa: E402

from abrank.engines.memory import compute, prepare  # noqa: E402
from abrank.io.trec import read_trec_qrels, read_trec_run  # noqa: E402
from abrank.metrics import parse_metric  # noqa: E402

BASELINE = "ndcg@10"
#: ndcg@10 first; then the metrics that came before trec_eval 10, for scale; then the new ones
METRICS = [
    BASELINE,
    "mrr@10",
    "map",
    "bpref",
    "err@10",
    "err",
    "rbp",
    "rbp@10",
    "rbp_residual",
    "gm_map",
    "rprec",
    "infap",
    "alpha_ndcg@10",
    "err_ia@10",
]
NEW = {
    "err@10", "err", "rbp", "rbp@10", "rbp_residual", "gm_map", "rprec", "infap",
    "alpha_ndcg@10", "err_ia@10",
}  # fmt: skip


def best_of(repeat: int, work) -> float:
    """The shortest of ``repeat`` timings of ``work()``, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    run_path, qrels_path = write_dense_collection(args.queries, 100, 58)
    start = time.perf_counter()
    prep = prepare(read_trec_run(run_path), read_trec_qrels(qrels_path), 1000)
    print(f"{args.queries:,} queries x 100 documents, dense judgments")
    print(f"read and join once: {time.perf_counter() - start:.2f} s\n")
    base = None
    print(f"{'metric':<22}{'kernel s':>10}{'x ndcg@10':>11}  goal")
    for name in METRICS:
        metric = parse_metric(name)
        seconds = best_of(args.repeat, lambda metric=metric: compute(prep, [metric], 1.0, "linear"))
        base = seconds if name == BASELINE else base
        assert base is not None
        ratio = seconds / base
        goal = ("ok" if ratio <= 1.5 else "OVER") + " (<= 1.5x)" if name in NEW else ""
        print(f"{metric.name:<22}{seconds:>10.3f}{ratio:>11.2f}  {goal}")


if __name__ == "__main__":
    main()
