"""The in-memory readout: everything `abrank run` writes, before it is written.

The pipeline builds it (computing every number); the report stage only renders it.
"""

from __future__ import annotations

import functools
import html
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from abrank.readout.model import ComparisonSummary, Decision, Summary


@dataclass(frozen=True)
class Readout:
    """One experiment's results, ready to render.

    Attributes
    ----------
    summary:
        Exactly the content of ``summary.json`` (JSON-safe builtins only).
    per_query:
        The per-query table written to ``per_query.csv``: columns ``arm``, ``query_id``,
        one column per metric (canonical names), ``missing_in`` (offline: the arms whose
        log lacked the query, ``;``-joined, empty when none), then the segment columns.
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
    ctr_by_rank:
        Online experiments: the click-through rate by position per arm, columns ``arm``,
        ``rank``, ``impressions``, ``clicks``, ``ctr`` (None offline).
    unit_values:
        Online experiments: each unit's mean of the primary metric per arm, columns ``arm``
        and ``value``, for the per-unit distribution chart (None offline).
    history:
        Dated readouts: this experiment's rows of the history store (one per date, metric,
        treatment and segment, the store's columns) for every date up to and including
        this readout's, for the trend charts; None for an undated readout.
    """

    summary: dict[str, Any]
    per_query: pd.DataFrame
    curves: pd.DataFrame
    first_relevant: pd.DataFrame
    resampled_deltas: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    config_text: str = ""
    ctr_by_rank: pd.DataFrame | None = None
    unit_values: pd.DataFrame | None = None
    history: pd.DataFrame | None = None
    queries: pd.DataFrame | None = None
    rankings: pd.DataFrame | None = None

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable readout (what ``summary.json`` holds)."""
        return self.summary

    @classmethod
    def from_summary(
        cls,
        summary: Summary,
        per_query: pd.DataFrame,
        curves: pd.DataFrame,
        first_relevant: pd.DataFrame,
        resampled_deltas: dict[tuple[str, str], np.ndarray] | None = None,
        config_text: str = "",
        *,
        ctr_by_rank: pd.DataFrame | None = None,
        unit_values: pd.DataFrame | None = None,
        history: pd.DataFrame | None = None,
        queries: pd.DataFrame | None = None,
        rankings: pd.DataFrame | None = None,
    ) -> Readout:
        """A readout whose ``summary`` is the typed ``summary``'s dict."""
        readout = cls(
            summary.to_dict(),
            per_query,
            curves,
            first_relevant,
            dict(resampled_deltas or {}),
            config_text,
            ctr_by_rank,
            unit_values,
            history,
            queries,
            rankings,
        )
        vars(readout)["model"] = summary  # what the cached property would compute
        return readout

    def with_tables(self, queries: pd.DataFrame, rankings: pd.DataFrame) -> Readout:
        """This readout with its explanation tables (the summary, and so its typed model,
        unchanged and not parsed again)."""
        out = replace(self, queries=queries, rankings=rankings)
        vars(out)["model"] = self.model
        return out

    @functools.cached_property
    def model(self) -> Summary:
        """The summary as typed records (:class:`abrank.readout.model.Summary`)."""
        return Summary.from_dict(self.summary)

    def query(
        self, query_id: Any, metric: str | None = None, treatment: str | None = None
    ) -> pd.DataFrame:
        """The arms' lists of one query side by side (:func:`abrank.explain.query_lists`):
        one row per document any arm shows, its grade, its rank in each arm and its
        contribution to the treatment - control change of ``metric`` (default: the primary
        metric; the first treatment by default). On an online or interleaving readout:
        each document's mean rank, impressions, clicks and CTR per arm
        (:func:`abrank.explain.readout.click_lists`)."""
        from abrank.explain.readout import query_lists

        return query_lists(self, query_id, metric, treatment)

    def explain(
        self, metric: str | None = None, treatment: str | None = None, by: str | None = None
    ) -> pd.DataFrame:
        """The mean change of ``metric`` over the compared queries, split by what the
        documents did (promoted, demoted, entered, dropped, ...): one row per move with its
        part of the change and how many documents and queries made it; ``by`` a segment
        column, for each segment's split (:func:`abrank.explain.explain_change`). Offline
        readouts only (a ConfigError on an online or interleaving readout)."""
        from abrank.explain.readout import explain_change

        return explain_change(self, metric, treatment, by)

    @property
    def decision(self) -> Decision | None:
        """The launch decision (summary.json's ``decision``: ship, no-ship, keep-running or
        unhealthy, and why); None when the experiment's metrics have no roles."""
        return self.model.decision

    @property
    def comparisons(self) -> pd.DataFrame:
        """One row per comparison (overall ones first, then per segment), the fields saved in
        summary.json as columns; intervals are (low, high) tuples."""
        rows = [
            {key: tuple(value) if isinstance(value, list) else value for key, value in c.items()}
            for c in self.summary.get("comparisons", [])
        ]
        columns = list(dict.fromkeys(key for row in rows for key in row))  # in saved order
        if not columns:  # no comparison: the columns a comparison would have
            columns = list(ComparisonSummary.saved_fields())
        return pd.DataFrame(rows, columns=columns)

    def __repr__(self) -> str:
        """One line: the experiment, its arms and the overall verdicts (not the summary)."""
        experiment = self.summary.get("experiment") or {}
        arms = [a.get("name", "?") for a in self.summary.get("arms", [])]
        comparisons = self.summary.get("comparisons", [])
        overall = [c for c in comparisons if c.get("segment") is None]
        verdicts: dict[str, int] = {}
        for c in overall:
            verdicts[c.get("verdict", "?")] = verdicts.get(c.get("verdict", "?"), 0) + 1
        shown = ", ".join(f"{count} {verdict}" for verdict, count in verdicts.items())
        decided = (self.summary.get("decision") or {}).get("status")
        return (
            f"<Readout {experiment.get('name', '?')!r}: "
            + (f"decision {decided}; " if decided else "")
            + f"arms {', '.join(arms)}; "
            f"{len(overall)} comparisons ({shown or 'none'}), "
            f"{len(comparisons) - len(overall)} per segment>"
        )

    def _repr_html_(self) -> str:
        """The overall comparisons as a small table, for notebooks."""
        experiment = self.summary.get("experiment") or {}
        title = experiment.get("title") or experiment.get("name") or "abrank readout"
        labels = {
            a.get("name"): a.get("label") or a.get("name") for a in self.summary.get("arms", [])
        }
        metric_labels = self.summary.get("metric_labels") or {}
        head = ["metric", "treatment", "control → treatment", "Δ", "CI", "p adj.", "verdict"]
        rows = []
        for c in self.summary.get("comparisons", []):
            if c.get("segment") is not None:
                continue
            low, high = c.get("ci") or (None, None)
            cells = [
                metric_labels.get(c.get("metric"), c.get("metric", "")),
                labels.get(c.get("treatment"), c.get("treatment", "")),
                f"{_number(c.get('control_mean'))} → {_number(c.get('treatment_mean'))}",
                _number(c.get("delta"), signed=True),
                f"[{_number(low, signed=True)}, {_number(high, signed=True)}]",
                _p_value(c.get("p_adjusted")),
                c.get("verdict", ""),
            ]
            rows.append(
                "<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in cells) + "</tr>"
            )
        header = "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
        return (
            f"<div><strong>{html.escape(str(title))}</strong>"
            f"<table><thead>{header}</thead><tbody>{''.join(rows)}</tbody></table></div>"
        )


def _number(value: Any, *, signed: bool = False) -> str:
    """A mean, delta or bound with three decimals ("n/a" when not computed)."""
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _p_value(value: Any) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"
