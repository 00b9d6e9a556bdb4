"""The decision in a report: the opening sentence and the Decision panel above the results.

A readout whose metrics have roles opens with its decision (``Ship: MRR@10 wins (+0.246)
and Recall@20 stays within its -0.005 margin``) and shows a panel with the rule, then one
row per metric with a role: what it is for, its change, the test the rule read and the
outcome. Readouts without roles have neither.
"""

from __future__ import annotations

import math
from typing import Any

from abrank.decision.rule import units_text
from abrank.readout.model import ComparisonSummary, Decision, Summary
from abrank.render.blocks import Block, Cell, Column, Facts, Paragraph, Section, Table, own, spans
from abrank.render.text import (
    comparison_subject,
    correction_name,
    fmt_p_is,
    fmt_percent,
    fmt_signed,
    several_treatments,
)

RULE_TEXT = {
    "ship-if-success-and-no-harm": (
        "ship when at least one success metric wins (corrected over the success metrics "
        "only), every guardrail is shown non-inferior within its margin (one-sided test at "
        "alpha, no correction across guardrails) and no metric deteriorates significantly; "
        "no-ship when a metric deteriorates or a guardrail is shown worse than its margin; "
        "keep running otherwise; unhealthy when the split or pairing checks fail"
    ),
}
"""Each rule in plain words, as the panel states it."""


def decision_opening(summary: Summary) -> Paragraph | None:
    """The readout's first sentence: the status in bold, then why (None without roles)."""
    decision = summary.decision
    if decision is None:
        return None
    head, _, rest = decision.headline.partition(": ")
    content = (own(f"{head}:", "strong"), *spans(f" {rest}")) if rest else spans(head)
    return Paragraph(tuple(content), role=f"decision-{decision.status}")


def decision_section(summary: Summary) -> Section | None:
    """The Decision panel (module text); None without roles."""
    decision = summary.decision
    if decision is None:
        return None
    blocks: list[Block] = [
        Paragraph(spans("; ".join(decision.reasons) + "."), role=f"decision-{decision.status}")
    ]
    compared = [
        c
        for c in summary.comparisons
        if c.segment is None and c.control is None and c.role is not None
    ]
    several = several_treatments(compared)
    rows = [_row(summary, c, several) for c in sorted(compared, key=_role_order)]
    if rows:
        columns = (
            Column("role", "left"),
            Column("metric", "left"),
            Column("change"),
            Column("what the rule tested", "left", "wrap"),
            Column("outcome", "left"),
        )
        blocks.append(Table(columns, tuple(rows), "decision"))
    blocks.append(Facts(tuple(_facts(decision))))
    return Section("decision", "Decision", tuple(blocks))


def _role_order(comp: ComparisonSummary) -> int:
    return {"success": 0, "guardrail": 1}.get(comp.role or "", 2)


def _row(summary: Summary, comp: ComparisonSummary, several: bool) -> tuple[Cell, ...]:
    checks = comp.decision_checks or {}
    change = fmt_signed(comp.delta)
    if comp.relative_lift is not None and math.isfinite(comp.relative_lift):
        change += f" ({fmt_percent(comp.relative_lift)})"
    if comp.role == "success":
        family = correction_name(comp.correction)
        tested = f"{fmt_p_is(comp.p_adjusted)}" + (
            f" ({family} over success metrics)" if family else ""
        )
        outcome = {"win": "wins", "loss": "loses"}.get(comp.verdict, "inconclusive")
        css = {"wins": "win", "loses": "loss"}.get(outcome, "")
    elif comp.role == "guardrail":
        tested = _guardrail_test(comp, checks)
        if checks.get("inferior"):
            outcome, css = "worse than its margin", "loss"
        elif checks.get("non_inferior"):
            outcome, css = "within its margin", "win"
        else:
            outcome, css = "not shown within its margin", ""
    else:
        tested = f"{fmt_p_is(comp.p_value)} (deterioration check)"
        outcome, css = "no decision", ""
    if checks.get("deteriorated"):
        outcome, css = f"{outcome}; deteriorates", "loss"
    return (
        Cell(comp.role or "", css="text"),
        Cell(comparison_subject(summary, comp, several), css="text"),
        Cell(change, key="delta", value=_number(comp.delta), has_value=True, own=True),
        Cell(tested, css="text wrap", own=True),
        Cell(outcome, css=f"text {css}".strip(), own=True),
    )


def _guardrail_test(comp: ComparisonSummary, checks: dict[str, Any]) -> str:
    margin = checks.get("margin")
    if margin is None:
        return "no margin"
    lower = checks.get("direction") == "lower"
    sign = "+" if lower else "-"
    relative = bool(checks.get("margin_relative"))
    shown = f"{sign}{margin * 100:g}%" if relative else f"{sign}{margin:g}"
    level = f"{(1 - comp.alpha) * 100:g}%"
    bound = checks.get("bound")
    if bound is None:
        bound_text = "no bound"
    elif checks.get("scale") == "relative":
        bound_text = fmt_percent(bound)
    else:
        bound_text = fmt_signed(bound)
    side = "upper" if lower else "lower"
    p = checks.get("p_non_inferiority")
    p_text = f", {fmt_p_is(p)}" if isinstance(p, (int, float)) else ""
    return f"margin {shown}; one-sided {level} {side} bound {bound_text}{p_text}"


def _facts(decision: Decision) -> list[tuple[str, str]]:
    facts = [
        ("status", decision.status),
        ("rule", f"{decision.rule}: {RULE_TEXT.get(decision.rule, '')}"),
    ]
    if decision.planned_power is not None:
        facts.append(("planned power", f"{decision.planned_power:.0%}"))
    if decision.units_needed is not None:
        facts.append(
            ("still needed", f"about {decision.units_needed:,} more {units_text(decision.unit)}")
        )
    if decision.treatments:
        facts.append(
            ("per treatment", ", ".join(f"{t}: {s}" for t, s in decision.treatments.items()))
        )
    return facts


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
