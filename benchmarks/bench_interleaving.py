"""Wall time of analysing an interleaved log of 10,000,000 shown results (goal: under 10 s).

Writes a synthetic team-draft log to a Parquet file in a temporary folder: 1,000,000
impressions (``--impressions``) of 10 results each by about 200,000 users (one user per
five impressions), each pair of ranks shared by the two teams in a random order, clicks
from a position-based model (examination 1 / rank) whose attractiveness is slightly
higher for the treatment's results (a small true preference). Then times, one after the
other: reading it (pyarrow, to pandas), :func:`abrank.interleaving.impression_outcomes`
and :func:`abrank.stats.compare_interleaved` with 10,000 unit-bootstrap resamples and the
first-team check; prints each step, the total and its ratio to the goal.

    python benchmarks/bench_interleaving.py
    python benchmarks/bench_interleaving.py --impressions 100000
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from abrank.interleaving import impression_outcomes  # noqa: E402
from abrank.stats import compare_interleaved  # noqa: E402

GOAL_S = 10.0
RESULTS = 10
TEAMS = ("control", "treatment")


def write_log(path: Path, impressions: int, users: int, seed: int) -> int:
    """Write the synthetic log to ``path``; return its number of rows."""
    rng = np.random.default_rng(seed)
    rows = impressions * RESULTS
    rank = np.tile(np.arange(1, RESULTS + 1, dtype=np.int16), impressions)
    # each pair of ranks (1-2, 3-4, ...) holds one result of each team, in a random order
    control_first = rng.random(rows // 2) < 0.5
    is_treatment = np.empty(rows, dtype=bool)
    is_treatment[0::2] = ~control_first
    is_treatment[1::2] = control_first
    attract = np.where(is_treatment, 0.31, 0.29)
    clicked = rng.random(rows) < attract / rank
    team = pa.DictionaryArray.from_arrays(pa.array(is_treatment.astype(np.int8)), pa.array(TEAMS))
    impression = np.repeat(np.arange(impressions, dtype=np.int64), RESULTS)
    user = np.repeat(rng.integers(0, users, impressions, dtype=np.int64), RESULTS)
    table = pa.table(
        {
            "impression_id": impression,
            "user_id": user,
            "rank": rank,
            "doc_id": rng.integers(0, 1_000_000, rows, dtype=np.int64),
            "team": team,
            "clicked": clicked,
        }
    )
    pq.write_table(table, path)
    return rows


def write_timed(path: Path, impressions: int, users: int, seed: int) -> int:
    """:func:`write_log`, printing the rows written and the time taken."""
    began = time.perf_counter()
    rows = write_log(path, impressions, users, seed)
    print(f"wrote {rows:,} rows ({impressions:,} impressions, {users:,} users) "
          f"in {time.perf_counter() - began:.2f} s")  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impressions", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=None, help="default: impressions / 5")
    parser.add_argument("--resamples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    users = args.users or max(1, args.impressions // 5)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "interleaved.parquet"
        write_timed(path, args.impressions, users, args.seed)
        steps: list[tuple[str, float]] = []
        start = time.perf_counter()
        log = pq.read_table(path).to_pandas()
        steps.append(("read (pyarrow -> pandas)", time.perf_counter() - start))
        start = time.perf_counter()
        outcomes = impression_outcomes(log, control=TEAMS[0], treatment=TEAMS[1])
        steps.append(("impression_outcomes", time.perf_counter() - start))
        start = time.perf_counter()
        result = compare_interleaved(outcomes, n_resamples=args.resamples, teams=TEAMS)
        steps.append(
            (f"compare_interleaved ({args.resamples:,} resamples)", time.perf_counter() - start)
        )
    for name, seconds in steps:
        print(f"  {name:<42} {seconds:7.2f} s")
    total = sum(seconds for _, seconds in steps)
    print(f"  {'total':<42} {total:7.2f} s  ({total / GOAL_S:.2f} x the {GOAL_S:g} s goal)")
    low, high = result.ci
    print(
        f"delta {result.delta:+.5f} [{low:+.5f}, {high:+.5f}], p {result.p_value:.3g} (t), "
        f"{result.p_values['bootstrap']:.3g} (bootstrap); W/T/L {result.wins:,}/"
        f"{result.ties:,}/{result.losses:,}; units {result.n_units['all']:,}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
