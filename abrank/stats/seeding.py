"""Stable random generators for resampling: one per (seed, metric, treatment, segment, test).

A comparison's draws must not depend on which other metrics, tests or comparisons run
beside it, nor on Python's hash seed: each generator is derived from a stable hash of
those names and a stream number per kind of draw.
"""

from __future__ import annotations

import hashlib
import json
from typing import cast

import numpy as np

STREAMS = {"permutation": 1, "bootstrap": 2, "relative": 3}
"""Stream number of each kind of draw (the spawn key of its SeedSequence)."""


def generator(
    seed: int | None,
    metric: str | list,
    treatment: str,
    segment: str | None,
    stream: str,
) -> np.random.Generator:
    """A generator derived from (seed, metric, treatment, segment, stream) by a stable hash.

    ``metric`` is a list (``["shared", n]``) for draws shared by the metrics of one
    comparison on n queries; ``seed=None`` draws fresh entropy.
    """
    if seed is None:
        seed = int(cast(int, np.random.SeedSequence().entropy))  # fresh entropy: one int
    text = json.dumps([int(seed), metric, treatment, segment], ensure_ascii=False)
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()
    entropy = int.from_bytes(digest, "little")
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(STREAMS[stream],)))
