"""The in-memory readout: everything `abrank run` writes, before it is written.

The pipeline builds it (computing every number); the report stage only renders it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Readout:
    """One experiment's results, ready to render.

    Attributes
    ----------
    summary:
        Exactly the content of ``summary.json`` (JSON-safe builtins only).
    per_query:
        The per-query table written to ``per_query.csv``: columns ``arm``, ``query_id``,
        one column per metric (canonical names), then the segment columns.
    curves:
        Mean metric@k per arm for the metric@k chart: columns ``arm``, ``metric``
        (family, e.g. ``ndcg``), ``k`` (1..max cutoff) and ``value``.
    first_relevant:
        Where the first relevant document lands: columns ``arm``, ``query_id``, ``rank``
        (float; NaN when no relevant document was retrieved).
    resampled_deltas:
        For each (metric, treatment) of the overall comparison, the bootstrap draws of
        the mean delta, for the bootstrap-distribution chart.
    config_text:
        The experiment's config as the user wrote it, for the reproducibility section.
    """

    summary: dict[str, Any]
    per_query: pd.DataFrame
    curves: pd.DataFrame
    first_relevant: pd.DataFrame
    resampled_deltas: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    config_text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable readout (what ``summary.json`` holds)."""
        return self.summary
