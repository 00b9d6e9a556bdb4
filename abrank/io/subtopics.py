"""Subtopic judgments: what tells them from ordinary ones, and their one grade per document.

Diversity judgments (the TREC Web track's, which ndeval reads) grade each document once per
*subtopic* (an intent) of the query, in the second column of a qrels file that ordinary
qrels fill with a constant (``0`` or ``Q0``). A qrels file whose second column holds more
than one distinct value (``Q0`` read as ``0``: DL-HARD's qrels mix the two) is read as
subtopic judgments, and a table may carry a ``subtopic`` column: the canonical judgments
frame then has a ``subtopic`` column (str), and (query, subtopic, doc) is unique instead of
(query, doc).

Only the diversity metrics (``alpha_ndcg@k``, ``err_ia@k``) read the subtopics. Every other
metric, and everything else that reads judgments (the explanation tables, machine labels),
sees one grade per (query, doc): the highest over its subtopics (:func:`collapse_arrays`,
:func:`collapse_frame`). Ordinary judgments pass through untouched, at no cost.
"""

from __future__ import annotations

from typing import overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank._lazy import pandas as pd

__all__ = [
    "PLACEHOLDERS",
    "SUBTOPIC",
    "collapse_arrays",
    "collapse_frame",
    "is_subtopic_column",
    "subtopic_codes",
]

#: The canonical column of subtopic judgments.
SUBTOPIC = "subtopic"
#: Second-column values that mean "no subtopic" together: ``Q0`` counts as ``0``.
PLACEHOLDERS = frozenset({"0", "Q0"})


def is_subtopic_column(column: pa.ChunkedArray | pa.Array) -> bool:
    """Whether a qrels file's second column holds subtopics: more than one distinct value,
    ``0`` and ``Q0`` counting as one (the usual placeholders)."""
    if not len(column) or pc.all(pc.equal(column, column[0])).as_py():
        return False  # one value throughout (the usual 0): a comparison, not a hash per row
    distinct = set(pc.unique(column.cast(pa.string())).to_pylist())
    if distinct <= PLACEHOLDERS:
        return False
    return len(distinct) > 1


def collapse_arrays(
    qid: pa.ChunkedArray, doc: pa.ChunkedArray, grade: np.ndarray
) -> tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray]:
    """One judgment per (query, doc) of subtopic judgments: the highest grade over the
    document's subtopics, pairs in the order of their first judgment."""
    table = pa.table({"q": qid, "d": doc, "g": pa.array(grade, pa.float64())})
    grouped = table.group_by(["q", "d"], use_threads=False).aggregate([("g", "max")])
    return (
        grouped["q"],
        grouped["d"],
        grouped["g_max"].to_numpy().astype(np.float64, copy=False),
    )


@overload
def collapse_frame(judgments: pd.DataFrame) -> pd.DataFrame: ...
@overload
def collapse_frame(judgments: None) -> None: ...
def collapse_frame(judgments: pd.DataFrame | None) -> pd.DataFrame | None:
    """The judgments frame with one row per (query, doc) (the highest grade over its
    subtopics) when it has a ``subtopic`` column; the frame itself otherwise."""
    if judgments is None or SUBTOPIC not in judgments.columns:
        return judgments
    grouped = judgments.groupby(["query_id", "doc_id"], sort=False)["relevance"].max()
    return grouped.reset_index()


def subtopic_codes(labels: pd.Series | pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Each subtopic label's code in the order of first appearance over the whole file
    (pyndeval numbers subtopics so, and sums a document's gains in that order)."""
    if isinstance(labels, pd.Series):
        codes, _ = pd.factorize(labels.astype(str), sort=False)
        return np.asarray(codes, dtype=np.int64)
    text = labels.cast(pa.string())
    if isinstance(text, pa.ChunkedArray):
        text = text.combine_chunks()
    encoded = pc.dictionary_encode(text)
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
