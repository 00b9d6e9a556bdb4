"""The input file formats abrank reads: one table of names, extensions and traits.

Everything that lists, detects or checks a format reads it from :data:`FORMATS`: the
config's ``format:`` values, detection by extension, the CSV-only options (``sep``,
``decimal``) and the messages that name the formats. A table format's parser is the
function of the same name in :mod:`abrank.io.tables`; adding a format is one entry here
and, for a table, one reader there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FileFormat:
    """One input format.

    ``kind`` is ``"table"`` (columns with a header or keys), ``"run"`` (a TREC run) or
    ``"qrels"`` (TREC judgments). ``delimiter`` is set for delimited text, whose field
    separator and decimal mark a config may change (``sep``, ``decimal``).
    """

    name: str
    suffixes: tuple[str, ...]
    kind: str
    description: str
    delimiter: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "name": self.name,
            "suffixes": list(self.suffixes),
            "kind": self.kind,
            "description": self.description,
            "delimiter": self.delimiter,
        }


FORMATS: tuple[FileFormat, ...] = (
    FileFormat("trec", (".run", ".trec", ".txt", ".res"), "run", "TREC run (6 fields a line)"),
    FileFormat("qrels", (".qrels",), "qrels", "TREC qrels (4 fields a line)"),
    FileFormat("csv", (".csv",), "table", "comma-separated values", delimiter=","),
    FileFormat("tsv", (".tsv", ".tab"), "table", "tab-separated values", delimiter="\t"),
    FileFormat("parquet", (".parquet", ".pq"), "table", "Apache Parquet"),
    FileFormat("jsonl", (".jsonl", ".ndjson"), "table", "JSON Lines (one object a line)"),
)

#: Every format name, in the table's order (the config's ``format:`` values).
NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS)
#: The table formats (what a segments or attributes file may be).
TABLE_NAMES: tuple[str, ...] = tuple(f.name for f in FORMATS if f.kind == "table")
BY_NAME: dict[str, FileFormat] = {f.name: f for f in FORMATS}
#: Extension (lower case, with its dot) -> format name.
BY_SUFFIX: dict[str, str] = {suffix: f.name for f in FORMATS for suffix in f.suffixes}
