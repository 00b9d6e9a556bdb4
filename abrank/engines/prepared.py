"""The prepared join of the in-memory engine: rankings joined to judgments, as flat arrays.

The memory engine builds it once per arm (:func:`abrank.engines.memory.prepare`); every
judged metric, the judged-only rankings (:mod:`abrank.engines.condensed`) and trec_eval's
measures (:mod:`abrank.treceval`) read it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

__all__ = ["Prepared"]


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
