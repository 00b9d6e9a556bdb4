"""The building blocks of a config's keys: strict models, names, file formats, columns.

Every section of a config is a :class:`Strict` model: an unknown key is refused (and named,
with the keys it could have been), and a validated section cannot be changed. The input
files of every design say how they are read with the same keys (``format``, ``sep``,
``decimal``, ``columns``), defined here once.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from abrank.io import formats as input_formats

#: Input file formats a config may name (`format:` of a data file).
INPUT_FORMATS = input_formats.NAMES

SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

#: A name that is also a file name: an experiment's or an arm's.
Slug = Annotated[str, Field(pattern=SLUG.pattern, max_length=100)]


class Strict(BaseModel):
    """A section of a config: unknown keys refused, frozen once validated."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def one_character(value: str) -> str:
    """A CSV field separator: one character, neither a quote nor a line break (``\\t``
    written in single quotes, two characters, is taken for the tab it means)."""
    if value == "\\t":
        return "\t"
    if len(value) != 1 or value in '"\r\n':
        raise ValueError("a single character such as ';' or '\\t' (not a quote or a line break)")
    return value


#: ``sep`` of a CSV/TSV file: the field separator (default ``,`` for csv, a tab for tsv).
Separator = Annotated[str, AfterValidator(one_character)]
#: ``decimal`` of a CSV/TSV file: the decimal mark of its numbers (default ``.``).
DecimalMark = Literal[".", ","]


class Columns(Strict):
    """Which of the user's columns hold each canonical column (canonical name: user name)."""

    query_id: str | None = None
    doc_id: str | None = None
    rank: str | None = None
    score: str | None = None
    relevance: str | None = None
    # subtopic judgments (abrank.io.subtopics): the subtopic each judgment grades
    subtopic: str | None = None
    # online logs (DESIGN.md "Online logs"): one row per shown result
    impression_id: str | None = None
    user_id: str | None = None
    clicked: str | None = None
    dwell: str | None = None
    timestamp: str | None = None
    query: str | None = None
    arm: str | None = None
    # interleaved logs (DESIGN.md "Interleaving"): the arm that contributed each result
    team: str | None = None

    def mapping(self) -> dict[str, str]:
        """Canonical column -> the user's column, for the names that were given."""
        return {canon: user for canon, user in self.model_dump().items() if user}
