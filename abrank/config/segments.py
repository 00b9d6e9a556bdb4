"""The ``segments`` section: breakdowns of every comparison by the values of some columns.

The segment columns are columns of the logs, or of a per-query attributes table joined on
the query id; a segment smaller than ``min_queries`` is listed as too small, not tested.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from abrank.config.keys import INPUT_FORMATS, Columns, DecimalMark, Separator, Strict
from abrank.config.paths import resolved
from abrank.config.problems import Checks


class AttributesConfig(Strict):
    """A per-query table of segment columns (locale, device, ...), joined on query_id."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


class SegmentsConfig(Strict):
    """Breakdowns: every comparison is repeated per value of each segment column."""

    columns: list[str] = []
    min_queries: int = Field(default=30, ge=2)
    attributes: AttributesConfig | None = None


def resolved_segments(checks: Checks, segments: SegmentsConfig) -> SegmentsConfig:
    """The segments with their attributes table's absolute path (its problems go to
    ``checks``)."""
    if segments.attributes is None:
        return segments
    path = resolved(checks, ("segments", "attributes", "path"), segments.attributes.path)
    attributes = segments.attributes.model_copy(update={"path": path})
    return segments.model_copy(update={"attributes": attributes})
