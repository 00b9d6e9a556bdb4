"""The fast paths give the libraries' numbers to the last bit: the index-bootstrap sums
against NumPy's own gather-and-sum.
"""

from __future__ import annotations

import numpy as np
import pytest

from abrank import resampling as rs


def _numpy_index_sums(sample: rs.Prepared, n_resamples: int, rng: np.random.Generator):
    """The index bootstrap as first written: gather the (b, n, k) draws, sum over n."""
    n, k = sample.raw.shape
    out = np.zeros((n_resamples, k))
    rows = rs._rows_per_chunk(n * k)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        idx = rng.integers(0, n, size=(b, n), dtype=np.int32)
        out[start : start + b] = sample.raw[idx].sum(axis=1)
    return out


@pytest.mark.parametrize("k", [1, 2, 3])
def test_index_bootstrap_sums_are_numpys_gather_and_sum_to_the_last_bit(k: int) -> None:
    rng = np.random.default_rng(3)
    cases = [(int(rng.integers(2, 6000)), 3000) for _ in range(12)]
    cases += [(1, 5), (2, 7), (4869, 3000), (20_000, 105), (200_000, 21), (1_100_000, 9)]
    for trial, (n, draws) in enumerate(cases):
        x = rng.standard_normal((n, k)) * 10 ** rng.uniform(-3, 3, size=k)
        sample = rs.prepare(x[:, 0] if k == 1 else x, draws, (64,) * k, force="index")
        fast = rs.bootstrap_sums(sample, draws, np.random.default_rng(trial))
        plain = _numpy_index_sums(sample, draws, np.random.default_rng(trial))
        np.testing.assert_array_equal(fast, plain, err_msg=f"n={n}, draws={draws}")
