"""Per-query output lines built by Arrow string kernels, not by one Python format per value.

``abrank metrics --per-query`` prints a line per query and measure: 400,000 lines for
100,000 queries and four measures, which Python's formatting took a few tenths of a
second to write, as long as the metrics themselves. Here every column of values becomes
text at once and the lines are joined in Arrow; only the rare value whose text Arrow cannot
be trusted to spell exactly as Python does (an exponent, a tie at the last printed digit, a
negative, NaN) goes through Python's own formatting, so the text is unchanged byte for
byte: ``repr(value)`` (Python's shortest round trip) or ``f"{value:{width}.{digits}f}"``
(trec_eval's ``%6.4f``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank.io.buffers import arrow_of, text_scalar, texts_of

__all__ = ["arrow_ids", "fixed_texts", "join_lines", "repr_texts"]

# Arrow spells a double in positional notation with Python's shortest round-trip digits in
# this range (whole numbers but for the ".0"); outside it one or both write an exponent,
# each in its own style (Arrow "1e-7", "1.5e+10"; Python "1e-07", "15000000000.0")
_POSITIONAL = (1e-4, 1e10)
# |value * 10**digits| below this is a whole number that a double holds exactly
_EXACT = 2.0**52


def repr_texts(values: np.ndarray) -> pa.Array:
    """``repr(v)`` of every value (Python's shortest round-trip text), as Arrow strings."""
    values = np.asarray(values, dtype=np.float64)
    text = pc.cast(arrow_of(values), pa.string())
    with np.errstate(invalid="ignore"):
        size = np.abs(values)
        whole = values == np.floor(values)  # False for NaN and infinities
        plain = (size >= _POSITIONAL[0]) & (size < _POSITIONAL[1])
    # Arrow writes a whole number without a decimal point: Python adds ".0"
    zero = values == 0.0  # 0.0 and -0.0: Arrow writes "0" and "-0"
    suffix = (whole & plain) | zero
    if suffix.any():
        dotted = pc.binary_join_element_wise(text, text_scalar(".0"), text_scalar(""))
        text = pc.if_else(arrow_of(suffix), dotted, text)
    return _python_where(text, values, ~(plain | zero), repr)


def fixed_texts(values: np.ndarray, digits: int, width: int = 0) -> pa.Array:
    """``f"{v:{width}.{digits}f}"`` of every value, as Arrow strings.

    The value is scaled by ``10**digits`` and rounded to a whole number; where the scaled
    double lies so near a half that its own rounding error could tip the printed digit
    (or where the value is negative, huge or not finite), Python formats it instead.
    """
    values = np.asarray(values, dtype=np.float64)
    scale = 10.0**digits
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = values * scale
        nearest = np.rint(scaled)
        # distance of the scaled value from the nearest half-way point, against a bound
        # well above the error of one multiplication (half a unit in the last place)
        tie = np.abs(np.abs(scaled - nearest) - 0.5) <= 1e-9 * np.maximum(1.0, scaled)
        odd = ~(values >= 0) | np.signbit(values) | ~(scaled < _EXACT) | tie
    whole = np.where(odd, 0.0, nearest).astype(np.int64)
    power = 10**digits
    integer = pc.cast(arrow_of(whole // power), pa.string())
    if digits:
        fraction = pc.utf8_lpad(pc.cast(arrow_of(whole % power), pa.string()), digits, "0")
        text = pc.binary_join_element_wise(integer, fraction, text_scalar("."))
    else:
        text = integer
    if width:
        text = pc.utf8_lpad(text, width, " ")
    style = f"{{:{width}.{digits}f}}"
    return _python_where(text, values, odd, style.format)


def _python_where(
    text: pa.Array, values: np.ndarray, where: np.ndarray, spell: Callable[[float], str]
) -> pa.Array:
    """``text`` with the values at ``where`` spelled by Python's ``spell`` instead."""
    rows = np.flatnonzero(where)
    if not rows.size:
        return text
    spelled = texts_of([spell(v) for v in values[rows].tolist()])
    return pc.replace_with_mask(text, arrow_of(where), spelled)


def arrow_ids(qids: Sequence[object] | pa.Array | pa.ChunkedArray) -> pa.Array:
    """Query ids as one Arrow string array: as given when they are Arrow already, else
    each as ``str`` spells it (as an f-string would print it)."""
    if isinstance(qids, pa.ChunkedArray):
        qids = qids.combine_chunks()
    if isinstance(qids, pa.Array):
        return qids if pa.types.is_string(qids.type) else qids.cast(pa.string())
    try:
        return pa.array(qids, type=pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
        return pa.array([str(q) for q in qids], type=pa.string())


def join_lines(qids: pa.Array, names: Sequence[str], columns: Sequence[pa.Array]) -> str:
    """``name<TAB>query<TAB>value`` lines, all measures of the first query, then the next.

    ``columns[j]`` holds measure ``names[j]``'s texts in ``qids`` order; every line ends
    with a line break.
    """
    count, size = len(columns), len(qids)
    if not count or not size:
        return ""
    qids = qids.cast(pa.large_string())
    tab = text_scalar("\t", large=True)
    blocks = [
        pc.binary_join_element_wise(
            text_scalar(name, large=True), qids, column.cast(pa.large_string()), tab
        )
        for name, column in zip(names, columns, strict=True)
    ]
    # block j holds measure j of every query: read query by query
    order = np.arange(count * size).reshape(count, size).T.ravel()
    lines = pa.concat_arrays(blocks).take(arrow_of(order))
    bounds = arrow_of(np.array([0, len(lines)], dtype=np.int64))
    whole = pa.LargeListArray.from_arrays(bounds, lines)
    return pc.binary_join(whole, text_scalar("\n", large=True))[0].as_py() + "\n"
