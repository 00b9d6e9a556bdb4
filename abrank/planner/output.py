"""The planner's outputs: the printed table, and the folder ``abrank simulate`` writes.

The folder (default ``reports/<experiment>-simulation/``) holds ``simulation.json`` (the
:class:`PlannerResult`), ``power.csv`` (one row per design and traffic size),
``power.png`` (the power curves on a log users axis, the target line, the crossing
points marked) and a short report, ``simulation.md`` and a self-contained
``simulation.html``. It is written like a readout (:func:`abrank.analysis.write.write_folder`):
built aside, moved into place when complete, never over a folder abrank did not write.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abrank.analysis.write import default_folder, write_folder
from abrank.planner.result import PlannerResult
from abrank.planner.rule import RulePlan
from abrank.render.chart_panels import chart_title, finish_one_panel
from abrank.render.chart_style import ARM_COLOURS, GREY, WIDTH, Chart, mpl_classes

if TYPE_CHECKING:
    from matplotlib.figure import Figure

FILES = ("simulation.json", "power.csv", "power.png", "simulation.md", "simulation.html")
"""The files of a simulation folder."""


def simulation_folder(experiment_name: str, out: str | Path | None = None) -> Path:
    """``--out``, else ``reports/<experiment>-simulation``."""
    return default_folder(f"{experiment_name}-simulation", out)


def power_rows(result: PlannerResult) -> list[dict[str, Any]]:
    """power.csv's rows: design, label, users, power, mc_se."""
    return [
        {
            "design": design.name,
            "label": design.label,
            "users": users,
            "power": power,
            "mc_se": se,
        }
        for design in result.designs
        for users, power, se in zip(result.users, design.power, design.mc_se, strict=True)
    ]


def table_text(result: PlannerResult) -> str:
    """The printed table: per design the power (± MC SE) at each size, the users needed,
    then the ratio sentence and the notes."""
    lines = [
        f"{result.experiment['title']}: {result.arms['control_label']} vs "
        f"{result.arms['treatment_label']}",
        f"{result.click_model['model']} clicks, {result.queries:,} queries, top "
        f"{result.depth}, {result.user_model['impressions_per_user']:g} impressions per user, "
        f"{result.simulations} simulated experiments per size, alpha {result.alpha:g}, "
        f"seed {result.seed}",
        "",
    ]
    width = max(len(d.label) for d in result.designs) + 2
    head = "users".ljust(width) + "".join(f"{n:>14,}" for n in result.users)
    lines.append(head + f"{'needed':>12}")
    for design in result.designs:
        cells = "".join(f"{f'{p:.2f} ± {s:.2f}':>14}" for p, s in zip(design.power, design.mc_se))
        lines.append(design.label.ljust(width) + cells + f"{design.needed.text():>12}")
    lines += ["", f"users needed for {result.target:.0%} power; " + result.sentence()]
    lines += [f"note: {note}" for note in result.notes]
    return "\n".join(lines)


def power_chart(result: PlannerResult) -> Chart:
    """The power curves of the designs against users (log axis), the target power line
    and each design's crossing point."""

    def draw() -> Figure:
        fig = mpl_classes().Figure(figsize=(WIDTH, 4.5))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.axhline(100 * result.target, color=GREY, linewidth=1.0, linestyle="--")
        for index, design in enumerate(result.designs):
            colour = ARM_COLOURS[index % len(ARM_COLOURS)]
            power = [100 * p for p in design.power]
            spread = [200 * s for s in design.mc_se]
            ax.errorbar(
                result.users,
                power,
                yerr=spread,
                color=colour,
                marker="o",
                markersize=4,
                linewidth=1.6,
                capsize=2,
                label=f"{design.label}: {design.needed.text()} users",
            )
            if design.needed.bound == "within" and design.needed.users is not None:
                ax.plot(
                    [design.needed.users],
                    [100 * result.target],
                    marker="D",
                    markersize=8,
                    color=colour,
                    markeredgecolor="black",
                )
        ax.set_ylim(0, 105)
        ax.set_xticks(list(result.users), [f"{n:,}" for n in result.users])
        ax.tick_params(axis="x", which="minor", bottom=False, labelbottom=False)
        ax.set_xlabel("users per experiment (both arms together; log scale)")
        ax.set_ylabel("power (%)")
        chart_title(ax, f"Power to detect the offline difference ({result.target:.0%} dashed)")
        finish_one_panel(fig, ax, 100.0)
        return fig

    return Chart(
        "power.png",
        "Power by traffic size",
        "Share of simulated experiments whose test was significant, with ±2 Monte-Carlo "
        "standard errors; diamonds mark where each design reaches the target power.",
        draw,
    )


def markdown_report(result: PlannerResult, image: str = "power.png") -> str:
    """simulation.md: what was simulated, the table, the chart, the ratio sentence."""
    users = " | ".join(f"{n:,}" for n in result.users)
    rows = [
        f"| design | {users} | users needed |",
        "|---|" + "---|" * len(result.users) + "---|",
    ]
    for design in result.designs:
        cells = " | ".join(f"{p:.2f} ± {s:.2f}" for p, s in zip(design.power, design.mc_se))
        rows.append(f"| {_md(design.label)} | {cells} | {_md(design.needed.text())} |")
    parts = [
        f"# Planner: {_md(result.experiment['title'])}",
        "",
        f"**{_md(_capital(result.sentence()))}.**",
        "",
        "## What was simulated",
        "",
        *[f"- {_md(line)}" for line in what_was_simulated(result)],
        "",
        "## Power by traffic size",
        "",
        *rows,
        "",
        f"![Power by traffic size]({image})",
        "",
    ]
    if result.notes:
        parts += ["## Notes", "", *[f"- {_md(n)}" for n in result.notes], ""]
    return "\n".join(parts)


def html_report(result: PlannerResult, png: bytes) -> str:
    """simulation.html, self-contained (the chart embedded)."""
    e = _html
    head = "".join(f"<th>{n:,}</th>" for n in result.users)
    body = "".join(
        "<tr><td>"
        + e(d.label)
        + "</td>"
        + "".join(f"<td>{p:.2f} ± {s:.2f}</td>" for p, s in zip(d.power, d.mc_se))
        + f"<td>{e(d.needed.text())}</td></tr>"
        for d in result.designs
    )
    image = base64.b64encode(png).decode("ascii")
    notes = "".join(f"<li>{e(n)}</li>" for n in result.notes)
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>Planner: {e(result.experiment['title'])}</title>"
        "<style>body{font-family:sans-serif;max-width:960px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
        "text-align:right}td:first-child{text-align:left}img{max-width:100%}</style></head>"
        f"<body><h1>Planner: {e(result.experiment['title'])}</h1>"
        f"<p><strong>{e(_capital(result.sentence()))}.</strong></p>"
        "<h2>What was simulated</h2><ul>"
        + "".join(f"<li>{e(line)}</li>" for line in what_was_simulated(result))
        + "</ul><h2>Power by traffic size</h2>"
        f"<table><tr><th>design</th>{head}<th>users needed</th></tr>{body}</table>"
        f"<p><img alt='Power by traffic size' src='data:image/png;base64,{image}'></p>"
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )


def what_was_simulated(result: PlannerResult) -> list[str]:
    """The simulation in plain lines, for the reports."""
    model = result.click_model
    if model["model"] == "pbm":
        exam = (
            f"examination (1 / rank)^{model['eta']:g}"
            if model["examination"] is None
            else "examination " + ", ".join(f"{p:g}" for p in model["examination"])
        )
        clicks = f"position-based clicks: {exam} times attractiveness per grade"
    else:
        clicks = "cascade clicks: top down, stop after a click with the grade's stop probability"
    grades = ", ".join(f"{g}: {p:g}" for g, p in model["attractiveness"].items())
    people = result.user_model
    return [
        f"{result.arms['control_label']} (control) vs {result.arms['treatment_label']} "
        f"(treatment), {result.queries:,} queries judged in both, top {result.depth} shown",
        f"{clicks}; attractiveness {grades}",
        f"users with 1 + Poisson({people['impressions_per_user'] - 1:g}) impressions, each "
        f"on a query drawn uniformly, and a lognormal click propensity (mean 1, sd "
        f"{people['propensity_sd']:g})",
        f"A/B: users split 50/50, click_rr@10 and ctr@{result.ctr_k} by the delta method "
        "on per-user sums (Welch t)",
        "interleaving: a fresh team-draft list per impression, win/tie/loss by clicks, "
        "Δ_AB clustered on the user (t, users - 1 df)",
        f"{result.simulations} simulated experiments per traffic size, alpha "
        f"{result.alpha:g}, seed {result.seed}; grid: {result.grid_source}",
    ]


def write_simulation(
    result: PlannerResult | None, folder: str | Path, rule: RulePlan | None = None
) -> list[Path]:
    """Write the simulation folder atomically (module text), with ``rule_plan.json`` when
    the experiment plans for its decision rule (:mod:`abrank.planner.rule`; then the
    click simulation may be absent); returns the files written."""
    if result is None:
        assert rule is not None

        def plan_only(staging: Path) -> None:
            _write_rule_plan(staging, rule)

        return write_folder(folder, rule.experiment, plan_only)
    chart = power_chart(result)

    def fill(staging: Path) -> None:
        if rule is not None:
            _write_rule_plan(staging, rule)
        text = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
        (staging / "simulation.json").write_text(text + "\n", encoding="utf-8")
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, ["design", "label", "users", "power", "mc_se"])
        writer.writeheader()
        writer.writerows(power_rows(result))
        (staging / "power.csv").write_text(buffer.getvalue(), encoding="utf-8")
        png = chart.png
        (staging / "power.png").write_bytes(png)
        (staging / "simulation.md").write_text(markdown_report(result), encoding="utf-8")
        (staging / "simulation.html").write_text(html_report(result, png), encoding="utf-8")

    return write_folder(folder, result.experiment["name"], fill)


def _write_rule_plan(staging: Path, rule: RulePlan) -> None:
    text = json.dumps(rule.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)
    (staging / "rule_plan.json").write_text(text + "\n", encoding="utf-8")


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _html(text: object) -> str:
    return html.escape(str(text), quote=True)


def _md(text: object) -> str:
    return html.escape(str(text), quote=False).replace("|", "\\|").replace("*", "\\*")
