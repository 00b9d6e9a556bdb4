"""The prepared join of the in-memory engine: rankings joined to judgments, as flat arrays.

The memory engine builds it once per arm (:func:`abrank.engines.memory.prepare`); every
judged metric, the judged-only rankings (:mod:`abrank.engines.condensed`) and trec_eval's
measures (:mod:`abrank.treceval`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["Prepared", "SubtopicJudgments"]


@dataclass(frozen=True)
class SubtopicJudgments:
    """The relevant subtopic judgments (grade > 0) behind the prepared join's one judgment
    per (query, doc), for the diversity metrics (:mod:`abrank.engines.diversity`).

    An *entry* is one (document, subtopic) pair that is relevant. Entries are grouped by
    judgment (``judgment``: the index of their (query, doc) judgment in
    :attr:`Prepared.judged_code`), and within a judgment ordered by subtopic label in order
    of first appearance in the judgments (ndeval's subtopic numbering, whose order its sums
    follow). ``subtopic`` numbers the (query, subtopic) pairs densely from 0 to
    ``count - 1``; ``candidates`` lists the judgments with at least one entry, by query code
    and then doc id *descending* (bytewise): the order in which ndeval's greedy ideal
    ordering prefers documents of equal gain.
    """

    judgment: np.ndarray
    subtopic: np.ndarray
    count: int
    candidates: np.ndarray


@dataclass
class Prepared:
    """Rankings joined to judgments, as flat arrays over the kept (depth-limited) rows."""

    ids: pa.Array  # sorted distinct query ids; code i is ids[i]
    # the judged rows among the kept ones, in per-query rank order (queries contiguous)
    row_code: np.ndarray
    row_pos: np.ndarray  # 0-based position within the query
    row_grade: np.ndarray
    judged_code: np.ndarray  # per judgment
    judged_grade: np.ndarray
    in_run: np.ndarray  # per query code: the ranking holds it
    in_judgments: np.ndarray  # per query code: it has at least one judgment
    retrieved: np.ndarray  # per query code: kept rows
    # with subtopic judgments only (None otherwise, at no cost to the ordinary path): per
    # judged row, the index of its judgment in judged_code; and the subtopic entries
    row_judgment: np.ndarray | None = None
    subtopics: SubtopicJudgments | None = None
