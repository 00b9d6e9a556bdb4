"""Slow, obvious reference computations shared by several test modules."""

from __future__ import annotations

import math

import pandas as pd


def largest_moves(
    per_query: pd.DataFrame, control: str, treatment: str, metric: str, top: int = 10
) -> tuple[list[tuple], list[tuple]]:
    """The queries whose metric fell most and rose most, as (delta, query, control, treatment),
    by a plain loop; ties by query id. Queries undefined in either arm are skipped."""
    before = dict(
        zip(
            per_query.loc[per_query.arm == control, "query_id"],
            per_query.loc[per_query.arm == control, metric],
            strict=True,
        )
    )
    moves = []
    for query, after in zip(
        per_query.loc[per_query.arm == treatment, "query_id"],
        per_query.loc[per_query.arm == treatment, metric],
        strict=True,
    ):
        if not (math.isnan(after) or math.isnan(before[query])) and after != before[query]:
            moves.append((after - before[query], query, before[query], after))
    losses = sorted((m for m in moves if m[0] < 0), key=lambda m: (m[0], m[1]))[:top]
    wins = sorted((m for m in moves if m[0] > 0), key=lambda m: (-m[0], m[1]))[:top]
    return losses, wins
