"""Rank-biased overlap (Webber, Moffat & Zobel, TOIS 2010) between two arms' lists, per query.

RBO weighs the overlap of two rankings at every depth d by p^(d-1): with p = 0.9 the top 10
carry about 86% of the weight, so it reads as "how alike are the first pages". For finite
lists it is the extrapolated RBO_ext of the paper's equation 32, which assumes that the
agreement seen at the end of the lists continues below them, and which handles lists of
unequal lengths s <= l (the shorter list's overlap X_s carried on to depth l):

    RBO_ext = (1 - p) / p * ( sum_{d=1..l} X_d / d * p^d
                              + sum_{d=s+1..l} X_s * (d - s) / (s * d) * p^d )
              + ( (X_l - X_s) / l + X_s / s ) * p^l

where X_d is the number of documents both lists hold within depth d (the whole shorter list
beyond its end). Two identical lists score 1, disjoint ones 0. A query one arm did not rank
at all scores 0 against a list, and is undefined (NaN) when neither arm ranked it.

Computed for every query at once: a document both lists hold counts in X_d from depth
max(rank in one, rank in the other) on, so each sum is a difference of prefix sums of
p^d / d and p^d, gathered per query with ``bincount``; the lists are joined on integer
keys (:mod:`abrank.explain.pairs`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from abrank.explain.pairs import Side, lookup, sides
from abrank.io.arrow import as_arrow, query_codes

DEFAULT_P = 0.9
"""The persistence of :func:`rbo`: the top 10 hold about 86% of the weight."""


def rbo(control: pd.DataFrame, treatment: pd.DataFrame, p: float = DEFAULT_P) -> pd.Series:
    """RBO_ext (module text) per query between two ranked lists (``query_id``, ``doc_id``,
    ``rank`` 1-based, as :func:`abrank.explain.lists.ranked_lists` gives them), indexed by
    every query either list holds, in id order."""
    check_persistence(p)
    (codes_c, codes_t), ids = query_codes(
        as_arrow(control["query_id"], "control: query_id"),
        as_arrow(treatment["query_id"], "treatment: query_id"),
    )
    side_c, side_t = sides(
        [
            (codes_c, as_arrow(control["doc_id"], "control: doc_id"), np.arange(len(control))),
            (
                codes_t,
                as_arrow(treatment["doc_id"], "treatment: doc_id"),
                np.arange(len(treatment)),
            ),
        ]
    )
    value = rbo_codes(
        side_c,
        control["rank"].to_numpy(dtype=np.int64),
        side_t,
        treatment["rank"].to_numpy(dtype=np.int64),
        len(ids),
        p,
    )
    queries = pd.Index(ids.to_numpy(zero_copy_only=False)).astype(str)
    return pd.Series(value, index=pd.Index(queries, name="query_id"), name="rbo")


def check_persistence(p: float) -> None:
    """ValueError unless ``0 < p < 1``."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p: expected a persistence strictly between 0 and 1, got {p!r}")


def rbo_codes(
    control: Side,
    rank_c: np.ndarray,
    treatment: Side,
    rank_t: np.ndarray,
    n: int,
    p: float = DEFAULT_P,
    matched: np.ndarray | None = None,
) -> np.ndarray:
    """RBO_ext per query code ``0..n-1`` (NaN for a code neither list holds) between two
    lists given as join sides (:mod:`abrank.explain.pairs`) and their ranks. ``matched``:
    the treatment row of each control row (-1: none), when it is at hand."""
    check_persistence(p)
    length_c = np.bincount(control.codes, minlength=n).astype(np.int64)
    length_t = np.bincount(treatment.codes, minlength=n).astype(np.int64)
    short = np.minimum(length_c, length_t)
    long = np.maximum(length_c, length_t)
    at = lookup(control, treatment) if matched is None else matched
    shared = np.flatnonzero(at >= 0)  # in the control's order, as an inner join keeps it
    code = control.codes[shared].astype(np.int64)
    depth = np.maximum(rank_c[shared], rank_t[at[shared]]).astype(np.int64)
    top = int(long.max()) if n else 0
    d = np.arange(1, top + 1, dtype=np.float64)
    power = p**d
    harmonic = np.concatenate(([0.0], np.cumsum(power / d)))  # H(n) = sum_{d<=n} p^d / d
    geometric = np.concatenate(([0.0], np.cumsum(power)))  # G(n) = sum_{d<=n} p^d
    # sum_{d=1..l} X_d p^d / d: each shared document adds H(l) - H(m - 1) from its depth m
    weights = harmonic[long[code]] - harmonic[depth - 1]
    agreement = np.bincount(code, weights=weights, minlength=n)
    x_short = np.bincount(code[depth <= short[code]], minlength=n).astype(np.float64)
    x_long = np.bincount(code, minlength=n).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = (x_short / short) * (
            (geometric[long] - geometric[short]) - short * (harmonic[long] - harmonic[short])
        )
        extrapolated = ((x_long - x_short) / long + x_short / short) * p ** long.astype(float)
        value = (1.0 - p) / p * (agreement + tail) + extrapolated
    out: np.ndarray = np.where(short > 0, value, np.where(long > 0, 0.0, np.nan))
    return out
