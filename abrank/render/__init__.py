"""Readouts people can act on: headline lines, Markdown, one self-contained HTML page, charts.

This stage renders a :class:`~abrank.readout.Readout`; it computes no statistic of its own.
Every number shown is a number of ``readout.summary`` (summary.json) formatted by the rules
below, or a per-query value of ``readout.per_query``:

- means, deltas, CI bounds and MDEs: three decimals (deltas and bounds signed);
- relative lifts: percent with one decimal, signed; "n/a" when the control mean is 0,
  "unbounded" when the relative interval has no finite bounds;
- p-values: "< 0.001" below 0.001, else three significant digits;
- counts: thousands separated by commas.

The headline grammar, one line per metric x treatment::

    MRR@10  0.541 → 0.779  +0.238 (+44.0%)  95% CI [+0.221, +0.255] / [+39.0%, +49.0%]
    p < 0.001 (t, Holm)  n = 1,880  W/T/L 1,103/582/195  → Cross-encoder reranker wins

(printed on one line). Inconclusive lines end with what the experiment could have
detected: ``→ inconclusive (this experiment could detect deltas ≥ 0.031)``.

Every user text (titles, labels, descriptions, query ids, segment values, paths, config
text) is escaped for the format it lands in, and the HTML page loads nothing from the
network: styles are inline and charts are embedded as base64 PNG.
"""

from __future__ import annotations

import base64
import html
import json
import math
import numbers
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abrank import workers
from abrank.errors import ConfigError
from abrank.readout import Readout
from abrank.render.charts import Chart, arm_labels, control_name, metric_label, plan_charts
from abrank.stats import registry as stats_registry

REPORT_FORMATS = ("html", "md")

TEST_NAMES = stats_registry.test_display_names()
CORRECTION_NAMES = stats_registry.correction_display_names()
SHORT_TEST_NAMES = stats_registry.test_labels()
VERDICT_TEXT = {"win": "wins", "loss": "loses"}
TOP_QUERIES = 10  # queries listed in "largest losses" / "largest wins"

# --------------------------------------------------------------------------- formatting


def _number(value: Any) -> bool:
    """A finite real number (Python or NumPy scalar), not a boolean."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(value)
    )


def fmt_value(value: Any, digits: int = 3) -> str:
    """A mean or a metric value: ``0.540``; ``n/a`` when missing or not finite."""
    return f"{value:.{digits}f}" if _number(value) else "n/a"


def fmt_signed(value: Any, digits: int = 3) -> str:
    """A delta or a CI bound, always signed: ``+0.240``, ``-0.012``."""
    return f"{value:+.{digits}f}" if _number(value) else "n/a"


def fmt_percent(value: Any) -> str:
    """A relative lift as a signed percent with one decimal: ``+44.4%``."""
    return f"{value * 100:+.1f}%" if _number(value) else "n/a"


def fmt_p(value: Any) -> str:
    """A p-value: ``< 0.001`` below 0.001, else three significant digits (``0.0342``)."""
    if not _number(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def fmt_count(value: Any) -> str:
    """A count with thousands separators: ``1,880``."""
    if not _number(value):
        return "n/a"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def fmt_interval(bounds: Any, formatter=fmt_signed) -> str:
    """``[+0.221, +0.255]``; ``n/a`` when the interval is missing."""
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        return "n/a"
    if not all(_number(b) for b in bounds):
        return "unbounded" if any(b is not None for b in bounds) else "n/a"
    return f"[{formatter(bounds[0])}, {formatter(bounds[1])}]"


def fmt_relative_interval(comp: dict[str, Any]) -> str:
    """The relative lift's CI in percent, ``unbounded`` when it has no finite bounds."""
    if not _number(comp.get("relative_lift")):
        return "n/a"
    bounds = comp.get("relative_ci")
    if (
        not isinstance(bounds, (list, tuple))
        or len(bounds) != 2
        or not all(_number(b) for b in bounds)
    ):
        return "unbounded"
    return fmt_interval(bounds, fmt_percent)


def fmt_level(comp: dict[str, Any]) -> str:
    """The level of the interval shown as a percent label: 0.95 -> ``95%``, 0.9875 ->
    ``98.8%`` (after a multiple-testing correction widened it; ``ci_level``)."""
    level = comp.get("ci_level", comp.get("confidence_level"))
    if not _number(level):
        return "95%"
    percent = 100.0 * float(level)
    if abs(percent - round(percent)) < 1e-9:
        return f"{round(percent)}%"
    digits = 1
    while digits < 6 and round(percent, digits) >= 100:
        digits += 1
    return f"{percent:.{digits}f}%"


def _widened(comp: dict[str, Any]) -> bool:
    """Whether a correction widened the interval beyond the nominal confidence level."""
    level, nominal = comp.get("ci_level"), comp.get("confidence_level")
    return _number(level) and _number(nominal) and abs(level - nominal) > 1e-12


def interval_phrase(comp: dict[str, Any]) -> str:
    """``95% CI [+0.226, +0.266] / [+40.8%, +50.6%]``, the level widened and named when a
    correction applies (``98.8% CI (Holm) ...``), and a remark when the interval and the
    primary test still disagree, so that no line shows an interval against its verdict."""
    label = f"{fmt_level(comp)} CI"
    if _widened(comp):
        label += f" ({correction_name(comp.get('correction'))})"
    text = f"{label} {fmt_interval(comp.get('ci'))}"
    if _number(comp.get("relative_lift")):
        text += f" / {fmt_relative_interval(comp)}"
    if comp.get("ci_agrees") is False:
        test = test_name(comp.get("primary_test", "t"))
        text += f" (a bootstrap interval; the {test} test decides the verdict)"
    return text


def test_name(name: Any) -> str:
    """Display name of a test (``t``, ``permutation``, ``Wilcoxon``, ...)."""
    return TEST_NAMES.get(str(name), str(name))


def correction_name(name: Any) -> str | None:
    """Display name of a multiple-testing correction; None when there is none."""
    if name is None or str(name).lower() == "none":
        return None
    return CORRECTION_NAMES.get(str(name), str(name))


def _oneline(text: Any) -> str:
    """User text for a terminal line: control characters (escape sequences) blanked."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]+", " ", str(text)).strip()


# --------------------------------------------------------------------------- headline


def _overall(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in summary.get("comparisons", []) if c.get("segment") is None]


def _several_treatments(comps: Sequence[dict[str, Any]]) -> bool:
    return len({c["treatment"] for c in comps}) > 1


def _headline_subject(summary: dict[str, Any], comp: dict[str, Any], several: bool) -> str:
    subject = metric_label(summary, comp["metric"])
    if several:
        subject += f" · {arm_labels(summary).get(comp['treatment'], comp['treatment'])}"
    return _oneline(subject)


def p_phrase(comp: dict[str, Any]) -> str:
    """``p < 0.001 (t, Holm)``: the adjusted p-value of the primary test, or the raw one."""
    correction = correction_name(comp.get("correction"))
    p = comp.get("p_adjusted") if correction else None
    if p is None:
        p, correction = comp.get("p_value"), None
    shown = fmt_p(p)
    shown = shown if shown.startswith("<") or shown == "n/a" else f"= {shown}"
    tags = [test_name(comp.get("primary_test", "t"))] + ([correction] if correction else [])
    return f"p {shown} ({', '.join(tags)})"


def n_phrase(comp: dict[str, Any]) -> str:
    """``n = 1,880`` (paired) or ``n = 1,000 / 998`` (control / treatment, independent)."""
    if comp.get("design") == "independent":
        return f"n = {fmt_count(comp.get('n_control'))} / {fmt_count(comp.get('n_treatment'))}"
    return f"n = {fmt_count(comp.get('n'))}"


def verdict_phrase(comp: dict[str, Any], treatment_label: str) -> str:
    """``Cross-encoder reranker wins`` / ``... loses`` / ``inconclusive (...MDE...)``."""
    verdict = comp.get("verdict")
    if verdict in VERDICT_TEXT:
        return f"{treatment_label} {VERDICT_TEXT[verdict]}"
    unchanged = comp.get("design", "paired") == "paired" and comp.get("ties") == comp.get("n")
    if unchanged and _number(comp.get("n")) and comp["n"] > 0:
        return "inconclusive (no query changed)"
    if _number(comp.get("mde")) and comp["mde"] > 0:
        return f"inconclusive (this experiment could detect deltas ≥ {fmt_value(comp['mde'])})"
    return "inconclusive"


def headline_line(
    summary: dict[str, Any], comp: dict[str, Any], *, subject_width: int = 0, several: bool = False
) -> str:
    """One comparison as one line of text, in the grammar of the module docstring."""
    labels = arm_labels(summary)
    parts = [
        _headline_subject(summary, comp, several).ljust(subject_width),
        f"{fmt_value(comp.get('control_mean'))} → {fmt_value(comp.get('treatment_mean'))}",
        f"{fmt_signed(comp.get('delta'))} ({fmt_percent(comp.get('relative_lift'))})",
    ]
    parts += [interval_phrase(comp), p_phrase(comp), n_phrase(comp)]
    paired = comp.get("design", "paired") == "paired"
    if paired and all(_number(comp.get(k)) for k in ("wins", "ties", "losses")):
        parts.append(
            f"W/T/L {fmt_count(comp['wins'])}/{fmt_count(comp['ties'])}/{fmt_count(comp['losses'])}"
        )
    treatment = _oneline(labels.get(comp["treatment"], comp["treatment"]))
    parts.append(f"→ {verdict_phrase(comp, treatment)}")
    return "  ".join(parts)


def headline_lines(summary: dict) -> list[str]:
    """One line per metric x treatment (overall, not per segment), for terminals and reports.

    Every line follows one grammar so a reader scans them like a table: metric (and the
    treatment when there are several), control → treatment mean, delta with relative lift,
    the CI of both, the primary test's adjusted p-value, n, wins/ties/losses and the
    verdict. The metric column is padded to a common width.
    """
    comps = _overall(summary)
    several = _several_treatments(comps)
    width = max((len(_headline_subject(summary, c, several)) for c in comps), default=0)
    return [headline_line(summary, c, subject_width=width, several=several) for c in comps]


# --------------------------------------------------------------------------- shared content


def _title(summary: dict[str, Any]) -> str:
    experiment = summary.get("experiment") or {}
    return str(experiment.get("title") or experiment.get("name") or "abrank readout")


def _columns(comps: Sequence[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    """The results table's columns: (key for data attributes, header, cell formatter)."""
    p_keys = list(dict.fromkeys(k for c in comps for k in (c.get("p_values") or {})))
    levels = {fmt_level(c) for c in comps}
    level = levels.pop() if len(levels) == 1 else None
    corrections = {correction_name(c.get("correction")) for c in comps} - {None}
    adjusted = f"p adj. ({', '.join(sorted(corrections))})" if corrections else "p adj."
    paired = any(c.get("design", "paired") == "paired" for c in comps)
    columns: list[tuple[str, str, Any]] = [
        ("control_mean", "control mean", fmt_value),
        ("treatment_mean", "treatment mean", fmt_value),
        ("delta", "Δ", fmt_signed),
        ("ci", f"{level} CI" if level else "CI (level)", fmt_interval),
        ("relative_lift", "relative", fmt_percent),
        ("relative_ci", "relative CI", None),
        *((f"p_values.{k}", f"p ({SHORT_TEST_NAMES.get(k, test_name(k))})", fmt_p) for k in p_keys),
        ("p_adjusted", adjusted, fmt_p),
        ("effect_size", "effect size", lambda v: f"{v:+.2f}" if _number(v) else "n/a"),
        ("mde", "MDE", fmt_value),
        ("n", "n", fmt_count),
    ]
    if paired:
        columns.append(("wtl", "W / T / L", None))
    columns.append(("verdict", "verdict", None))
    return columns


def _cell(comp: dict[str, Any], key: str, formatter: Any) -> tuple[str, Any]:
    """(text shown, JSON value behind it) for one results-table cell."""
    if key.startswith("p_values."):
        value = (comp.get("p_values") or {}).get(key.split(".", 1)[1])
        return fmt_p(value), value
    if key == "relative_ci":
        return fmt_relative_interval(comp), comp.get("relative_ci")
    if key == "wtl":
        values = [comp.get(k) for k in ("wins", "ties", "losses")]
        if not all(_number(v) for v in values):
            return "n/a", values
        return " / ".join(fmt_count(v) for v in values), values
    if key == "verdict":
        return str(comp.get("verdict", "inconclusive")), comp.get("verdict")
    if key == "ci":
        text = fmt_interval(comp.get("ci"))
        if _widened(comp):
            text += f" ({fmt_level(comp)})"
        return text, comp.get("ci")
    if key == "n" and comp.get("design") == "independent":
        values = [comp.get("n_control"), comp.get("n_treatment")]
        return " / ".join(fmt_count(v) for v in values), values
    value = comp.get(key)
    return formatter(value), value


def _segment_column(summary: dict[str, Any], segment: str) -> str:
    """The segment column a segment value belongs to (``device=mobile`` -> ``device``)."""
    for column in (summary.get("segments") or {}).get("columns", []):
        if segment.startswith(f"{column}="):
            return str(column)
    return segment.split("=", 1)[0]


def _too_small(segments: dict[str, Any]) -> list[dict[str, Any]]:
    """The segments skipped for size, each once (the pipeline lists one per treatment and
    metric, since a metric's undefined values can make one metric's segment smaller)."""
    sizes: dict[str, list[int]] = {}
    for entry in segments.get("too_small") or []:
        if _number(entry.get("n")):
            sizes.setdefault(str(entry.get("segment")), []).append(int(entry["n"]))
    out = []
    for segment, ns in sizes.items():
        low, high = min(ns), max(ns)
        text = fmt_count(low) if low == high else f"{fmt_count(low)}-{fmt_count(high)} by metric"
        out.append({"segment": segment, "n": low, "n_text": text})
    return out


def _largest_moves(readout: Readout) -> list[tuple[str, str, pd.DataFrame, pd.DataFrame]]:
    """Per treatment, the primary metric's queries that lost and won the most.

    Returns (treatment, metric, losses, wins) with columns query_id, control, treatment,
    delta (paired design only); ties in delta are listed by query id. Only the candidates
    at or beyond the k-th largest move are sorted, so a million queries cost one merge.
    """
    summary = readout.summary
    frame = readout.per_query
    metric = summary.get("primary_metric")
    control = control_name(summary)
    if (
        summary.get("design", "paired") != "paired"
        or frame is None
        or frame.empty
        or metric not in frame.columns
        or control is None
    ):
        return []
    base = frame.loc[frame["arm"] == control, ["query_id", metric]]
    result = []
    for treatment in dict.fromkeys(c["treatment"] for c in _overall(summary)):
        other = frame.loc[frame["arm"] == treatment, ["query_id", metric]]
        joined = base.merge(other, on="query_id", suffixes=("_c", "_t"))
        c = joined[f"{metric}_c"].to_numpy(float)
        t = joined[f"{metric}_t"].to_numpy(float)
        delta = t - c
        picked = []
        for sign in (-1.0, 1.0):
            score = np.where(np.isfinite(delta) & (delta * sign > 0), -sign * delta, np.inf)
            found = int(np.isfinite(score).sum())
            if found > TOP_QUERIES:  # keep every query tied with the k-th largest move
                score[score > np.partition(score, TOP_QUERIES - 1)[TOP_QUERIES - 1]] = np.inf
            rows = np.flatnonzero(np.isfinite(score))
            part = pd.DataFrame(
                {
                    "query_id": joined["query_id"].to_numpy()[rows].astype(str),
                    "control": c[rows],
                    "treatment": t[rows],
                    "delta": delta[rows],
                    "_score": score[rows],
                }
            )
            part = part.sort_values(["_score", "query_id"], kind="stable").head(TOP_QUERIES)
            picked.append(part.drop(columns="_score").reset_index(drop=True))
        result.append((treatment, metric, picked[0], picked[1]))
    return result


def _settings(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The analysis settings shown for reproducibility, as (name, text) pairs."""
    correction = summary.get("correction")
    if isinstance(correction, dict):
        correction = ", ".join(f"{k}: {v}" for k, v in correction.items())
    pairs = [
        ("abrank version", summary.get("abrank_version")),
        ("seed", summary.get("seed")),
        ("config", summary.get("config_path")),
        ("design", summary.get("design")),
        ("primary metric", summary.get("primary_metric")),
        ("metrics", ", ".join(map(str, summary.get("metrics") or [])) or None),
        ("primary test", summary.get("primary_test")),
        ("tests", ", ".join(map(str, summary["tests"])) if summary.get("tests") else None),
        ("alpha", summary.get("alpha")),
        ("confidence level", summary.get("confidence_level")),
        ("resamples", fmt_count(summary["n_resamples"]) if "n_resamples" in summary else None),
        ("multiple-testing correction", correction),
        ("relevance threshold", summary.get("relevance_threshold")),
        ("gain", summary.get("gain")),
        ("depth", summary.get("depth")),
        ("missing queries", (summary.get("diagnostics") or {}).get("missing_policy")),
    ]
    return [(name, str(value)) for name, value in pairs if value is not None]


def _diagnostic_rows(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The per-arm diagnostics table: header and rows of text."""
    diagnostics = summary.get("diagnostics") or {}
    judged = diagnostics.get("judged_at_k") or {}
    k = judged.get("k")
    unjudged = diagnostics.get("unjudged_queries")
    header = ["arm", "label", "role", "queries", "missing"]
    if isinstance(unjudged, dict):
        header.append("without judgments")
    if judged.get("arms"):
        header.append(f"judged@{k}")
    rows = []
    for arm in summary.get("arms", []):
        name = arm["name"]
        queries = (diagnostics.get("queries") or {}).get(name, arm.get("queries"))
        row = [
            str(name),
            str(arm.get("label") or name),
            str(arm.get("role", "")),
            fmt_count(queries),
            fmt_count((diagnostics.get("missing") or {}).get(name)),
        ]
        if isinstance(unjudged, dict):
            row.append(fmt_count(unjudged.get(name)))
        if judged.get("arms"):
            row.append(fmt_value(judged["arms"].get(name)))
        rows.append(row)
    return header, rows


def _diagnostic_facts(summary: dict[str, Any]) -> list[tuple[str, str]]:
    diagnostics = summary.get("diagnostics") or {}
    facts = [
        ("queries analysed", diagnostics.get("analysed_queries")),
        ("judged queries", diagnostics.get("judged_queries")),
        ("queries in both arms (matched)", diagnostics.get("matched")),
        ("queries without a relevant judgment", diagnostics.get("without_relevant")),
    ]
    shown = [(name, fmt_count(value)) for name, value in facts if value is not None]
    undefined = diagnostics.get("undefined") or {}
    counts = undefined.get("metrics") or {}
    if counts:
        effect = "scored 0" if undefined.get("policy") == "zero" else "left out"
        text = ", ".join(
            f"{metric_label(summary, name)} {fmt_count(count)}" for name, count in counts.items()
        )
        shown.append((f"undefined values per metric ({effect})", text))
    if diagnostics.get("missing_policy"):
        shown.append(("missing-query policy", str(diagnostics["missing_policy"])))
    return shown


# --------------------------------------------------------------------------- Markdown


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_escape(text: Any) -> str:
    """User text for Markdown: HTML and Markdown syntax characters neutralised."""
    value = html.escape(_oneline(text), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", value)


def _md_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], align: Sequence[str] | None = None
) -> list[str]:
    align = align or ["left"] * len(header)
    marks = {"left": "---", "right": "--:", "center": ":-:"}
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(marks[a] for a in align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _md_fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md_results(summary: dict[str, Any], comps: Sequence[dict[str, Any]], first: str) -> list[str]:
    labels = arm_labels(summary)
    columns = _columns(comps)
    several = _several_treatments(summary.get("comparisons", []))
    header = ([first] if first else []) + ["metric"] + (["treatment"] if several else [])
    texts = len(header)
    header += [md_escape(h) for _, h, _ in columns]
    rows = []
    for comp in comps:
        row = [md_escape(comp["segment"])] if first else []
        row.append(md_escape(metric_label(summary, comp["metric"])))
        if several:
            row.append(md_escape(labels.get(comp["treatment"], comp["treatment"])))
        row += [_cell(comp, key, fmt)[0] for key, _, fmt in columns]  # our own text
        rows.append(row)
    align = ["left"] * texts + ["right"] * (len(columns) - 1) + ["left"]
    return _md_table(header, rows, align)


def _md_chart(chart: Chart) -> list[str]:
    return [
        f"![{md_escape(chart.title)}](charts/{chart.name})",
        "",
        f"*{md_escape(chart.caption)}*",
        "",
    ]


def render_markdown(readout: Readout, *, charts: Sequence[Chart] | None = None) -> str:
    """The readout as Markdown: the same sections as the HTML, charts linked as charts/NAME.png.

    ``charts`` is the chart list to link (default: every chart the readout has data for);
    the images themselves are written by :func:`write_charts`.
    """
    summary = readout.summary
    charts = list(plan_charts(readout) if charts is None else charts)
    by_name = {c.name: c for c in charts}
    experiment = summary.get("experiment") or {}
    labels = arm_labels(summary)
    out = [f"# {md_escape(_title(summary))}", ""]
    if experiment.get("description"):
        out += [md_escape(experiment["description"]), ""]
    meta = [f"experiment {md_escape(experiment.get('name', ''))}"]
    if experiment.get("owner"):
        meta.append(f"owner {md_escape(experiment['owner'])}")
    meta.append(f"{md_escape(summary.get('design', 'paired'))} design")
    control = control_name(summary)
    if control:
        meta.append(f"control {md_escape(labels.get(control, control))}")
    out += [" · ".join(meta), ""]

    out += ["## Headline", ""]
    lines = headline_lines(summary)
    fence = _md_fence("\n".join(lines))
    out += [f"{fence}text", *lines, fence, ""] if lines else ["No comparisons.", ""]
    for warning in (summary.get("diagnostics") or {}).get("warnings", []):
        out += [f"> **Warning:** {md_escape(warning)}", ""]

    overall = _overall(summary)
    out += ["## Results", ""]
    if overall:
        out += _md_results(summary, overall, "") + [""]
        out += [
            "p-values are two-sided; the adjusted p-value decides the verdict "
            f"(alpha = {md_escape(summary.get('alpha', 0.05))}). Δ is treatment − control.",
            "",
        ]
    for name in ("forest.png", "deltas.png", "bootstrap.png"):
        if name in by_name:
            out += _md_chart(by_name[name])

    out += ["## Where relevant documents land", ""]
    shown = [by_name[n] for n in ("first_relevant.png", "curves.png") if n in by_name]
    for chart in shown:
        out += _md_chart(chart)
    if not shown:
        out += ["No rank data in this readout.", ""]

    out += _md_segments(summary, charts)
    out += _md_moves(readout)
    out += _md_diagnostics(summary)
    out += _md_reproducibility(readout)
    return "\n".join(out).rstrip() + "\n"


def _md_segments(summary: dict[str, Any], charts: Sequence[Chart]) -> list[str]:
    segments = summary.get("segments") or {}
    segmented = [c for c in summary.get("comparisons", []) if c.get("segment") is not None]
    if not segmented and not segments.get("too_small"):
        return []
    out = ["## Segments", ""]
    if segments.get("columns"):
        out += [
            f"Segment columns: {', '.join(md_escape(c) for c in segments['columns'])}; "
            f"segments with fewer than {fmt_count(segments.get('min_queries'))} queries "
            "are not compared.",
            "",
        ]
    if segmented:
        out += _md_results(summary, segmented, "segment") + [""]
    small = _too_small(segments)
    if small:
        items = ", ".join(f"{md_escape(s['segment'])} (n = {s['n_text']})" for s in small)
        out += [f"Too small to compare: {items}.", ""]
    for chart in charts:
        if chart.name.startswith("segments-"):
            out += _md_chart(chart)
    return out


def _md_moves(readout: Readout) -> list[str]:
    moves = _largest_moves(readout)
    if not moves:
        return []
    summary = readout.summary
    labels = arm_labels(summary)
    out = ["## Queries that moved most", ""]
    for treatment, metric, losses, wins in moves:
        name = md_escape(labels.get(treatment, treatment))
        label = md_escape(metric_label(summary, metric))
        for title, part in (
            (f"Largest losses of {name}", losses),
            (f"Largest wins of {name}", wins),
        ):
            out += [f"**{title}** ({label})", ""]
            if part.empty:
                out += ["None.", ""]
                continue
            rows = [
                [md_escape(q), fmt_value(c), fmt_value(t), fmt_signed(d)]
                for q, c, t, d in part.itertuples(index=False)
            ]
            out += _md_table(
                ["query", "control", "treatment", "Δ"], rows, ["left", "right", "right", "right"]
            ) + [""]
    return out


def _md_diagnostics(summary: dict[str, Any]) -> list[str]:
    header, rows = _diagnostic_rows(summary)
    out = ["## Diagnostics", ""]
    out += _md_table(
        header,
        [[md_escape(c) for c in row] for row in rows],
        ["left", "left", "left"] + ["right"] * (len(header) - 3),
    ) + [""]
    out += [f"- {name}: {md_escape(value)}" for name, value in _diagnostic_facts(summary)]
    out += [""]
    warnings = (summary.get("diagnostics") or {}).get("warnings", [])
    if warnings:
        out += [f"- **Warning:** {md_escape(w)}" for w in warnings] + [""]
    return out


def _md_reproducibility(readout: Readout) -> list[str]:
    summary = readout.summary
    out = ["## Reproducibility", ""]
    out += [f"- {name}: {md_escape(value)}" for name, value in _settings(summary)] + [""]
    inputs = summary.get("inputs") or []
    if inputs:
        rows = [
            [
                md_escape(i.get("role", "")),
                md_escape(i.get("arm") or ""),
                md_escape(i.get("path", "")),
                fmt_count(i.get("rows")),
                f"`{i['sha256']}`"
                if re.fullmatch(r"[0-9a-fA-F]+", str(i.get("sha256", "")))
                else md_escape(i.get("sha256", "")),
            ]
            for i in inputs
        ]
        out += _md_table(
            ["role", "arm", "path", "rows", "sha256"],
            rows,
            ["left", "left", "left", "right", "left"],
        ) + [""]
    if readout.config_text:
        fence = _md_fence(readout.config_text)
        out += ["Config:", "", f"{fence}yaml", readout.config_text.rstrip("\n"), fence, ""]
    return out


# --------------------------------------------------------------------------- HTML


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


_CSS = """
:root { --win: #007a5a; --loss: #b34700; --neutral: #666; --line: #d9d9d9; --ink: #1a1a1a; }
* { box-sizing: border-box; }
body { margin: 0; background: #fff; color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
main { max-width: 1260px; margin: 0 auto; padding: 24px 24px 48px; }
h1 { font-size: 1.75rem; margin: 0 0 6px; line-height: 1.25; }
h2 { font-size: 1.25rem; margin: 36px 0 12px; padding-bottom: 4px;
  border-bottom: 2px solid var(--line); }
h3 { font-size: 1.02rem; margin: 22px 0 8px; }
.description { margin: 0 0 8px; max-width: 80ch; }
.meta { color: #555; margin: 0; font-size: 0.9rem; }
ol.headline { list-style: none; padding: 0; margin: 0; }
ol.headline li { display: flex; gap: 12px; align-items: baseline; padding: 8px 10px;
  border-left: 5px solid var(--neutral); background: #f6f6f6; margin-bottom: 6px; }
ol.headline li.win { border-color: var(--win); }
ol.headline li.loss { border-color: var(--loss); }
ol.headline code { white-space: pre-wrap; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo,
  Consolas, "Liberation Mono", monospace; overflow-wrap: anywhere; }
.badge { flex: none; display: inline-block; min-width: 118px; text-align: center;
  font-size: 0.78rem; font-weight: 700; text-transform: uppercase; letter-spacing: 0.04em;
  color: #fff; background: var(--neutral); border-radius: 3px; padding: 2px 6px; }
.badge.win { background: var(--win); }
.badge.loss { background: var(--loss); }
.warning { border: 1px solid #e0a040; background: #fff6e5; padding: 8px 12px; margin: 10px 0;
  border-radius: 3px; }
.table-wrap { overflow-x: auto; margin: 8px 0 12px; }
table { border-collapse: collapse; font-size: 0.76rem; }
th, td { padding: 3px 4px; border-bottom: 1px solid var(--line); text-align: right;
  white-space: nowrap; vertical-align: top; }
th { background: #f0f0f0; font-weight: 600; white-space: normal; vertical-align: bottom; }
table.results td.text { min-width: 8ch; white-space: nowrap; }
th.text, td.text { text-align: left; white-space: normal; }
td.win { color: var(--win); font-weight: 700; }
td.loss { color: var(--loss); font-weight: 700; }
td.code, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.8rem; }
td.hash { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.72rem; overflow-wrap: anywhere; white-space: normal; text-align: left; }
.note { color: #555; font-size: 0.88rem; }
.print-only { display: none; }
figure { margin: 16px 0 24px; }
figure img { display: block; max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.88rem; margin-top: 4px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 18px; margin: 8px 0; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; }
pre.config { background: #f6f6f6; border: 1px solid var(--line); padding: 10px 12px;
  overflow-x: auto; font-size: 0.8rem; line-height: 1.4; white-space: pre-wrap; }
.moves { display: grid; grid-template-columns: 1fr 1fr; gap: 0 28px; }
footer { margin-top: 40px; color: #777; font-size: 0.8rem; border-top: 1px solid var(--line);
  padding-top: 8px; }
@media (max-width: 800px) { main { padding: 16px; } .moves { grid-template-columns: 1fr; } }
@media print {
  body { font-size: 10pt; }
  table { font-size: 6.5pt; }
  th, td { padding: 2px 3px; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  figure, table, ol.headline li, .warning { break-inside: avoid; }
  .table-wrap { overflow: visible; }
  td.wrap, td.text { white-space: normal; }
  .secondary { display: none; }
  .print-only { display: block; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""


def _html_table(
    header: Sequence[tuple[str, str]], rows: Iterable[Sequence[str]], cls: str = ""
) -> str:
    """A table; header items are (css class, escaped text); rows hold finished <td> cells."""
    head = "".join(
        f'<th class="{c}" scope="col">{t}</th>' if c else f'<th scope="col">{t}</th>'
        for c, t in header
    )
    body = "".join(f"<tr>{''.join(row)}</tr>" for row in rows)
    klass = f' class="{cls}"' if cls else ""
    return (
        f'<div class="table-wrap"><table{klass}><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def _json_default(value: Any) -> Any:
    """NumPy scalars and arrays as builtins, anything else as its text."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _td(text: Any, cls: str = "", key: str | None = None, value: Any = ...) -> str:
    attrs = f' class="{cls}"' if cls else ""
    if key is not None:
        attrs += f' data-key="{_e(key)}"'
    if value is not ...:
        attrs += f' data-value="{_e(json.dumps(value, default=_json_default))}"'
    return f"<td{attrs}>{_e(text)}</td>"


def _html_results(summary: dict[str, Any], comps: Sequence[dict[str, Any]], segments: bool) -> str:
    labels = arm_labels(summary)
    columns = _columns(comps)
    several = _several_treatments(summary.get("comparisons", []))
    header = [("text", "segment")] if segments else []
    header += [("text", "metric")] + ([("text", "treatment")] if several else [])
    primary = f"p_values.{comps[0].get('primary_test', 't')}" if comps else ""
    secondary = {key for key, _, _ in columns if key.startswith("p_values.") and key != primary}
    header += [("secondary" if key in secondary else "", _e(h)) for key, h, _ in columns]
    rows = []
    for comp in comps:
        row = [_td(comp["segment"], "text", "segment", comp["segment"])] if segments else []
        row.append(_td(metric_label(summary, comp["metric"]), "text", "metric", comp["metric"]))
        if several:
            row.append(
                _td(
                    labels.get(comp["treatment"], comp["treatment"]),
                    "text",
                    "treatment",
                    comp["treatment"],
                )
            )
        for key, _, fmt in columns:
            text, value = _cell(comp, key, fmt)
            cls = (
                str(comp.get("verdict"))
                if key == "verdict"
                else "wrap"
                if key in ("ci", "relative_ci", "wtl")
                else "secondary"
                if key in secondary
                else ""
            )
            row.append(_td(text, cls, key, value))
        rows.append(row)
    return _html_table(header, rows, "results segments" if segments else "results")


def _html_chart(chart: Chart) -> str:
    data = base64.b64encode(chart.png).decode("ascii")
    return (
        f'<figure id="chart-{_e(chart.name.removesuffix(".png"))}">'
        f'<img src="data:image/png;base64,{data}" alt="{_e(chart.title)}">'
        f"<figcaption>{_e(chart.caption)}</figcaption></figure>"
    )


def render_html(readout: Readout, *, charts: Sequence[Chart] | None = None) -> str:
    """The readout as one self-contained HTML page: inline styles, charts as base64 PNG.

    It loads nothing from the network (no scripts, fonts or stylesheets), prints cleanly,
    and escapes every user text. ``charts`` defaults to every chart the readout has data
    for; pass the already drawn list to avoid drawing twice.
    """
    summary = readout.summary
    charts = list(plan_charts(readout) if charts is None else charts)
    by_name = {c.name: c for c in charts}
    experiment = summary.get("experiment") or {}
    labels = arm_labels(summary)
    title = _title(summary)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)} · abrank readout</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        "<main>",
        '<header id="top">',
        f"<h1>{_e(title)}</h1>",
    ]
    if experiment.get("description"):
        parts.append(f'<p class="description">{_e(experiment["description"])}</p>')
    meta = [f"experiment <strong>{_e(experiment.get('name', ''))}</strong>"]
    if experiment.get("owner"):
        meta.append(f"owner {_e(experiment['owner'])}")
    meta.append(f"{_e(summary.get('design', 'paired'))} design")
    control = control_name(summary)
    if control:
        meta.append(f"control {_e(labels.get(control, control))}")
    parts += [f'<p class="meta">{" · ".join(meta)}</p>', "</header>"]

    # Headline and verdicts
    parts += ['<section id="headline">', "<h2>Headline</h2>", '<ol class="headline">']
    comps = _overall(summary)
    for comp, line in zip(comps, headline_lines(summary), strict=True):
        verdict = str(comp.get("verdict", "inconclusive"))
        parts.append(
            f'<li class="{_e(verdict)}"><span class="badge {_e(verdict)}">'
            f"{_e(verdict)}</span><code>{_e(line)}</code></li>"
        )
    parts.append("</ol>")
    if not comps:
        parts.append("<p>No comparisons.</p>")
    for warning in (summary.get("diagnostics") or {}).get("warnings", []):
        parts.append(f'<p class="warning"><strong>Warning:</strong> {_e(warning)}</p>')
    parts.append("</section>")

    # Results
    parts += ['<section id="results">', "<h2>Results</h2>"]
    if comps:
        parts.append(_html_results(summary, comps, segments=False))
        parts.append(
            f'<p class="note">p-values are two-sided; the adjusted p-value decides '
            f"the verdict (alpha = {_e(summary.get('alpha', 0.05))}). Δ is treatment "
            "− control; the relative CI is a bootstrap interval of the ratio.</p>"
        )
        parts.append(
            '<p class="note print-only">Printed tables leave out the secondary '
            "tests' p-values; summary.json and the on-screen page have them.</p>"
        )
    parts += [
        _html_chart(by_name[n])
        for n in ("forest.png", "deltas.png", "bootstrap.png")
        if n in by_name
    ]
    parts.append("</section>")

    parts += ['<section id="positions">', "<h2>Where relevant documents land</h2>"]
    shown = [by_name[n] for n in ("first_relevant.png", "curves.png") if n in by_name]
    parts += [_html_chart(c) for c in shown] or ["<p>No rank data in this readout.</p>"]
    parts.append("</section>")

    parts += _html_segments(summary, charts)
    parts += _html_moves(readout)
    parts += _html_diagnostics(summary)
    parts += _html_reproducibility(readout)
    parts += [
        f"<footer>abrank {_e(summary.get('abrank_version', ''))} · seed "
        f"{_e(summary.get('seed', ''))} · {_e(experiment.get('name', ''))}</footer>",
        "</main>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _html_segments(summary: dict[str, Any], charts: Sequence[Chart]) -> list[str]:
    segments = summary.get("segments") or {}
    segmented = [c for c in summary.get("comparisons", []) if c.get("segment") is not None]
    if not segmented and not segments.get("too_small"):
        return []
    parts = ['<section id="segments">', "<h2>Segments</h2>"]
    if segments.get("columns"):
        parts.append(
            f"<p>Segment columns: {_e(', '.join(map(str, segments['columns'])))}; "
            f"segments with fewer than {_e(fmt_count(segments.get('min_queries')))} "
            "queries are not compared.</p>"
        )
    if segmented:
        parts.append(_html_results(summary, segmented, segments=True))
    small = _too_small(segments)
    if small:
        items = ", ".join(f"{_e(s['segment'])} (n = {_e(s['n_text'])})" for s in small)
        parts.append(f'<p class="note">Too small to compare: {items}.</p>')
    parts += [_html_chart(c) for c in charts if c.name.startswith("segments-")]
    parts.append("</section>")
    return parts


def _html_moves(readout: Readout) -> list[str]:
    moves = _largest_moves(readout)
    if not moves:
        return []
    summary = readout.summary
    labels = arm_labels(summary)
    parts = ['<section id="queries">', "<h2>Queries that moved most</h2>"]
    header = [("text", "query"), ("", "control"), ("", "treatment"), ("", "Δ")]
    for treatment, metric, losses, wins in moves:
        name = labels.get(treatment, treatment)
        label = metric_label(summary, metric)
        parts.append('<div class="moves">')
        for title, part in (
            (f"Largest losses of {name}", losses),
            (f"Largest wins of {name}", wins),
        ):
            parts.append(f"<div><h3>{_e(title)} ({_e(label)})</h3>")
            if part.empty:
                parts.append("<p>None.</p></div>")
                continue
            rows = [
                [_td(q, "text"), _td(fmt_value(c)), _td(fmt_value(t)), _td(fmt_signed(d))]
                for q, c, t, d in part.itertuples(index=False)
            ]
            parts.append(_html_table(header, rows) + "</div>")
        parts.append("</div>")
    parts.append("</section>")
    return parts


def _html_diagnostics(summary: dict[str, Any]) -> list[str]:
    header, rows = _diagnostic_rows(summary)
    cells = [[_td(v, "text") for v in row[:3]] + [_td(v) for v in row[3:]] for row in rows]
    head = [("text", _e(h)) for h in header[:3]] + [("", _e(h)) for h in header[3:]]
    parts = [
        '<section id="diagnostics">',
        "<h2>Diagnostics</h2>",
        _html_table(head, cells, "diagnostics"),
        '<dl class="facts">',
    ]
    parts += [f"<dt>{_e(n)}</dt><dd>{_e(v)}</dd>" for n, v in _diagnostic_facts(summary)]
    parts.append("</dl>")
    for warning in (summary.get("diagnostics") or {}).get("warnings", []):
        parts.append(f'<p class="warning"><strong>Warning:</strong> {_e(warning)}</p>')
    parts.append("</section>")
    return parts


def _html_reproducibility(readout: Readout) -> list[str]:
    summary = readout.summary
    parts = ['<section id="reproducibility">', "<h2>Reproducibility</h2>", '<dl class="facts">']
    parts += [f"<dt>{_e(n)}</dt><dd>{_e(v)}</dd>" for n, v in _settings(summary)]
    parts.append("</dl>")
    inputs = summary.get("inputs") or []
    if inputs:
        header = [
            ("text", "role"),
            ("text", "arm"),
            ("text", "path"),
            ("", "rows"),
            ("text", "sha256"),
        ]
        rows = [
            [
                _td(i.get("role", ""), "text"),
                _td(i.get("arm") or "", "text"),
                _td(i.get("path", ""), "text code"),
                _td(fmt_count(i.get("rows"))),
                _td(i.get("sha256", ""), "hash"),
            ]
            for i in inputs
        ]
        parts += ["<h3>Data files</h3>", _html_table(header, rows, "inputs")]
    if readout.config_text:
        parts += ["<h3>Config</h3>", f'<pre class="config">{_e(readout.config_text)}</pre>']
    parts.append("</section>")
    return parts


# --------------------------------------------------------------------------- files


def write_charts(
    readout: Readout, folder: Path, *, charts: Sequence[Chart] | None = None
) -> list[Path]:
    """Draw the readout's charts into ``folder/charts/*.png``; returns the paths written."""
    charts = list(plan_charts(readout) if charts is None else charts)
    target = Path(folder) / "charts"
    target.mkdir(parents=True, exist_ok=True)
    workers.render_charts(readout, charts)  # in the chart workers when they run
    paths = []
    for chart in charts:
        path = target / chart.name
        path.write_bytes(chart.png)
        paths.append(path)
    return paths


def write_report(
    readout: Readout, folder: Path, formats: Sequence[str] = REPORT_FORMATS
) -> list[Path]:
    """Write ``report.html`` and/or ``report.md`` into ``folder``, with the charts they show.

    ``folder`` must exist (the pipeline builds the readout in a temporary folder and moves
    it into place when complete). Charts are drawn once, written to ``charts/`` and
    embedded in the HTML. Returns the paths written.
    """
    folder = Path(folder)
    if isinstance(formats, str):
        formats = [formats]
    unknown = [f for f in formats if f not in REPORT_FORMATS]
    if unknown:
        raise ConfigError(
            f"formats: expected some of {', '.join(REPORT_FORMATS)}, "
            f"got {', '.join(map(repr, unknown))}"
        )
    if not folder.is_dir():
        raise ConfigError(f"{folder}: expected an existing folder, got none")
    if not formats:
        return []
    charts = plan_charts(readout)
    paths = write_charts(readout, folder, charts=charts)
    if "md" in formats:
        path = folder / "report.md"
        path.write_text(render_markdown(readout, charts=charts), encoding="utf-8")
        paths.append(path)
    if "html" in formats:
        path = folder / "report.html"
        path.write_text(render_html(readout, charts=charts), encoding="utf-8")
        paths.append(path)
    return paths
