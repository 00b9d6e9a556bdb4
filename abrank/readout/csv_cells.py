"""Text cells of a CSV made safe to open in a spreadsheet, and read back exactly.

A spreadsheet runs a cell whose text starts with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return before one) as a formula: a query id ``=HYPERLINK("http://x", "q1")`` in
per_query.csv would become a live link. OWASP's advice on CSV injection is to prefix such
cells with a single quote, which spreadsheets show as text and hide. Only text columns are
escaped: numbers (a negative delta) stay numbers.

A text that already starts with quotes followed by one of those characters gets one more
quote too, so :func:`unescape_text` undoes :func:`escape_text` for every text.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["FORMULA_START", "escape_text", "escape_text_columns", "unescape_text_columns"]

#: The leading characters that make a spreadsheet read a cell as a formula (OWASP).
FORMULA_START = "=+-@\t\r"
_START = "[" + re.escape(FORMULA_START) + "]"
_ESCAPED = "^'*" + _START  # what escape_text prefixes
_UNESCAPE = "^'+" + _START  # what it produced


def escape_text(value: str) -> str:
    """``'=SUM(A1)`` for ``=SUM(A1)``; any other text as it is."""
    stripped = value.lstrip("'")
    return f"'{value}" if stripped[:1] and stripped[0] in FORMULA_START else value


def _text_columns(frame: pd.DataFrame) -> list[str]:
    return [
        c
        for c in frame.columns
        if pd.api.types.is_object_dtype(frame[c]) or pd.api.types.is_string_dtype(frame[c])
    ]


def escape_text_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are escaped (numeric columns untouched)."""
    out = frame.copy()
    for column in _text_columns(frame):
        values = out[column]
        text = values.where(values.isna(), values.astype(str))
        risky = text.str.contains(_ESCAPED, regex=True, na=False)
        if risky.any():
            out[column] = text.mask(risky, "'" + text.fillna(""))
    return out


def unescape_text_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the quote that :func:`escape_text_columns` added removed again."""
    out = frame.copy()
    for column in _text_columns(frame):
        text = out[column]
        risky = text.str.contains(_UNESCAPE, regex=True, na=False)
        if risky.any():
            out[column] = text.mask(risky, text.str.slice(1))
    return out
