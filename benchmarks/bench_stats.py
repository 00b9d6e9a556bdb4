"""Speed and memory of abrank.stats.compare at a million queries, against plain baselines.

Run:  python benchmarks/bench_stats.py            (full: 1,000,000 queries, a few minutes)
      python benchmarks/bench_stats.py --quick    (CI smoke run: 100,000 queries, small counts)

Prints, for MRR@10 deltas (few distinct values) and NDCG@10 deltas (mostly distinct):
  * the full paired comparison (t-test, sign-flip test, BCa bootstrap of the delta,
    BCa bootstrap of the relative lift) with 10,000 resamples each: time and peak memory;
  * a plain NumPy index bootstrap (1,000 resamples, chunked) on the same data, and the
    ratio of its 10,000-resample extrapolation to abrank's time;
  * scipy.stats.bootstrap (BCa) and scipy.stats.permutation_test with the same number of
    resamples at the largest n (doubling) they finish within the time limit, and
    abrank's time at that n. Both get ``batch`` so that no call holds more than ~4M
    numbers (unbatched, they build n x B and n x n arrays: tens of GiB at these sizes).
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np
from scipy import stats as sps

from abrank.stats import compare


def mrr_arms(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """RR@10 for two rankers on n queries of shared difficulty (deltas: <= 121 values)."""
    ease = rng.beta(1.5, 1.5, n)
    lift = np.clip(ease + 0.02, 0, 1)
    c_rank = rng.geometric(ease)
    t_rank = rng.geometric(lift)
    return (np.where(c_rank <= 10, 1.0 / c_rank, 0.0), np.where(t_rank <= 10, 1.0 / t_rank, 0.0))


def ndcg_arms(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """NDCG@10-like values in [0, 1]: continuous, so nearly every delta is distinct."""
    c = rng.beta(2.0, 2.5, n)
    t = np.clip(c + rng.normal(0.005, 0.15, n), 0.0, 1.0)
    return c, t


def timed(func, *args, **kwargs):
    """(result, seconds, peak traced MiB) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    result = func(*args, **kwargs)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return result, seconds, peak


def plain_bootstrap(d: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The obvious NumPy bootstrap of the mean: index draws, in chunks of ~4M numbers."""
    n = d.size
    rows = max(1, (1 << 22) // n)
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        out[start : start + b] = d[rng.integers(0, n, size=(b, n))].mean(axis=1)
    return out


def largest_n_within(run, limit: float, start: int, cap: int) -> tuple[int, float]:
    """Double n from ``start`` while the predicted time of the next step stays under limit."""
    n, best = start, (0, 0.0)
    while n <= cap:
        seconds = run(n)
        if seconds > limit:
            break
        best = (n, seconds)
        if seconds * 2.2 > limit:  # the next doubling would not finish in time
            break
        n *= 2
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts for a CI smoke run")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    resamples = 2_000 if args.quick else 10_000
    plain_draws = 100 if args.quick else 1_000
    limit = 5.0 if args.quick else 60.0
    rng = np.random.default_rng(0)

    print(f"n = {n:,} paired queries, {resamples:,} resamples per test")
    print("-" * 78)
    data = {"MRR@10": mrr_arms(rng, n), "NDCG@10": ndcg_arms(rng, n)}
    ours = {}
    for name, (c, t) in data.items():
        result, seconds, peak = timed(
            compare, c, t, n_resamples=resamples, metric=name.lower(), seed=0
        )
        ours[name] = seconds
        print(f"{name}: {np.unique(t - c).size:,} distinct deltas")
        print(
            f"  abrank compare (t + sign-flip + BCa delta + BCa lift): {seconds:7.2f} s, "
            f"peak traced memory {peak:6.0f} MiB"
        )
        print(
            f"    delta {result.delta:+.5f}  t-CI [{result.ci[0]:+.5f}, {result.ci[1]:+.5f}]  "
            f"BCa [{result.bootstrap_ci[0]:+.5f}, {result.bootstrap_ci[1]:+.5f}]  "
            f"p_t {result.p_values['t']:.3g}  p_perm {result.p_values['permutation']:.3g}"
        )
        print(f"    approximation: {result.approximation or 'none (exact resampling)'}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak resident memory after abrank's comparisons: {rss:.0f} MiB")
    print("-" * 78)

    for name, (c, t) in data.items():
        d = t - c
        print(f"{name} baselines")
        _, plain_s, plain_peak = timed(plain_bootstrap, d, plain_draws, np.random.default_rng(1))
        scaled = plain_s * resamples / plain_draws
        print(
            f"  plain NumPy index bootstrap, {plain_draws:,} resamples: {plain_s:7.2f} s "
            f"(peak {plain_peak:.0f} MiB); x{resamples // plain_draws} = {scaled:.1f} s, "
            f"{scaled / ours[name]:,.1f}x abrank's whole comparison"
        )

        def scipy_bca(k: int, d=d) -> float:
            sample = d[:k]
            start = time.perf_counter()
            sps.bootstrap(
                (sample,), np.mean, n_resamples=resamples, method="BCa", rng=2,
                batch=max(1, (1 << 22) // k),
            )  # fmt: skip
            return time.perf_counter() - start

        def scipy_perm(k: int, d=d) -> float:
            sample = d[:k]
            start = time.perf_counter()
            sps.permutation_test(
                (sample,), np.mean, permutation_type="samples", n_resamples=resamples, rng=3,
                batch=max(1, (1 << 22) // k),
            )  # fmt: skip
            return time.perf_counter() - start

        for label, run in (("scipy.stats.bootstrap BCa", scipy_bca),
                           ("scipy.stats.permutation_test", scipy_perm)):  # fmt: skip
            k, k_seconds = largest_n_within(run, limit, 1_000, n)
            _, at_k, _ = timed(
                compare, c[:k], t[:k], n_resamples=resamples, metric=name.lower(), seed=0
            )
            print(
                f"  {label}: largest n within {limit:.0f} s = {k:,} ({k_seconds:.1f} s); "
                f"abrank's full comparison at that n: {at_k:.3f} s ({k_seconds / at_k:,.1f}x)"
            )
        print("-" * 78)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process peak resident memory (including the scipy baselines): {peak_rss:.0f} MiB")


if __name__ == "__main__":
    main()
