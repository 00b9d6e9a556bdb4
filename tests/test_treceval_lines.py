"""The per-query lines of ``abrank metrics`` built by Arrow spell every value as Python does."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from abrank.treceval.lines import arrow_ids, fixed_texts, join_lines, repr_texts


def _awkward_values() -> np.ndarray:
    """Values over many magnitudes, the edges of the positional range, whole numbers,
    halves at the printed digit, negatives, zeros and non-finite values."""
    rng = np.random.default_rng(3)
    edges = []
    for x in (1e-4, 1e10, 1.0, 0.5, 1e5):
        lo, hi = np.array([x]), np.array([x])
        for _ in range(50):
            lo, hi = np.nextafter(lo, 0), np.nextafter(hi, np.inf)
            edges += [lo[0], hi[0]]
    return np.concatenate(
        [
            10 ** rng.uniform(-12, 20, 20_000),
            -(10 ** rng.uniform(-8, 8, 2_000)),
            np.floor(10 ** rng.uniform(0, 17, 2_000)),
            np.arange(2_001) / 2_000,  # many ties at the 4th decimal (0.00005, ...)
            np.arange(1, 200) / 3,
            np.array(edges),
            [0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 5e-324, 1.7976931348623157e308],
        ]
    )


def test_repr_texts_spell_as_python_repr() -> None:
    values = _awkward_values()
    assert repr_texts(values).to_pylist() == [repr(v) for v in values.tolist()]


@pytest.mark.parametrize(("digits", "width"), [(4, 6), (4, 0), (0, 0), (2, 6), (17, 0)])
def test_fixed_texts_spell_as_python_format(digits: int, width: int) -> None:
    values = _awkward_values()
    expected = [f"{v:{width}.{digits}f}" for v in values.tolist()]
    assert fixed_texts(values, digits, width).to_pylist() == expected


def test_join_lines_groups_the_measures_of_a_query() -> None:
    qids = pa.array(["q1", "q2", "q3"])
    columns = [pa.array(["0.5", "1.0", "0.0"]), pa.array(["1", "2", "3"])]
    text = join_lines(qids, ["map", "num_ret"], columns)
    assert text == (
        "map\tq1\t0.5\nnum_ret\tq1\t1\nmap\tq2\t1.0\nnum_ret\tq2\t2\nmap\tq3\t0.0\nnum_ret\tq3\t3\n"
    )
    assert join_lines(pa.array([], pa.string()), ["map"], [pa.array([], pa.string())]) == ""


def test_arrow_ids_spell_non_text_ids_as_str() -> None:
    assert arrow_ids(["a", "b"]).to_pylist() == ["a", "b"]
    assert arrow_ids([3, 10]).to_pylist() == ["3", "10"]
    assert arrow_ids(pa.chunked_array([["x"], ["y"]])).to_pylist() == ["x", "y"]
