"""The readout's legend: what each metric shown, W/T/L, MDE, effect size and the
multiple-testing correction mean, in a sentence each.

Entries are chosen from the summary: only the metric families it compares, only the
columns its results table has, only the corrections it applied.
"""

from __future__ import annotations

from typing import Any

from abrank.errors import ConfigError
from abrank.metrics.names import parse_metric
from abrank.readout.model import Correction, Summary
from abrank.readout.typed import as_summary
from abrank.render.text import correction_name, metric_label

# metric family -> what it measures, per query (``{k}``: "the top k" or "the ranking")
METRIC_MEANINGS = {
    "mrr": "mean reciprocal rank, 1 / the position of the first relevant document in {k} "
    "(0 when none is there); 1/MRR is the harmonic mean of that position.",
    "ndcg": "the gain of {k}, discounted by log2(position + 1), as a share of the gain of "
    "the ideal ordering of all judged documents (1 = the best possible order).",
    "dcg": "the gain of {k}, each document's grade discounted by log2(position + 1).",
    "recall": "the share of the query's relevant documents found in {k}.",
    "hit": "the share of queries with a relevant document in {k} (success).",
    "precision": "the share of the documents in {k} that are relevant (divided by k even "
    "when fewer were retrieved).",
    "map": "mean average precision: the precision at each relevant document's position, "
    "averaged over all of the query's relevant documents.",
    "ap": "average precision within {k}: the precision at each relevant document's position, "
    "averaged over the query's relevant documents.",
    "judged": "the share of {k} that has a judgment, a diagnostic: unjudged documents count "
    "as not relevant.",
    # click metrics: one value per impression (a served list), averaged over impressions
    "click_rr": "click reciprocal rank, per impression: 1 / the position of the first "
    "clicked result in {k} (0 when nothing there was clicked).",
    "ctr": "click-through rate: the share of impressions with a click on a result in {k}.",
    "clicks": "the number of clicked results in {k}, per impression.",
    "abandonment": "the share of impressions without any click; lower is better, so a fall "
    "is the treatment's win.",
    "sat_ctr": "satisfied click-through rate: the share of impressions with a click in {k} "
    "whose dwell reached {dwell}.",
}

CORRECTION_MEANINGS = {
    "holm": "Holm's step-down method keeps the chance of any false win or loss in the "
    "family at alpha.",
    "bonferroni": "Bonferroni multiplies each p-value by the number of comparisons in the family.",
    "fdr_bh": "Benjamini-Hochberg keeps the expected share of false findings among the "
    "family's wins and losses at alpha.",
    "fdr_by": "Benjamini-Yekutieli keeps the expected share of false findings at alpha under "
    "any dependence.",
    "hommel": "Hommel's method keeps the chance of any false finding in the family at alpha.",
    "sidak": "Šidák's method adjusts each p-value for the number of independent comparisons.",
    "holm-sidak": "Holm's step-down method with Šidák's adjustment at each step.",
}

FAMILY_NAMES = {"primary": "metrics × treatments", "segments": "segment breakdowns"}


def metric_entries(summary: Summary | dict[str, Any]) -> list[tuple[str, str]]:
    """(label, meaning) for each metric the summary compares, when its family is known."""
    summary = as_summary(summary)
    names = list(summary.metrics or [])
    names += [c.metric for c in summary.comparisons if c.metric not in names]
    dwell = (
        f"{summary.sat_dwell:g} s"
        if summary.sat_dwell is not None
        else "the satisfied-click dwell (analysis.sat_dwell)"
    )
    entries = []
    numeric = (summary.diagnostics.numeric_metrics or {}) if summary.diagnostics else {}
    for name in names:
        if name in numeric:
            entries.append((metric_label(summary, name), numeric_meaning(numeric[name])))
            continue
        try:
            metric = parse_metric(name)
        except ConfigError:
            continue
        meaning = METRIC_MEANINGS.get(metric.family)
        if meaning:
            top = f"the top {metric.k}" if metric.k else "the whole ranking"
            text = meaning.format(k=top, dwell=dwell)
            entries.append((metric_label(summary, name), text))
    return entries


def numeric_meaning(entry: dict[str, Any]) -> str:
    """What a numeric metric of a log column measures (its ``diagnostics.numeric_metrics``
    entry), in the legend's words."""
    how = (
        "the delta method on the quantile's influence function, clustered on the unit"
        if entry.get("stat") == "quantile"
        else "the delta method over units"
    )
    better = "lower" if entry.get("direction") == "lower" else "higher"
    sketch = entry.get("sketch") or {}
    approximate = (
        f" The quantile is the engine's sketch {sketch['function']} ({sketch['bound']})."
        if sketch.get("function")
        else ""
    )
    return (
        f"{entry.get('describes', '')}, from the log's column: {better} is better; its "
        f"interval from {how}; impressions without a value are counted and left out."
        f"{approximate}"
    )


def _corrections(summary: Summary) -> list[tuple[str, str]]:
    """(family, method) pairs of the corrections applied: from the summary's settings,
    else from the comparisons."""
    setting = summary.correction
    if isinstance(setting, Correction):
        pairs = [("primary", str(setting.primary)), ("segments", str(setting.segments))]
    elif isinstance(setting, dict):
        pairs = [(str(k), str(v)) for k, v in setting.items()]
    elif setting:
        pairs = [("primary", str(setting))]
    else:
        methods = dict.fromkeys(
            ("segments" if c.segment is not None else "primary", str(c.correction))
            for c in summary.comparisons
            if c.correction
        )
        pairs = list(methods)
    return [(family, method) for family, method in pairs if correction_name(method)]


def _preference_entries(summary: Summary) -> list[tuple[str, str]]:
    """The terms of an interleaved results table: the credits, Δ_AB, W / T / L."""
    entries = [
        (
            metric_label(summary, name),
            "each impression's list mixes both arms' results; a click counts for the arm "
            "that contributed the clicked result"
            + (" when its dwell reached the satisfied-click threshold" if "sat" in name else "")
            + ".",
        )
        for name in summary.metrics or ()
    ]
    entries += [
        (
            "Δ_AB, CI",
            "the treatment's preference (Chapelle et al. 2012): (wins + ties / 2) / impressions "
            "− 1/2, from −0.5 (the control won every impression) to +0.5; 0 when both are "
            "preferred as often. The shares are the impressions each arm won, ties counted half.",
        ),
        (
            "W / T / L",
            "the impressions whose credited clicks went more to the treatment (wins), equally "
            "(ties, most of them without a click) or more to the control (losses).",
        ),
    ]
    return entries


def legend_entries(summary: Summary | dict[str, Any], *, paired: bool) -> list[tuple[str, str]]:
    """The legend: the metrics, then the results table's terms, then the corrections."""
    summary = as_summary(summary)
    if summary.design == "interleaved":
        entries = _preference_entries(summary)
    else:
        entries = metric_entries(summary)
        entries.append(
            (
                "Δ, CI",
                "the mean difference treatment − control, and the interval that holds it with "
                "the stated confidence.",
            )
        )
    if paired:
        entries.append(
            (
                "W / T / L",
                "the queries the treatment scored higher on (wins), equal (ties) and "
                "lower (losses) than the control.",
            )
        )
    entries.append(
        (
            "effect size",
            "Cohen's d, the mean delta in standard deviations (of the per-query deltas "
            "when paired); by convention 0.2 is small, 0.5 medium, 0.8 large.",
        )
    )
    entries.append(
        (
            "MDE",
            "the minimum detectable effect, the smallest delta this experiment would detect "
            "with 80% power for its n and variance.",
        )
    )
    for family, method in _corrections(summary):
        meaning = CORRECTION_MEANINGS.get(method, "adjusts the p-values for multiple testing.")
        scope = FAMILY_NAMES.get(family, family)
        entries.append(
            (
                f"{correction_name(method)} ({scope})",
                f"{meaning} Adjusted p-values decide the verdicts.",
            )
        )
    return entries
