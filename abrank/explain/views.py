"""How a readout's explanations look in a notebook: the tables of ``readout.query`` and
``readout.explain`` are DataFrames that also know what they explain, and show it.

:class:`QueryLists` shows the arms' lists side by side (rank, document, grade, each
document's part in the change), :class:`ChangeSplit` the change with its parts. Both are
plain DataFrames for everything else: any operation on them returns a ``pd.DataFrame``.
Every value shown is escaped (query and document ids are user data).
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd


class _Explained(pd.DataFrame):
    """A DataFrame with a caption (what it explains) kept in ``attrs``."""

    @property
    def _constructor(self) -> type[pd.DataFrame]:
        return pd.DataFrame

    @property
    def caption(self) -> str:
        """What the table explains, in one line."""
        return str(self.attrs.get("caption", ""))


class QueryLists(_Explained):
    """``readout.query``'s table (one row per document any arm shows: ``doc_id``,
    ``grade``, ``rank_<arm>`` per arm, ``contribution``), shown as the lists side by side."""

    def _repr_html_(self) -> str:
        arms = [c.removeprefix("rank_") for c in self.columns if str(c).startswith("rank_")]
        parts = [
            f"<p><strong>{html.escape(self.caption)}</strong></p>",
            '<div style="display:flex;gap:24px">',
        ]
        frame = pd.DataFrame(self)
        last = frame[f"rank_{arms[-1]}"].notna() if arms else frame["doc_id"].isna()
        for arm in arms:
            # each document's part once: in the last arm's list, else where it is shown
            owns = last if arm == arms[-1] else ~last
            frame = frame.assign(contribution=self["contribution"].where(owns))
            shown = frame[frame[f"rank_{arm}"].notna()].sort_values(f"rank_{arm}")
            rows = "".join(
                "<tr>"
                f"<td>{int(rank)}</td><td>{html.escape(str(doc))}</td>"
                f"<td>{_grade(grade)}</td><td>{_part(part)}</td>"
                "</tr>"
                for rank, doc, grade, part in zip(
                    shown[f"rank_{arm}"],
                    shown["doc_id"],
                    shown["grade"],
                    shown["contribution"],
                    strict=True,
                )
            )
            parts.append(
                f"<table><caption>{html.escape(arm)}</caption><thead><tr><th>rank</th>"
                f"<th>document</th><th>grade</th><th>part</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
        parts.append("</div>")
        return "".join(parts)


class ChangeSplit(_Explained):
    """``readout.explain``'s table (one row per move: ``change``, ``documents``,
    ``queries``), shown under the line that sums it up."""

    def _repr_html_(self) -> str:
        table = pd.DataFrame(self).to_html(float_format=lambda v: f"{v:+.4f}", escape=True)
        return f"<p><strong>{html.escape(self.caption)}</strong></p>{table}"


def query_view(table: pd.DataFrame, caption: str) -> QueryLists:
    """``table`` as a :class:`QueryLists` with ``caption``."""
    view = QueryLists(table)
    view.attrs["caption"] = caption
    return view


def change_view(table: pd.DataFrame, caption: str) -> ChangeSplit:
    """``table`` as a :class:`ChangeSplit` with ``caption``."""
    view = ChangeSplit(table)
    view.attrs["caption"] = caption
    return view


def _grade(value: Any) -> str:
    return "<em>unjudged</em>" if pd.isna(value) else html.escape(f"{value:g}")


def _part(value: Any) -> str:
    return "" if pd.isna(value) or value == 0 else f"{value:+.3f}"
