"""Which format a data file is in (declared, by extension, or sniffed from its first line),
and the checks of the options that only some formats take (``sep``, ``decimal``).

Every reader of :mod:`abrank.io` (rankings, judgments, attributes, impression logs) starts
here, so that one file is read the same way whichever reader opens it.
"""

from __future__ import annotations

from pathlib import Path

from abrank.errors import ConfigError, DataError
from abrank.io.files import check_file, head_bytes
from abrank.io.formats import BY_NAME, BY_SUFFIX

__all__ = ["check_table_options", "detect_format"]


def detect_format(path: str | Path, declared: str | None = None, *, judgments: bool = False) -> str:
    """The file's format: as declared, else from its extension (``.gz`` looked through)."""
    fmt: str | None
    if declared:
        fmt = declared
    else:
        suffixes = [s.lower() for s in Path(path).suffixes]
        if suffixes and suffixes[-1] == ".gz":
            suffixes = suffixes[:-1]
        fmt = BY_SUFFIX.get(suffixes[-1]) if suffixes else None
        if fmt is None:
            fmt = _sniff_format(Path(path))
        if fmt is None:
            known = ", ".join(sorted(BY_SUFFIX))
            raise DataError(
                f"{path}: expected a known extension ({known}, optionally .gz) or a `format` "
                f"in the config, got {''.join(Path(path).suffixes) or 'no extension'}"
            )
    if judgments and fmt == "trec":
        fmt = "qrels"
    if not judgments and fmt == "qrels":
        raise DataError(f"{path}: expected a ranking log, got a qrels file (format qrels)")
    return fmt


def _sniff_format(path: Path) -> str | None:
    """Guess the format of a file with an unfamiliar extension from its first line."""
    if not path.is_file():
        return None
    check_file(path)
    try:
        first = next(
            (
                line
                for line in head_bytes(path).decode("utf-8", "replace").splitlines()
                if line.strip()
            ),
            "",
        )
    except DataError:
        return None
    if first.lstrip().startswith("{"):
        return "jsonl"
    if "\t" in first and len(first.split("\t")) not in (4, 6):
        return "tsv"
    if "," in first:
        return "csv"
    fields = len(first.split())
    # trec_eval ignores whatever follows a run line's sixth field
    return "qrels" if fields == 4 else "trec" if fields >= 6 else None


def check_table_options(path: str | Path, fmt: str, sep: str | None, decimal: str | None) -> None:
    """``sep`` and ``decimal`` apply to CSV and TSV files only, and must differ."""
    for key, value in (("sep", sep), ("decimal", decimal)):
        if value is not None and BY_NAME[fmt].delimiter is None:
            raise ConfigError(
                f"{path}: {key}: expected a CSV or TSV file for this key, got format {fmt}"
            )
    if sep is not None and (len(sep) != 1 or sep in '"\r\n'):
        raise ConfigError(f"{path}: sep: expected a single character such as ';', got {sep!r}")
    if decimal is not None and decimal not in (".", ","):
        raise ConfigError(f"{path}: decimal: expected '.' or ',', got {decimal!r}")
    delimiter = sep or BY_NAME[fmt].delimiter
    if decimal is not None and decimal == delimiter:
        hint = "" if sep else "; set sep to the file's field separator (e.g. ';')"
        raise ConfigError(
            f"{path}: decimal: expected a decimal mark other than the field separator, got "
            f"{decimal!r} for both{hint}"
        )
