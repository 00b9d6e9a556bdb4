"""Text shared by every output: number formats, display names and labels of a summary.

The reports (Markdown, HTML, terminal headlines) and the charts format numbers with the
same rules, so one value reads the same wherever it is shown:

- means, deltas, CI bounds and MDEs: three decimals (deltas and bounds signed);
- relative lifts: percent with one decimal, signed; "n/a" when the control mean is 0,
  "unbounded" when the relative interval has no finite bounds;
- p-values: "< 0.001" below 0.001, else three significant digits;
- counts: thousands separated by commas;
- confidence levels: "95%", or "98.8%" once a correction widened them.

The helpers read the typed summary (:class:`abrank.readout.model.Summary` and its
records) and accept a summary dict too, converted by :mod:`abrank.readout.typed`: a readout
built by hand in a notebook may leave fields out or hold NumPy scalars, NaN and None.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import numpy as np

from abrank.errors import ConfigError
from abrank.metrics.names import parse_metric
from abrank.readout.model import ComparisonSummary, SampleRatio, Summary
from abrank.readout.typed import as_comparison, as_summary
from abrank.stats import registry as stats_registry

TEST_NAMES = stats_registry.test_display_names()
CORRECTION_NAMES = stats_registry.correction_display_names()
SHORT_TEST_NAMES = stats_registry.test_labels()
VERDICT_TEXT = {"win": "wins", "loss": "loses"}

# --------------------------------------------------------------------------- numbers


def is_number(value: Any) -> TypeGuard[float]:
    """A finite real number (Python or NumPy scalar), not a boolean: a number to compute
    with (a type guard, so that a value known to be a number types as one)."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(value)
    )


def scaled_digits(value: float, digits: int | None = None) -> int:
    """Decimals for a number of its size when none are asked for: 3 below 10 (metric values
    and their changes: ``0.540``), 2 from 10 and 1 from 100 (a latency in milliseconds:
    ``457.9``), so that a wide scale shows no noise digits."""
    if digits is not None:
        return digits
    size = abs(value)
    return 1 if size >= 100 else 2 if size >= 10 else 3


def fmt_value(value: Any, digits: int | None = None) -> str:
    """A mean or a metric value: ``0.540``, ``457.9`` (:func:`scaled_digits`); ``n/a`` when
    missing or not finite."""
    return f"{value:.{scaled_digits(value, digits)}f}" if is_number(value) else "n/a"


def fmt_signed(value: Any, digits: int | None = None) -> str:
    """A delta or a CI bound, always signed: ``+0.240``, ``-0.012``, ``+16.30``."""
    return f"{value:+.{scaled_digits(value, digits)}f}" if is_number(value) else "n/a"


def fmt_percent(value: Any) -> str:
    """A relative lift as a signed percent with one decimal: ``+44.4%``."""
    return f"{value * 100:+.1f}%" if is_number(value) else "n/a"


def fmt_share(value: Any) -> str:
    """A share as an unsigned percent with one decimal: ``74.8%`` (-0.0 shows as 0.0%)."""
    return f"{value * 100 + 0.0:.1f}%" if is_number(value) else "n/a"


def fmt_p(value: Any) -> str:
    """A p-value: ``< 0.001`` below 0.001, else three significant digits (``0.0342``)."""
    if not is_number(value):
        return "n/a"
    return "< 0.001" if value < 0.001 else f"{value:.3g}"


def fmt_p_is(value: Any) -> str:
    """A p-value in a sentence: ``p < 0.001`` below 0.001, else ``p = 0.0342``."""
    shown = fmt_p(value)
    return f"p {shown}" if shown.startswith("<") else f"p = {shown}"


def split_check_text(check: SampleRatio) -> str:
    """A split check (sample ratio, first team) as a fact: ``ok: chi-square 0.24, p = 0.621
    (alarm below 0.001)``; the chi-square statistic is shown only when the chi-square test
    gave the p-value (the exact test's name stands in the fact's name)."""
    verdict = "ALARM" if check.alarm else "ok"
    statistic = (
        f"chi-square {check.chi2:.2f}, " if check.test == "chi2" and check.chi2 is not None else ""
    )
    return f"{verdict}: {statistic}{fmt_p_is(check.p_value)} (alarm below {check.alpha:g})"


def fmt_count(value: Any) -> str:
    """A count with thousands separators: ``1,880``."""
    if not is_number(value):
        return "n/a"
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,}"


def fmt_effect(value: Any) -> str:
    """An effect size (Cohen's d), signed with two decimals: ``+0.54``."""
    return f"{value:+.2f}" if is_number(value) else "n/a"


def fmt_interval(bounds: Any, formatter: Callable[[Any], str] = fmt_signed) -> str:
    """``[+0.221, +0.255]``; ``n/a`` when the interval is missing."""
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        return "n/a"
    if not all(is_number(b) for b in bounds):
        return "unbounded" if any(b is not None for b in bounds) else "n/a"
    if formatter is fmt_signed:  # both ends with the decimals of the wider one
        digits = scaled_digits(max(abs(bounds[0]), abs(bounds[1])))
        return f"[{fmt_signed(bounds[0], digits)}, {fmt_signed(bounds[1], digits)}]"
    return f"[{formatter(bounds[0])}, {formatter(bounds[1])}]"


def finite_interval(bounds: Any) -> tuple[float, float] | None:
    """An interval's two bounds as floats, or None unless both are finite numbers."""
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        return None
    if not all(is_number(b) for b in bounds):
        return None
    return float(bounds[0]), float(bounds[1])


def fmt_relative_interval(comp: ComparisonSummary | dict[str, Any]) -> str:
    """The relative lift's CI in percent, ``unbounded`` when it has no finite bounds."""
    comp = as_comparison(comp)
    if not is_number(comp.relative_lift):
        return "n/a"
    if finite_interval(comp.relative_ci) is None:
        return "unbounded"
    return fmt_interval(comp.relative_ci, fmt_percent)


def fmt_percent_level(level: Any) -> str:
    """A confidence level as a percent label: 0.95 -> ``95%``, 0.9875 -> ``98.8%``; the
    decimals grow until the label stays below 100% (0.9996 -> ``99.96%``)."""
    if not is_number(level):
        return "95%"
    percent = 100.0 * float(level)
    if abs(percent - round(percent)) < 1e-9:
        return f"{round(percent)}%"
    digits = 1
    while digits < 6 and round(percent, digits) >= 100:
        digits += 1
    return f"{percent:.{digits}f}%"


def fmt_level(comp: ComparisonSummary | dict[str, Any]) -> str:
    """The level of the interval shown (``ci_level``, widened by a correction, else the
    nominal ``confidence_level``) as a percent label."""
    comp = as_comparison(comp)
    level = comp.ci_level if comp.ci_level is not None else comp.confidence_level
    return fmt_percent_level(level)


def fmt_nominal_level(comp: ComparisonSummary | dict[str, Any]) -> str:
    """The nominal confidence level of a comparison (before any correction): ``95%``."""
    return fmt_percent_level(as_comparison(comp).confidence_level)


def widened(comp: ComparisonSummary | dict[str, Any]) -> bool:
    """Whether a correction widened the interval beyond the nominal confidence level."""
    comp = as_comparison(comp)
    level, nominal = comp.ci_level, comp.confidence_level
    return is_number(level) and is_number(nominal) and abs(level - nominal) > 1e-12


# --------------------------------------------------------------------------- names


def test_name(name: Any) -> str:
    """Display name of a test (``t``, ``permutation``, ``Wilcoxon``, ...)."""
    return TEST_NAMES.get(str(name), str(name))


def correction_name(name: Any) -> str | None:
    """Display name of a multiple-testing correction; None when there is none."""
    if name is None or str(name).lower() == "none":
        return None
    return CORRECTION_NAMES.get(str(name), str(name))


def oneline(text: Any) -> str:
    """User text for a terminal line: control characters (escape sequences) blanked."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f]+", " ", str(text)).strip()


def plain(text: Any) -> str:
    """A user text made safe for matplotlib: ``$`` would otherwise switch on mathtext."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def slug(text: str) -> str:
    """A file-name-safe form of a metric or column name (``ndcg@10`` -> ``ndcg-10``)."""
    return re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-") or "x"


# --------------------------------------------------------------------------- the summary


def experiment_title(summary: Summary | dict[str, Any]) -> str:
    """The readout's title: the experiment's title, else its name."""
    experiment = as_summary(summary).experiment
    if experiment is None:
        return "abrank readout"
    return str(experiment.title or experiment.name or "abrank readout")


def metric_label(summary: Summary | dict[str, Any], metric: str) -> str:
    """The display label of a metric (``mrr@10`` -> ``MRR@10``), else its name."""
    return str((as_summary(summary).metric_labels or {}).get(metric, metric))


def metric_display(summary: Summary | None, metric: str) -> str:
    """A metric's display label: the summary's, else the metric registry's, else its name
    (for rows of the history store, whose summary may be gone)."""
    labels = (summary.metric_labels or {}) if summary is not None else {}
    if metric in labels:
        return str(labels[metric])
    try:
        return parse_metric(metric).label
    except ConfigError:  # a name the registry does not know: shown as it is
        return str(metric)


def unit_name(column: str) -> str:
    """The unit a column counts, in a sentence: ``user_id`` -> ``user``."""
    return column[:-3] if column.endswith("_id") else column


def arm_labels(summary: Summary | dict[str, Any]) -> dict[str, str]:
    """Arm name -> display label, in the summary's arm order."""
    return {str(a.name): str(a.label or a.name) for a in as_summary(summary).arms or ()}


def arm_label(summary: Summary | dict[str, Any], arm: str) -> str:
    """The display label of one arm, else its name."""
    return arm_labels(summary).get(arm, arm)


def several_treatments(comps: Sequence[ComparisonSummary]) -> bool:
    """Whether these comparisons involve more than one treatment."""
    return len({c.treatment for c in comps}) > 1


def comparison_subject(
    summary: Summary | dict[str, Any], comp: ComparisonSummary, several: bool
) -> str:
    """``MRR@10``, or ``MRR@10 · Freshness boost`` when several treatments are shown."""
    subject = metric_label(summary, comp.metric)
    if several:
        subject += f" · {arm_label(summary, comp.treatment)}"
    return subject
