"""The interleaving design's evidence: per unit, what each pair's treatment won, tied and
lost by each credit (DESIGN.md "The spine").

An interleaved comparison's value is sum M / sum D - 1/2 over the units, with M_u = wins
+ ties / 2 and D_u = the unit's impressions; its checks also need the wins and losses
apart (every impression a tie), the impressions with a click and the first team. So
``sums[pair]`` of :class:`~abrank.evidence.Evidence` holds, per unit (in the order of its
first impression, the order the tests draw units in): ``impressions`` (D_u), ``clicked``,
``first_control``, ``first_treatment``, and per credit ``<credit>`` (M_u),
``<credit>:wins``, ``<credit>:ties`` and ``<credit>:losses``; ``segment_sums[column][pair]``
the same per (segment value as text, unit). The same numbers come from every engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from abrank.evidence import ROWS, Evidence

#: The columns of a per-unit counts table of one pair and credit, as its tests read it.
COUNT_COLUMNS: tuple[str, ...] = (
    "wins",
    "ties",
    "losses",
    "clicked",
    "first_control",
    "first_treatment",
)
#: The counts that depend on the credit; the others are the impressions' own.
CREDITED = ("wins", "ties", "losses")
_SHARED = ("clicked", "first_control", "first_treatment")

Key = tuple[str, str]
"""(pair, credit)."""


def counts_evidence(
    unit: str,
    unit_counts: Mapping[Key, pd.DataFrame],
    segment_counts: Mapping[str, Mapping[Key, pd.DataFrame]],
    inputs: tuple[Mapping[str, Any], ...] = (),
) -> Evidence:
    """The evidence of per-unit count tables of every (pair, credit) (:data:`COUNT_COLUMNS`,
    indexed by unit; per segment column indexed by (value, unit))."""
    segments = {
        column: _by_pair(by_key, list(unit_counts)) for column, by_key in segment_counts.items()
    }
    return Evidence(
        unit=unit,
        sums=_by_pair(unit_counts, list(unit_counts)),
        segment_sums=segments,
        inputs=inputs,
        extras={"credits": tuple(dict.fromkeys(credit for _, credit in unit_counts))},
    )


def _by_pair(tables: Mapping[Key, pd.DataFrame], keys: list[Key]) -> dict[str, pd.DataFrame]:
    """One wide table per pair from the tables of its credits (units as its first credit's)."""
    pairs: dict[str, pd.DataFrame] = {}
    for pair in dict.fromkeys(p for p, _ in keys):
        credits = [(credit, tables[(p, credit)]) for p, credit in keys if p == pair]
        first = credits[0][1]
        columns: dict[str, Any] = {
            ROWS: first[list(CREDITED)].sum(axis=1),
            **{name: first[name] for name in _SHARED},
        }
        for credit, table in credits:
            table = table.reindex(first.index)
            columns[credit] = table["wins"] + table["ties"] / 2.0
            columns.update({f"{credit}:{name}": table[name] for name in CREDITED})
        pairs[pair] = pd.DataFrame(columns, index=first.index)
    return pairs


def credit_counts(table: pd.DataFrame, credit: str) -> pd.DataFrame:
    """One credit's per-unit counts (:data:`COUNT_COLUMNS`) from a pair's evidence table."""
    return pd.DataFrame(
        {
            **{name: table[f"{credit}:{name}"] for name in CREDITED},
            **{name: table[name] for name in _SHARED},
        },
        index=table.index,
    )


def credits_of(evidence: Evidence) -> list[str]:
    """The credits compared, in the config's order."""
    return list(evidence.extras["credits"])
