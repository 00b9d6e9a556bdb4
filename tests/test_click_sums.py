"""The units found in more than one arm of the SQL engines' per-unit sums."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from abrank.engines.sql.click_sums import shared_units


@pytest.mark.parametrize("prefix", ["", "u", "a-longer-unit-id-"])  # one word of key, two, hashed
def test_units_in_two_or_three_arms_are_the_ids_in_more_than_one(prefix):
    rng = np.random.default_rng(5)
    arms = [np.sort(rng.choice(5_000, 2_000, replace=False)) for _ in range(3)]
    texts = [[f"{prefix}{u}" for u in arm] for arm in arms]
    expected = {
        u for i, arm in enumerate(texts) for u in arm if any(u in set(o) for o in texts[:i])
    }
    found = shared_units([pa.chunked_array([pa.array(t)]) for t in texts], "user_id")
    assert found.units == expected
    assert found.count == len(expected)
    assert list(found.examples) == sorted(expected, key=lambda u: u.encode())[:5]
    two = shared_units([pa.chunked_array([pa.array(t)]) for t in texts[:2]], "user_id")
    assert two.units == set(texts[0]) & set(texts[1])


def test_no_unit_in_two_arms_and_one_arm():
    found = shared_units(
        [pa.chunked_array([pa.array(["1", "2"])]), pa.chunked_array([pa.array(["3"])])], "u"
    )
    assert (found.count, found.examples, found.units) == (0, (), frozenset())
    alone = shared_units([pa.chunked_array([pa.array(["1", "2"])])], "u")
    assert alone.count == 0
