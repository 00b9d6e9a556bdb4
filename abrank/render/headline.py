"""The headline of a readout: one line per comparison, and the opening sentences.

The headline grammar, one line per metric x treatment::

    MRR@10  0.541 → 0.779  +0.238 (+44.0%)  95% CI [+0.221, +0.255] / [+39.0%, +49.0%]
    p < 0.001 (t, Holm)  n = 1,880  W/T/L 1,103/582/195  → Cross-encoder reranker wins

(printed on one line). Inconclusive lines end with what the experiment could have
detected: ``→ inconclusive (this experiment could detect deltas ≥ 0.031)``. An interleaved
comparison shows the share of impressions each arm won (ties counted half) and the
preference Δ_AB instead of the means and the lift::

    preference by clicks  0.436 vs 0.564  Δ_AB +0.064  95% CI [+0.057, +0.071]
    p < 0.001 (delta method, clustered by user_id, Holm)  n = 10,000 impressions / 2,000
    users  W/T/L 2,704/5,866/1,430  → reranker wins

The opening sentence says the same for the primary metric in plain words, one per
treatment ("Cross-encoder reranker raises MRR@10 from 0.539 to 0.785 (+45.6%, 98.3% CI
[+0.221, +0.271]): a win."), and its gloss reads the means in the metric's own terms
(for MRR, 1/MRR is the harmonic mean of the first relevant result's position).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from abrank.errors import ConfigError
from abrank.metrics.names import parse_metric
from abrank.readout.model import ComparisonSummary, Summary
from abrank.readout.typed import as_comparison, as_summary, control_name, overall_comparisons
from abrank.render.text import (
    VERDICT_TEXT,
    arm_label,
    comparison_subject,
    correction_name,
    fmt_count,
    fmt_interval,
    fmt_level,
    fmt_p,
    fmt_percent,
    fmt_relative_interval,
    fmt_share,
    fmt_signed,
    fmt_value,
    is_number,
    oneline,
    several_treatments,
    test_name,
    widened,
)


def interval_phrase(comp: ComparisonSummary | dict[str, Any]) -> str:
    """``95% CI [+0.226, +0.266] / [+40.8%, +50.6%]``, the level widened and named when a
    correction applies (``98.8% CI (Holm) ...``), and a remark when the interval and the
    primary test still disagree, so that no line shows an interval against its verdict."""
    comp = as_comparison(comp)
    if no_interval_regime(comp):
        return regime_interval_phrase(comp)
    label = f"{fmt_level(comp)} CI"
    if widened(comp):
        label += f" ({correction_name(comp.correction)})"
    text = f"{label} {fmt_interval(comp.ci)}"
    if is_number(comp.relative_lift):
        text += f" / {fmt_relative_interval(comp)}"
    if comp.ci_agrees is False:
        test = test_name(comp.primary_test)
        text += f" (a bootstrap interval; the {test} test decides the verdict)"
    return text


def no_interval_regime(comp: ComparisonSummary) -> bool:
    """The verdict came from a test without an interval: the exact sign-flip test of a
    paired comparison's sparse or skewed deltas (a clustered comparison's jackknife on
    concentrated units has one, and the line shows it)."""
    return bool(comp.regime) and comp.design == "paired"


def regime_interval_phrase(comp: ComparisonSummary) -> str:
    """``no CI (exact sign-flip test on 5 of 66 queries that moved)``: the verdict's test
    on sparse or skewed deltas has no interval, so the line shows none rather than an
    interval of another test that could disagree with the verdict."""
    regime = comp.regime or {}
    test = test_name(comp.primary_test)
    moved, n = regime.get("nonzero"), regime.get("n")
    if is_number(moved) and is_number(n):
        return f"no CI ({test} test on the {fmt_count(moved)} of {fmt_count(n)} queries that moved)"
    return f"no CI ({test} test)"


def p_phrase(comp: ComparisonSummary | dict[str, Any]) -> str:
    """``p < 0.001 (t, Holm)``: the adjusted p-value of the primary test, or the raw one."""
    comp = as_comparison(comp)
    correction = correction_name(comp.correction)
    p = comp.p_adjusted if correction else None
    if p is None:
        p, correction = comp.p_value, None
    shown = fmt_p(p)
    shown = shown if shown.startswith("<") or shown == "n/a" else f"= {shown}"
    test = test_name(comp.primary_test)
    if comp.unit:  # the clustered method, named on every line
        own = comp.primary_test in ("t", "jackknife")  # ci_method names it and the unit
        test = comp.ci_method if own else f"{test}, by {comp.unit}"
        test += concentrated_phrase(comp)
    tags = [test] + ([correction] if correction else [])
    return f"p {shown} ({', '.join(tags)})"


def concentrated_phrase(comp: ComparisonSummary) -> str:
    """``; 9 effective of 500 users``: why the jackknife gave a clustered verdict, from
    the arm whose impressions are the most concentrated (an interleaving log's units:
    ``all``; empty for any other line)."""
    regime = comp.regime or {}
    if "concentrated" not in regime.get("reasons", ()):
        return ""
    arms = [regime.get(side) or {} for side in ("control", "treatment", "all")]
    arms = [arm for arm in arms if is_number(arm.get("effective_share"))]
    if not arms:
        return ""
    arm = min(arms, key=lambda figures: figures["effective_share"])
    units = unit_plural(comp.unit or "unit")
    return f"; {arm['effective_units']:,.0f} effective of {fmt_count(arm['units'])} {units}"


def n_phrase(comp: ComparisonSummary | dict[str, Any]) -> str:
    """``n = 1,880`` (paired) or ``n = 1,000 / 998`` (control / treatment, independent)."""
    comp = as_comparison(comp)
    units = comp.n_units
    if interleaved(comp):
        shown = fmt_count(units.get("all")) if isinstance(units, dict) else "n/a"
        return f"n = {fmt_count(comp.n)} impressions / {shown} {unit_plural(comp.unit or 'unit')}"
    if comp.unit and isinstance(units, dict):
        return (
            f"n = {fmt_count(units.get('control'))} / {fmt_count(units.get('treatment'))} "
            f"{unit_plural(comp.unit)}"
        )
    if comp.design == "independent":
        return f"n = {fmt_count(comp.n_control)} / {fmt_count(comp.n_treatment)}"
    return f"n = {fmt_count(comp.n)}"


def interleaved(comp: ComparisonSummary) -> bool:
    """A comparison of an interleaving experiment (the treatment's preference Δ_AB)."""
    return comp.design == "interleaved"


def unit_plural(unit: str) -> str:
    """``users`` for ``user_id``, ``sessions`` for ``session_id``: the unit counted."""
    name = unit[:-3] if unit.endswith("_id") else unit
    return name if name.endswith("s") else f"{name}s"


def no_query_changed(comp: ComparisonSummary | dict[str, Any]) -> bool:
    """A paired comparison in which every query tied."""
    comp = as_comparison(comp)
    paired = comp.design == "paired"
    n = comp.n
    return paired and is_number(n) and n > 0 and comp.ties == n


def verdict_phrase(comp: ComparisonSummary | dict[str, Any], treatment_label: str) -> str:
    """``Cross-encoder reranker wins`` / ``... loses`` / ``inconclusive (...MDE...)``."""
    comp = as_comparison(comp)
    verdict = comp.verdict
    if verdict in VERDICT_TEXT:
        return f"{treatment_label} {VERDICT_TEXT[verdict]}"
    if no_query_changed(comp):
        return "inconclusive (no query changed)"
    if is_number(comp.mde) and comp.mde > 0:
        return f"inconclusive (this experiment could detect deltas ≥ {fmt_value(comp.mde)})"
    return "inconclusive"


def wtl_phrase(comp: ComparisonSummary | dict[str, Any]) -> str | None:
    """``W/T/L 1,103/582/195`` for a paired or interleaved comparison with counts (queries
    or impressions), else None."""
    comp = as_comparison(comp)
    paired = comp.design == "paired" or interleaved(comp)
    counts = [comp.wins, comp.ties, comp.losses]
    if not paired or not all(is_number(v) for v in counts):
        return None
    return "W/T/L " + "/".join(fmt_count(v) for v in counts)


def headline_line(
    summary: Summary | dict[str, Any],
    comp: ComparisonSummary | dict[str, Any],
    *,
    subject_width: int = 0,
    several: bool = False,
) -> str:
    """One comparison as one line of text, in the grammar of the module docstring."""
    summary, comp = as_summary(summary), as_comparison(comp)
    parts = [
        oneline(comparison_subject(summary, comp, several)).ljust(subject_width),
        means_phrase(comp),
        delta_phrase(comp),
    ]
    parts += [interval_phrase(comp), p_phrase(comp), n_phrase(comp)]
    wtl = wtl_phrase(comp)
    if wtl:
        parts.append(wtl)
    treatment = oneline(arm_label(summary, comp.treatment))
    shown = verdict_phrase(comp, treatment)
    for caveat in caveats(summary, comp):
        shown += f" — {caveat.short}"
    parts.append(f"→ {shown}")
    return "  ".join(parts)


def means_phrase(comp: ComparisonSummary) -> str:
    """``0.541 → 0.779``: the arms' means; ``0.436 vs 0.564`` for an interleaved comparison,
    the shares of impressions each arm won (ties counted half)."""
    arrow = "vs" if interleaved(comp) else "→"
    return f"{fmt_value(comp.control_mean)} {arrow} {fmt_value(comp.treatment_mean)}"


def delta_phrase(comp: ComparisonSummary) -> str:
    """``+0.238 (+44.0%)``: the delta and the relative lift; ``Δ_AB +0.064`` interleaved."""
    if interleaved(comp):
        return f"Δ_AB {fmt_signed(comp.delta)}"
    return f"{fmt_signed(comp.delta)} ({fmt_percent(comp.relative_lift)})"


def alarms(summary: Summary | dict[str, Any]) -> list[str]:
    """The alarms that go above everything else (a sample ratio mismatch, an interleaving's
    first-team imbalance), as sentences."""
    summary = as_summary(summary)
    diagnostics = summary.diagnostics
    checks = [
        diagnostics.srm if diagnostics is not None else None,
        diagnostics.interleaving if diagnostics is not None else None,
    ]
    messages = [check.message() for check in checks if check is not None]
    return [message for message in messages if message]


def notices(summary: Summary | dict[str, Any]) -> list[str]:
    """What goes above everything else beside the alarms, as sentences: stale inputs (a
    dated readout of the previous date's very bytes)."""
    schedule = as_summary(summary).schedule
    message = schedule.message() if schedule is not None else None
    return [message] if message else []


@dataclass(frozen=True)
class Caveat:
    """Why a verdict is not to be taken as it stands: ``short`` for a headline line and a
    badge, ``words`` for the opening sentence (after "but")."""

    short: str
    words: str


def caveats(
    summary: Summary | dict[str, Any], comp: ComparisonSummary | dict[str, Any]
) -> list[Caveat]:
    """What the readout knows against this comparison's verdict: an alarm that fired (a
    sample ratio mismatch, an interleaving's first-team imbalance), stale inputs (the
    previous date's very bytes), and a verdict that the judged-only view changes (it
    depends on unjudged documents)."""
    summary, comp = as_summary(summary), as_comparison(comp)
    diagnostics = summary.diagnostics
    out = []
    srm = diagnostics.srm if diagnostics is not None else None
    checks = diagnostics.interleaving if diagnostics is not None else None
    if srm is not None and srm.alarm:
        out.append(
            Caveat(
                "not trustworthy: sample ratio mismatch",
                "not trustworthy until the sample ratio mismatch is explained",
            )
        )
    if checks is not None and checks.first_team.alarm:
        out.append(
            Caveat(
                "not trustworthy: first-team imbalance",
                "not trustworthy until the first-team imbalance is explained",
            )
        )
    schedule = summary.schedule
    if schedule is not None and schedule.stale:
        out.append(
            Caveat(
                f"stale inputs, those of {schedule.previous_date}",
                f"on stale inputs (byte-identical to those of {schedule.previous_date})",
            )
        )
    other = judged_only_twin(summary, comp)
    if other is not None and other.verdict != comp.verdict:
        view = f"{other.verdict or 'inconclusive'} on judged documents only"
        out.append(
            Caveat(
                f"depends on unjudged documents: {view}",
                f"it depends on unjudged documents ({view})",
            )
        )
    return out


def judged_only_twin(
    summary: Summary | dict[str, Any], comp: ComparisonSummary | dict[str, Any]
) -> ComparisonSummary | None:
    """The judged-only repetition of an overall comparison (``diagnostics.unjudged``), or
    None when the check did not run or did not repeat it."""
    summary, comp = as_summary(summary), as_comparison(comp)
    diagnostics = summary.diagnostics
    check = diagnostics.unjudged if diagnostics is not None else None
    if check is None or not check.triggered or comp.segment is not None:
        return None
    for other in check.condensed:
        if other.treatment == comp.treatment and _plain_metric(other.metric) == comp.metric:
            return other
    return None


def _plain_metric(name: str) -> str:
    """``ndcg@10(judged)`` -> ``ndcg@10``; a name that does not parse as it is."""
    try:
        metric = parse_metric(name)
    except ConfigError:
        return name
    return dataclasses.replace(metric, judged_only=False).name


def flagged(summary: Summary | dict[str, Any], comp: ComparisonSummary | dict[str, Any]) -> bool:
    """Whether the verdict carries a caveat: its badge is then not drawn in the verdict's
    own colour."""
    return bool(caveats(summary, comp))


def headline_lines(summary: Summary | dict[str, Any]) -> list[str]:
    """One line per metric x treatment (overall, not per segment), for terminals and reports.

    Every line follows one grammar so a reader scans them like a table: metric (and the
    treatment when there are several), control → treatment mean, delta with relative lift,
    the CI of both, the primary test's adjusted p-value, n, wins/ties/losses and the
    verdict. The metric column is padded to a common width.
    """
    summary = as_summary(summary)
    comps = overall_comparisons(summary)
    several = several_treatments(comps)
    subjects = [oneline(comparison_subject(summary, c, several)) for c in comps]
    width = max((len(s) for s in subjects), default=0)
    return [headline_line(summary, c, subject_width=width, several=several) for c in comps]


# --------------------------------------------------------------------------- plain words


def primary_comparisons(summary: Summary | dict[str, Any]) -> list[ComparisonSummary]:
    """The overall comparisons of the primary metric, one per treatment (the first metric's
    when the summary names no primary metric)."""
    summary = as_summary(summary)
    comps = overall_comparisons(summary)
    if not comps:
        return []
    primary = summary.primary_metric
    if primary not in {c.metric for c in comps}:
        primary = comps[0].metric
    return [c for c in comps if c.metric == primary]


def _verdict_words(comp: ComparisonSummary) -> str:
    verdict = comp.verdict
    if verdict == "win":
        return "a win"
    if verdict == "loss":
        return "a loss"
    if no_query_changed(comp):
        return "inconclusive, since no query changed"
    if is_number(comp.mde) and comp.mde > 0:
        return (
            f"inconclusive (this experiment could detect deltas of {fmt_value(comp.mde)} or more)"
        )
    return "inconclusive"


def opening_parts(
    summary: Summary | dict[str, Any], comp: ComparisonSummary | dict[str, Any]
) -> list[tuple[str, bool]]:
    """The opening sentence of one comparison as (text, is user text) parts: who moved the
    metric, from what to what, by how much with which interval, and the verdict."""
    summary, comp = as_summary(summary), as_comparison(comp)
    treatment = arm_label(summary, comp.treatment)
    metric = comparison_subject(summary, comp, several=False)
    if interleaved(comp):
        return _preference_parts(summary, comp, treatment, metric)
    control, new = fmt_value(comp.control_mean), fmt_value(comp.treatment_mean)
    delta = comp.delta
    if is_number(delta) and delta > 0:
        verb, figures = "raises", f" from {control} to {new}"
    elif is_number(delta) and delta < 0:
        verb, figures = "lowers", f" from {control} to {new}"
    else:
        verb, figures = "leaves", f" at {new} (control {control})"
    size = fmt_percent(comp.relative_lift)
    if size == "n/a":
        size = f"Δ {fmt_signed(delta)}"
    interval = f"{fmt_level(comp)} CI {fmt_interval(comp.ci)}"
    if no_interval_regime(comp):
        interval = regime_interval_phrase(comp)
    return [
        (treatment, True),
        (f" {verb} ", False),
        (metric, True),
        (f"{figures} ({size}, {interval}): {_verdict_words(comp)}{_but(summary, comp)}.", False),
    ]


def _but(summary: Summary, comp: ComparisonSummary) -> str:
    """``, but not trustworthy until the sample ratio mismatch is explained``: the caveats
    of the verdict, for the end of its opening sentence (empty without any)."""
    words = [caveat.words for caveat in caveats(summary, comp)]
    return f", but {'; and '.join(words)}" if words else ""


def _preference_parts(
    summary: Summary, comp: ComparisonSummary, treatment: str, metric: str
) -> list[tuple[str, bool]]:
    """``reranker against bm25: preference by clicks +0.064 (won 2,704 impressions, lost
    1,430, tied 5,866; 95% CI [+0.057, +0.071]): a win.``"""
    control = arm_label(summary, comp.control or control_name(summary) or "control")
    counts = (
        f"won {fmt_count(comp.wins)} impressions, lost {fmt_count(comp.losses)}, tied "
        f"{fmt_count(comp.ties)}; "
        if all(is_number(v) for v in (comp.wins, comp.ties, comp.losses))
        else ""
    )
    interval = f"{fmt_level(comp)} CI {fmt_interval(comp.ci)}"
    return [
        (treatment, True),
        (" against ", False),
        (control, True),
        (": ", False),
        (metric, True),
        (
            f" {fmt_signed(comp.delta)} ({counts}{interval}): "
            f"{_verdict_words(comp)}{_but(summary, comp)}.",
            False,
        ),
    ]


def opening_sentence(
    summary: Summary | dict[str, Any], comp: ComparisonSummary | dict[str, Any]
) -> str:
    """The opening sentence of one comparison, as one line of text."""
    return "".join(text for text, _ in opening_parts(summary, comp))


def _first_position_words(mrr: float) -> str:
    """What an MRR tells of the share of queries answered at rank 1: at least 2·MRR − 1
    (every other query scores at most 1/2)."""
    if mrr >= 0.95:
        return "nearly always first"
    if mrr > 0.75:
        return "first for most queries"
    return ""


def _listing(values: list[tuple[str, str]]) -> str:
    """``2.0 for BM25, 1.6 for Reranker and 2.0 for Boost``."""
    items = [f"{value} for {label}" for label, value in values]
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def gloss(
    summary: Summary | dict[str, Any], comps: Sequence[ComparisonSummary | dict[str, Any]]
) -> str | None:
    """The means of the primary metric read in the metric's own terms (one sentence over
    the control and every treatment), or None when the metric has no simpler reading
    (MAP, DCG, judged@k, click metrics) or a mean is missing."""
    if not comps:
        return None
    summary, records = as_summary(summary), [as_comparison(c) for c in comps]
    if interleaved(records[0]):
        return _clicks_gloss(summary, records)
    given = [records[0].control_mean, *(c.treatment_mean for c in records)]
    means = [m for m in given if is_number(m)]
    if len(means) < len(given):
        return None
    try:
        metric = parse_metric(records[0].metric)
    except ConfigError:
        return None
    labels = [arm_label(summary, control_name(summary) or "control")]
    labels += [arm_label(summary, c.treatment) for c in records]
    top = f"the top {metric.k}" if metric.k else "the ranking"
    family = metric.family
    if family == "mrr":
        if min(means) <= 0:
            return None
        why = "1/MRR is the harmonic mean of its position"
        if len(records) == 1:
            c, t = means
            words = _first_position_words(t)
            return (
                f"The first relevant result moved from about position {1 / c:.1f} to about "
                f"{1 / t:.1f} ({why})" + (f": {words}." if words else ".")
            )
        positions = [(a, f"{1 / m:.1f}") for a, m in zip(labels, means, strict=True)]
        return f"The first relevant result sits at about position {_listing(positions)} ({why})."
    leads = {
        "ndcg": f"Share of the ideal ordering's gain that {top} holds",
        "recall": f"Share of the relevant documents found in {top}",
        "hit": f"Share of queries with a relevant document in {top}",
        "precision": f"Share of relevant documents in {top}",
    }
    if family not in leads or not all(0 <= m <= 1 for m in means):
        return None
    shares = [(a, fmt_share(m)) for a, m in zip(labels, means, strict=True)]
    if len(records) == 1:
        (control, old_share), (treatment, new_share) = shares
        return f"{leads[family]}: {new_share} for {treatment}, against {old_share} for {control}."
    return f"{leads[family]}: {_listing(shares)}."


def _clicks_gloss(summary: Summary, comps: list[ComparisonSummary]) -> str | None:
    """How many impressions could show a preference: those with a click, and in how many
    each arm's results drew more of the credited clicks (one treatment only)."""
    details = comps[0].interleaving or {}
    clicked, n = details.get("clicked"), comps[0].n
    if len(comps) != 1 or not is_number(clicked) or not is_number(n) or not n:
        return None
    comp = comps[0]
    control = arm_label(summary, comp.control or control_name(summary) or "control")
    treatment = arm_label(summary, comp.treatment)
    return (
        f"{fmt_count(clicked)} of the {fmt_count(n)} impressions ({fmt_share(clicked / n)}) "
        f"had a click; {treatment}'s results drew more of the credited clicks in "
        f"{fmt_count(comp.wins)} of them and {control}'s in {fmt_count(comp.losses)}."
    )


def stamp(summary: Summary | dict[str, Any]) -> list[str]:
    """When and with what the readout was made, as far as the summary tells: the run date,
    the data window (or "offline replay" for a replayed paired experiment), the abrank
    version and the seed (``run_date``, ``date`` and ``window`` are optional keys, kept in
    the summary's ``extra``)."""
    summary = as_summary(summary)
    extra = summary.extra or {}
    parts = []
    for key, name in (("run_date", "run"), ("date", "data of")):
        if extra.get(key):
            parts.append(f"{name} {extra[key]}")
    window = extra.get("window")
    if isinstance(window, dict):
        window = ", ".join(f"{k} {v}" for k, v in window.items())
    if window:
        parts.append(f"window {window}")
    elif not extra.get("date") and summary.design == "paired":
        parts.append("offline replay")
    if summary.abrank_version:
        parts.append(f"abrank {summary.abrank_version}")
    if summary.seed is not None:
        parts.append(f"seed {summary.seed}")
    return parts


def key_figures(summary: Summary | dict[str, Any]) -> list[dict[str, str]]:
    """The big numbers of the primary metric per treatment: what the page shows first."""
    summary = as_summary(summary)
    comps = primary_comparisons(summary)
    several = several_treatments(comps)
    return [
        {
            "subject": comparison_subject(summary, comp, several),
            "means": means_phrase(comp),
            "delta": delta_phrase(comp),
            "verdict": str(comp.verdict or "inconclusive"),
            "caveat": "; ".join(c.short for c in caveats(summary, comp)),
        }
        for comp in comps
    ]
