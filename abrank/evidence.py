"""Evidence: what an engine returns and the statistics read (DESIGN.md "The spine").

Per arm, per unit, the sums that clustered inference reads: M_u, the sum of a metric's
values over the unit's rows, and D_u, how many of its rows have a value; overall and per
segment value. These are sufficient statistics: the delta method, the unit bootstrap and
the permutation test need nothing else, so one test serves every engine, which returns
these few numbers per unit however large its logs. A design may add named extras (the
online design's click-through rate by rank, the interleaving design's credits).

Every design's statistics read it: online logs per user or session
(:func:`abrank.designs.online.logs.online_evidence`); an offline replay per query, D_u = 1
where the value is defined, the queries aligned across arms for pairing
(:meth:`abrank.analysis.score.ScoredArms.evidence`); an interleaving log per unit and team
pair, M_u = wins + ties / 2 and D_u = impressions (:mod:`abrank.designs.interleaved.evidence`);
a design added from outside abrank from the engines' column sums
(:func:`abrank.engines.column_sums.column_sums`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: The column of a sums frame holding each unit's rows (D_u of a metric that every row has).
ROWS = "impressions"


@dataclass(frozen=True)
class Evidence:
    """Per-unit sums of every arm, overall and per segment value.

    ``sums[arm]`` is indexed by unit (text; in byte order unless the design says otherwise)
    with the columns ``impressions``
    (the unit's rows), one per metric holding M_u, and ``<metric>:n`` holding D_u for a
    metric that some rows lack (else D_u is the unit's rows). ``segment_sums[column][arm]``
    has the same columns, indexed by (segment value, unit). ``inputs`` are the files read
    (summary.json's ``inputs`` entries); ``extras`` are a design's own named results.
    """

    unit: str
    sums: Mapping[str, pd.DataFrame]
    segment_sums: Mapping[str, Mapping[str, pd.DataFrame]] = field(default_factory=dict)
    inputs: tuple[Mapping[str, Any], ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)

    @property
    def units(self) -> dict[str, int]:
        """How many units each arm has."""
        return {arm: int(len(table)) for arm, table in self.sums.items()}

    @property
    def rows(self) -> dict[str, int]:
        """How many rows (impressions) each arm has."""
        return {arm: int(table[ROWS].sum()) for arm, table in self.sums.items()}

    def to_dict(self) -> dict[str, Any]:
        """Sizes, JSON-safe: the unit, units and rows per arm, the segment columns, the
        files read and the names of the extras."""
        return {
            "unit": self.unit,
            "units": self.units,
            "rows": self.rows,
            "segments": list(self.segment_sums),
            "inputs": [dict(entry) for entry in self.inputs],
            "extras": sorted(self.extras),
        }
