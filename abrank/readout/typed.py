"""The typed summary of a readout, from a Readout, a Summary or a summary dict, and what it holds.

The chart data (:mod:`abrank.readout.charts`) and the renderers read
:class:`abrank.readout.model.Summary` records by attribute. A summary written by ``abrank
run`` converts strictly (``Summary.from_dict``); a summary built by hand (a notebook, a
test) may leave fields out or hold NumPy scalars, so a dict that does not convert strictly
is read leniently: every key it has is kept as it is (lists as tuples, objects of a record
type as records), every key it lacks takes the field's default, else the renderers' default
(``design`` "paired", ``primary_test`` "t"), else None. The readers handle None wherever a
value may be missing.

Below the conversions, the few questions every reader asks of a summary: which arm is the
control, which are the treatments and in what order, which comparisons are overall and
which per segment.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, TypeVar, Union

from abrank.errors import DataError
from abrank.readout.core import Readout
from abrank.readout.model import ComparisonSummary, Summary
from abrank.records import Record, field_hints

_Record = TypeVar("_Record", bound=Record)

#: What a renderer assumes for a field a hand-built summary leaves out.
RENDER_DEFAULTS: dict[str, Any] = {"design": "paired", "primary_test": "t"}


def as_summary(summary: Summary | dict[str, Any]) -> Summary:
    """``summary`` as a :class:`Summary` (converted when it is a dict)."""
    if isinstance(summary, Summary):
        return summary
    try:
        return Summary.from_dict(summary)
    except DataError:
        return lenient_record(Summary, summary)


def as_comparison(comp: ComparisonSummary | dict[str, Any]) -> ComparisonSummary:
    """``comp`` as a :class:`ComparisonSummary` (converted when it is a dict)."""
    if isinstance(comp, ComparisonSummary):
        return comp
    try:
        return ComparisonSummary.from_dict(comp, "comparison")
    except DataError:
        return lenient_record(ComparisonSummary, comp)


def readout_summary(readout: Readout) -> Summary:
    """The typed summary of a readout: its ``model``, or a lenient reading of its dict."""
    try:
        return readout.model
    except DataError:
        return lenient_record(Summary, readout.summary)


def lenient_record(cls: type[_Record], data: Any) -> _Record:
    """The record ``data`` describes, without type checks and with missing keys filled."""
    data = data if isinstance(data, dict) else {}
    hints = field_hints(cls)
    values: dict[str, Any] = {}
    named = set()
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        if field.name == "extra":
            continue
        named.add(field.name)
        if field.name in data:
            values[field.name] = _lenient(data[field.name], hints[field.name])
        elif field.default is not dataclasses.MISSING:
            values[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            values[field.name] = field.default_factory()
        else:
            values[field.name] = RENDER_DEFAULTS.get(field.name)
    if "extra" in {f.name for f in dataclasses.fields(cls)}:  # type: ignore[arg-type]
        values["extra"] = {k: v for k, v in data.items() if k not in named}
    return cls(**values)


def _lenient(value: Any, hint: Any) -> Any:
    """``value`` shaped as ``hint`` names where it can be (records, tuples), else as is."""
    if value is None:
        return None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        for option in args:
            shaped = _lenient(value, option)
            if shaped is not value or option is Any:
                return shaped
        return value
    if isinstance(hint, type) and issubclass(hint, Record):
        return lenient_record(hint, value) if isinstance(value, dict) else value
    if origin is tuple and isinstance(value, (list, tuple)):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_lenient(item, args[0]) for item in value)
        if len(args) == len(value):
            return tuple(_lenient(item, a) for item, a in zip(value, args, strict=True))
        return tuple(value)
    return value


# --------------------------------------------------------------------------- what it holds


def arm_names(summary: Summary | dict[str, Any]) -> list[str]:
    """The arms' names in the summary's order."""
    return [str(a.name) for a in as_summary(summary).arms or ()]


def control_name(summary: Summary | dict[str, Any]) -> str | None:
    """The name of the control arm, or None when the summary has none."""
    for arm in as_summary(summary).arms or ():
        if arm.role == "control":
            return str(arm.name)
    return None


def treatment_names(summary: Summary | dict[str, Any]) -> list[str]:
    """Treatment arm names in the summary's order."""
    summary = as_summary(summary)
    names = [str(a.name) for a in summary.arms or () if a.role == "treatment"]
    if not names:  # fall back on the comparisons' order
        for comp in summary.comparisons:
            if comp.treatment not in names:
                names.append(comp.treatment)
    return names


def overall_comparisons(summary: Summary | dict[str, Any]) -> list[ComparisonSummary]:
    """The comparisons over all queries (not per segment), in the summary's order."""
    return [c for c in as_summary(summary).comparisons if c.segment is None]


def segment_comparisons(summary: Summary | dict[str, Any]) -> list[ComparisonSummary]:
    """The per-segment comparisons, in the summary's order."""
    return [c for c in as_summary(summary).comparisons if c.segment is not None]


def primary_metric(summary: Summary) -> str:
    """The summary's primary metric, else its first metric, else an empty text."""
    return summary.primary_metric or (summary.metrics[0] if summary.metrics else "")
