"""The sequential test's tuning, its minimum detectable effect, and what it does not draw.

* tuned at the comparison's own sample size unless ``sequential_tuning`` names N*;
* the MDE of a sequential primary test is the delta its confidence sequence excludes 0
  at with 80% probability at the current n (not the fixed-horizon t's);
* a sequential primary test has an interval of its own: no bootstrap is drawn for it.
"""

from __future__ import annotations

import numpy as np

from abrank.stats.draws import plan_shared_draws


def test_a_sequential_primary_test_draws_no_bootstrap() -> None:
    rng = np.random.default_rng(1)
    c, t = rng.random(400), rng.random(400)
    pairs = {"m": (c, t)}
    for run in (("sequential",), ("sequential", "t"), ("sequential", "t", "permutation")):
        shared = plan_shared_draws(pairs, {"m": run}, 10_000, 0, "treatment", None)
        assert shared.get("m") is None or shared["m"].delta is None, run
    # a primary test without an interval of its own still needs the bootstrap's
    shared = plan_shared_draws(pairs, {"m": ("permutation",)}, 10_000, 0, "treatment", None)
    assert shared["m"].delta is not None
