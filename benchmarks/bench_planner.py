"""Wall time of ``abrank simulate``'s default work (goal: under 60 s each).

The default grid is 6 traffic sizes x 200 simulated experiments x 2 designs (the A/B
test computes click_rr@10 and ctr@3 on the same simulated clicks). Runs
:func:`abrank.planner.simulate_power` on the bundled demo experiment and, when the shared
TREC data lies beside the checkout, on DL19 passage BM25 vs BM25 + RankVicuna: with the
automatic grid under both click models, and on the fixed grid 250 ... 8,000 users (40,000
impressions per experiment at its largest size). Prints the time, the grid, the users each
design needs for 80% power and the ratio A/B click_rr@10 users / interleaving users.

    python benchmarks/bench_planner.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abrank.config import build_experiment, load_experiment  # noqa: E402
from abrank.planner import simulate_power  # noqa: E402

GOAL_S = 60.0
FIXED_GRID = [250, 500, 1000, 2000, 4000, 8000]
DL = ROOT.parent / "shared" / "data" / "trec-dl-passage"


def experiments() -> dict[str, object]:
    found: dict[str, object] = {"demo": load_experiment(ROOT / "experiments/demo-reranker.yaml")}
    if DL.is_dir():
        found["dl19 bm25 vs rankvicuna"] = build_experiment(
            {
                "name": "dl19",
                "control": {"name": "bm25", "path": str(DL / "runs/dl19.bm25-flat.top100.txt")},
                "treatments": [
                    {
                        "name": "rankvicuna",
                        "path": str(DL / "runs/dl19.bm25-flat.top100+rankvicuna-7b.txt"),
                    }
                ],
                "judgments": {"path": str(DL / "qrels.dl19-passage.txt")},
                "metrics": ["mrr@10"],
            }
        )
    else:
        print(f"{DL}: not found, DL19 skipped")
    return found


def main() -> None:
    for name, experiment in experiments().items():
        for model, grid in (("pbm", None), ("cascade", None), ("pbm", FIXED_GRID)):
            started = time.perf_counter()
            result = simulate_power(experiment, click_model=model, users=grid)
            seconds = time.perf_counter() - started
            needed = ", ".join(f"{d.label} {d.needed.text()}" for d in result.designs)
            ratio = result.ratio
            shown = "n/a" if ratio.value is None else f"{ratio.bound} {ratio.value:.1f}x"
            print(
                f"{name}, {model}, grid {list(result.users)} ({result.grid_source}), "
                f"{result.simulations} simulations: {seconds:.1f} s "
                f"({seconds / GOAL_S:.0%} of the {GOAL_S:.0f} s goal)"
            )
            print(f"  users for 80% power: {needed}; A/B / interleaving: {shown}")


if __name__ == "__main__":
    main()
