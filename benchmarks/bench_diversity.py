"""Cost of the diversity metrics (alpha_ndcg@10, err_ia@10) against ndcg@10 on the memory
engine (goal: at most 1.5 times ndcg@10's cost each).

A synthetic experiment of realistic size: 10,000 queries of 100 ranked documents, 3 to 6
subtopics a query, 60 judged documents a query each relevant to a subtopic with chance 0.3
(grades 1 to 3) — about 1.1 million subtopic judgment rows. Three figures per metric, the
best of ``--repeat`` runs:

- ``end to end``: ``abrank.evaluate(run, subtopic judgments, [metric])``, the join included
  (the join of subtopic judgments is the same for every metric);
- ``kernel``: the metric alone on a prepared join (``abrank.engines.memory.compute``);
- the same on the judgments collapsed to one grade per document (ordinary qrels: one
  subtopic a query).

The metrics take turns within each round, so that a busy spell of a shared machine weighs
on all of them alike.

    python benchmarks/bench_diversity.py
    python benchmarks/bench_diversity.py --queries 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abrank import evaluate  # noqa: E402
from abrank.engines.memory import compute, prepare  # noqa: E402
from abrank.io.subtopics import collapse_frame  # noqa: E402
from abrank.metrics import parse_metric  # noqa: E402

GOAL = 1.5


def synthetic(queries: int, depth: int, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run of ``depth`` documents a query and its subtopic judgments."""
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{i:05d}" for i in range(queries)])
    pool = 150
    docs = rng.permuted(np.tile(np.arange(pool), (queries, 1)), axis=1)
    run = pd.DataFrame(
        {
            "query_id": np.repeat(qids, depth),
            "doc_id": np.char.add("d", docs[:, :depth].astype(str).astype(object)).ravel(),
            "rank": np.tile(np.arange(1, depth + 1), queries),
        }
    )
    judged = 60
    subtopics = rng.integers(3, 7, queries)
    q_rows = np.repeat(np.arange(queries), subtopics * judged)
    s_rows = np.concatenate([np.repeat(np.arange(s), judged) for s in subtopics])
    d_rows = np.concatenate(
        [np.tile(docs[q, rng.permutation(100)[:judged]], s) for q, s in enumerate(subtopics)]
    )
    grade = np.where(rng.random(q_rows.size) < 0.3, rng.integers(1, 4, q_rows.size), 0)
    judgments = pd.DataFrame(
        {
            "query_id": qids[q_rows],
            "subtopic": (s_rows + 1).astype(str),
            "doc_id": np.char.add("d", d_rows.astype(str)).astype(object),
            "relevance": grade.astype(np.float64),
        }
    )
    return run, judgments


def best(jobs: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The least wall time of each job over ``repeat`` rounds, the jobs taking turns within
    a round (so that a busy spell of the machine weighs on all of them alike)."""
    times: dict[str, float] = dict.fromkeys(jobs, float("inf"))
    for _ in range(repeat):
        for name, job in jobs.items():
            start = time.perf_counter()
            job()
            times[name] = min(times[name], time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    run, judgments = synthetic(args.queries, args.depth)
    plain = collapse_frame(judgments)
    print(
        f"{args.queries:,} queries x {args.depth} documents; {len(judgments):,} subtopic "
        f"judgments ({len(plain):,} documents judged)"
    )
    names = ["ndcg@10", "alpha_ndcg@10", "err_ia@10"]
    figures = {}
    for label, given in (("subtopic judgments", judgments), ("ordinary judgments", plain)):
        prep = prepare(run, given, 1000, 10)
        whole = best(
            {m: lambda m=m, given=given: evaluate(run, given, [m]) for m in names}, args.repeat
        )
        kernel = best(
            {
                m: lambda m=m, prep=prep: compute(prep, [parse_metric(m)], 1.0, "linear")
                for m in names
            },
            args.repeat,
        )
        print(f"\n{label}")
        print(f"{'metric':<15}{'end to end':>12}{'ratio':>8}{'kernel':>10}{'ratio':>8}")
        for m in names:
            print(
                f"{m:<15}{whole[m]:>10.3f} s{whole[m] / whole['ndcg@10']:>8.2f}"
                f"{kernel[m] * 1000:>8.1f}ms{kernel[m] / kernel['ndcg@10']:>8.2f}"
            )
        figures[label] = max(whole[m] / whole["ndcg@10"] for m in names[1:])
    worst = max(figures.values())
    print(
        f"\ngoal: at most {GOAL}x ndcg@10 end to end: {'met' if worst <= GOAL else 'MISSED'} "
        f"(worst {worst:.2f}x)"
    )


if __name__ == "__main__":
    main()
