"""Judged-only ("condensed") rankings: each ranking with its unjudged documents removed.

A reranker brings up documents that the judging pool never saw; judged metrics count them
as not relevant. Scoring the condensed lists instead (Sakai, SIGIR 2007; trec_eval ``-J``)
removes them before any metric reads the ranking, so that the judged documents below an
unjudged one move up. The engine's prepared join already holds only the judged rows, in
rank order, so condensing is renumbering their positions and recounting what was retrieved:
two whole-column operations, no loop over queries.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from abrank.engines.prepared import Prepared
from abrank.io.arrow import positions

__all__ = ["condense"]


def condense(prep: Prepared, *, keep_negative: bool = True) -> Prepared:
    """The prepared join of the condensed rankings: judged rows only, positions closed up.

    Every judged row keeps its order; its position becomes its position among the judged
    rows of its query, and a query's retrieved count becomes its number of judged rows
    (what trec_eval ``-J`` reports as ``num_ret``). The depth limit applies before, as in
    trec_eval. A judgment with a negative grade is a judgment (abrank's judged@k counts it);
    with ``keep_negative=False`` such rows are removed too, as trec_eval, which reads a
    negative grade as "in the pool but not judged", removes them.
    """
    code, grade, judgment = prep.row_code, prep.row_grade, prep.row_judgment
    if not keep_negative:
        kept = grade >= 0
        code, grade = code[kept], grade[kept]
        judgment = None if judgment is None else judgment[kept]
    nq = len(prep.ids)
    retrieved = np.bincount(code, minlength=nq).astype(prep.retrieved.dtype, copy=False)
    return dataclasses.replace(
        prep,
        row_code=code,
        row_pos=positions(code).astype(prep.row_pos.dtype, copy=False),
        row_grade=grade,
        row_judgment=judgment,
        retrieved=retrieved,
    )
