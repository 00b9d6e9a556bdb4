"""The sections of a counterfactual readout: the propensities by rank (a table and a chart,
:mod:`abrank.render.propensity_charts`) and, as facts, each candidate's support, weights,
both estimators, the estimates under clipping and the position-based model's check."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from abrank.readout.model import Summary
from abrank.render.blocks import Block, Cell, Column, Paragraph, Section, Table, own
from abrank.render.chart_style import Chart, chart_refs
from abrank.render.text import fmt_count, fmt_interval, fmt_share, fmt_signed, fmt_value


def _extra(summary: Summary) -> dict[str, Any]:
    diagnostics = summary.diagnostics
    return dict(diagnostics.extra) if diagnostics is not None else {}


def counterfactual_section(charts: Sequence[Chart]) -> Section:
    """Examination by position: the harvested (or given) propensities' chart."""
    shown = chart_refs(charts, "propensities")
    blocks: list[Block] = list(shown) or [Paragraph((own("No propensities in this readout."),))]
    return Section("propensities", "Examination by position", tuple(blocks))


def counterfactual_table(summary: Summary) -> Table:
    """The propensities by rank with their intervals, and the adjacent-rank check."""
    extra = _extra(summary)
    ranks = extra.get("propensities") or []
    adjacent = {
        entry["ranks"][0]: entry
        for entry in (extra.get("propensity_fit") or {}).get("adjacent", [])
    }
    columns = (
        Column("rank", "left", "text"),
        Column("examination (rank 1 = 1)"),
        Column("interval"),
        Column("ratio to the rank above (all pairs)"),
        Column("ratio from adjacent swaps"),
        Column("adjacent interval"),
    )
    rows = []
    for entry in ranks:
        rank = entry["rank"]
        check = adjacent.get(rank - 1)
        rows.append(
            (
                Cell(str(rank), css="text"),
                Cell(fmt_value(entry["estimate"])),
                Cell(fmt_interval(entry["ci"], fmt_value)),
                Cell(fmt_value(check["fitted"]) if check else ""),
                Cell(fmt_value(check["adjacent"]) if check else ""),
                Cell(fmt_interval(check["ci"], fmt_value) if check else ""),
            )
        )
    return Table(columns, tuple(rows), "diagnostics")


def counterfactual_facts(summary: Summary) -> list[tuple[str, str]]:
    """Per candidate: support, weights, both estimators, clipping; the PBM check."""
    extra = _extra(summary)
    facts = [("randomization unit", str(summary.unit))]
    fit = extra.get("propensity_fit") or {}
    if fit:
        facts.append(
            (
                "propensities",
                f"{fit.get('source')}; {fmt_count(fit.get('pairs'))} (query, document) pairs "
                f"shown at two ranks or more, {fmt_count(fit.get('resamples'))} unit-bootstrap "
                "replicates",
            )
        )
    check = extra.get("pbm_check")
    if check:
        verdict = "fails" if check["fails"] else "passes"
        facts.append(
            (
                "position-based model check",
                f"{verdict} (chi2 = {fmt_value(check['chi2'])}, df = {check['df']}, "
                f"p = {fmt_value(check['p_value'])}; observed against predicted clicks by rank "
                "and the clicks expected above)",
            )
        )
    logged = extra.get("logged_arms") or {}
    if logged:
        facts.append(
            (
                "logged arms (impressions)",
                ", ".join(f"{k} {fmt_count(v)}" for k, v in logged.items()),
            )
        )
    observed = extra.get("observed") or {}
    estimates = extra.get("estimates") or {}
    control = next((a.name for a in summary.arms if a.role == "control"), "")
    for metric, by_estimator in estimates.items():
        snips, ips = by_estimator.get("snips", {}), by_estimator.get("ips", {})
        facts.append(
            (
                f"{metric}: logging arm {control}",
                f"observed {fmt_value(observed.get(metric))}, model SNIPS "
                f"{fmt_value(snips.get(control))}, IPS {fmt_value(ips.get(control))}",
            )
        )
        for name, entry in snips.items():
            if name == control:
                continue
            other = ips.get(name, {})
            facts.append(
                (
                    f"{metric}: {name}",
                    f"SNIPS {fmt_value(entry['estimate'])} (delta {fmt_signed(entry['delta'])}, "
                    f"{fmt_interval(entry['ci'])}); IPS {fmt_value(other.get('estimate'))} "
                    f"(delta {fmt_signed(other.get('delta'))}, {fmt_interval(other.get('ci'))})",
                )
            )
    for name, weights in (extra.get("weights") or {}).items():
        facts.append(
            (
                f"{name}: support and weights",
                f"{fmt_share(weights.get('unsupported'))} of its top {extra.get('k')} never "
                f"logged for the query; effective sample size {fmt_count(weights.get('ess'))} "
                f"of {fmt_count(weights.get('rows'))} rows; largest weight "
                f"{fmt_value(weights.get('max_weight'))} ({fmt_share(weights.get('max_weight_share'))} "
                "of the total)",
            )
        )
    for name, by_metric in (extra.get("clipping") or {}).items():
        for metric, entries in by_metric.items():
            text = "; ".join(
                f"{'no cap' if e['clip'] is None else 'cap ' + fmt_value(e['clip'])}: "
                f"{fmt_value(e['estimate'])}"
                for e in entries
            )
            facts.append((f"{name}: {metric} by IPS with 1/p capped", text))
    return facts
