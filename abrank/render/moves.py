"""The queries that moved most: per treatment, the primary metric's largest losses and wins.

Computed from the per-query table (a report shows per-query values; it derives no
statistic), for the paired design only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from abrank.readout import Readout
from abrank.readout.model import Summary
from abrank.readout.typed import control_name, overall_comparisons, readout_summary

TOP_QUERIES = 10  # queries listed in "largest losses" / "largest wins"


@dataclass(frozen=True)
class Moves:
    """One treatment's largest moves on one metric.

    ``losses`` and ``wins`` have columns query_id, control, treatment, delta and
    missing_in (the arms whose log lacked the query, ``;``-joined, empty when none), largest
    move first (ties in delta listed by query id). A query missing from the treatment's log
    is scored 0 there: a loss that says the log lacks the query, not that it ranked badly.
    """

    treatment: str
    metric: str
    losses: pd.DataFrame
    wins: pd.DataFrame

    def to_dict(self) -> dict[str, object]:
        """The moves as JSON-safe builtins."""
        return {
            "treatment": self.treatment,
            "metric": self.metric,
            "losses": self.losses.to_dict(orient="records"),
            "wins": self.wins.to_dict(orient="records"),
        }


def largest_moves(readout: Readout, top: int = TOP_QUERIES) -> list[Moves]:
    """Per treatment, the primary metric's queries that lost and won the most.

    Only the candidates at or beyond the k-th largest move are sorted, so a million
    queries cost one merge.
    """
    summary = readout_summary(readout)
    frame = readout.per_query
    metric = summary.primary_metric
    control = control_name(summary)
    if (
        summary.design != "paired"
        or frame is None
        or frame.empty
        or metric is None
        or metric not in frame.columns
        or control is None
    ):
        return []
    base = frame.loc[frame["arm"] == control, ["query_id", metric]]
    missing_in = _missing_in(frame.loc[frame["arm"] == control], summary)
    result = []
    for treatment in dict.fromkeys(c.treatment for c in overall_comparisons(summary)):
        other = frame.loc[frame["arm"] == treatment, ["query_id", metric]]
        joined = base.merge(other, on="query_id", suffixes=("_c", "_t"))
        mapped = joined["query_id"].astype(str).map(missing_in)
        absent = np.where(mapped.isna(), "", mapped.astype(str)).astype(object)
        c = joined[f"{metric}_c"].to_numpy(float)
        t = joined[f"{metric}_t"].to_numpy(float)
        delta = t - c
        picked = []
        for sign in (-1.0, 1.0):
            score = np.where(np.isfinite(delta) & (delta * sign > 0), -sign * delta, np.inf)
            found = int(np.isfinite(score).sum())
            if found > top:  # keep every query tied with the k-th largest move
                score[score > np.partition(score, top - 1)[top - 1]] = np.inf
            rows = np.flatnonzero(np.isfinite(score))
            part = pd.DataFrame(
                {
                    "query_id": joined["query_id"].to_numpy()[rows].astype(str),
                    "control": c[rows],
                    "treatment": t[rows],
                    "delta": delta[rows],
                    "missing_in": absent[rows].astype(str),
                    "_score": score[rows],
                }
            )
            part = part.sort_values(["_score", "query_id"], kind="stable").head(top)
            picked.append(part.drop(columns="_score").reset_index(drop=True))
        result.append(Moves(treatment, metric, picked[0], picked[1]))
    return result


def _missing_in(rows: pd.DataFrame, summary: Summary) -> pd.Series:
    """query id -> the arms whose log lacked it (``;``-joined): the per-query table's
    ``missing_in`` column, else ``diagnostics.missing_queries`` (a readout made before the
    column existed has neither: no query is marked)."""
    if "missing_in" in rows.columns:
        values = rows["missing_in"].fillna("").astype(str)
        return pd.Series(values.to_numpy(), index=rows["query_id"].astype(str).to_numpy())
    diagnostics = summary.diagnostics
    lacking = (diagnostics.missing_queries if diagnostics is not None else None) or {}
    arms: dict[str, list[str]] = {}
    for arm, ids in lacking.items():
        for query in ids:
            arms.setdefault(str(query), []).append(str(arm))
    return pd.Series({query: ";".join(names) for query, names in arms.items()}, dtype=object)
