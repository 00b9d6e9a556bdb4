"""A large TREC run scored in two halves of its queries, one per core.

The memory engine's join (:func:`abrank.engines.memory.prepare_arrays`) and its metric
kernels read each query's own rows and judgments only, and NumPy and Arrow do their work
on whole columns without holding the GIL. A run whose rows come grouped by query (as
runs are written) is therefore, cut at a query boundary near its middle, two independent
pieces that two threads join and score at once: ``abrank metrics`` on 100k queries x 100
documents spends most of its single-core time there (benchmarks/bench_metrics.py). Each
query's values are computed from the same rows in the same order either way, so the
halves' values, put back in query-id order, are the whole run's to the last bit.

A run below :data:`HALVES_FROM` rows, a machine of one core, or a run whose two halves
share a query (its rows not grouped by query) is scored whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank.cores import usable_cores
from abrank.io.arrow import run_heads
from abrank.io.buffers import arrow_of, bools_of, numpy_of

__all__ = [
    "HALVES_FROM",
    "RunPiece",
    "in_halves",
    "merged_by_query",
    "query_order",
    "scored_pieces",
]

#: Run rows from which a run is scored in halves: below, starting the threads and cutting
#: the judgments cost more than the second core saves.
HALVES_FROM = 1_000_000

#: Rows after the middle searched for the start of the next query.
_BOUNDARY_WINDOW = 1 << 16

T = TypeVar("T")
J = TypeVar("J")


@dataclass(frozen=True)
class RunPiece:
    """Some queries' rows of a run (``query_ids``, ``doc_ids``, ``key``: ascending is
    better) in file order, and every judgment of those queries (``judged_queries``,
    ``judged_docs``, ``grades``). The last piece also holds the judgments of queries the
    run does not have, which ``-c`` scores."""

    query_ids: pa.ChunkedArray
    doc_ids: pa.ChunkedArray
    key: np.ndarray
    judged_queries: pa.ChunkedArray
    judged_docs: pa.ChunkedArray
    grades: np.ndarray

    def to_dict(self) -> dict[str, Any]:
        """How many rows and judgments the piece holds, as JSON-safe builtins."""
        return {"rows": len(self.query_ids), "judgments": len(self.judged_queries)}


def in_halves(piece: RunPiece, *, smallest: int | None = None) -> list[RunPiece]:
    """``piece`` cut into two pieces of disjoint queries at a query boundary near the
    middle of its rows, or ``[piece]`` when it is not worth cutting (fewer rows than
    ``smallest``, by default :data:`HALVES_FROM`; one core) or cannot be cut (see the
    module text)."""
    rows = len(piece.query_ids)
    smallest = HALVES_FROM if smallest is None else smallest
    if rows < max(smallest, 2) or usable_cores() < 2:
        return [piece]
    cut = _next_query_start(piece.query_ids, rows // 2)
    if cut is None:
        return [piece]
    first, second = piece.query_ids.slice(0, cut), piece.query_ids.slice(cut)
    with ThreadPoolExecutor(2, thread_name_prefix="abrank-halves") as pool:
        (_, ids_first), (_, ids_second) = pool.map(run_heads, (first, second))
    if pc.any(pc.is_in(ids_second, value_set=ids_first)).as_py():
        return [piece]  # a query on both sides of the cut: the rows are not grouped
    judgments = _judgments_by_half(piece, ids_first)
    return [
        RunPiece(first, piece.doc_ids.slice(0, cut), piece.key[:cut], *judgments[0]),
        RunPiece(second, piece.doc_ids.slice(cut), piece.key[cut:], *judgments[1]),
    ]


def _judgments_by_half(
    piece: RunPiece, ids_first: pa.Array
) -> list[tuple[pa.ChunkedArray, pa.ChunkedArray, np.ndarray]]:
    """The judgments of the first half's queries (``ids_first``) and the others: slices
    when the judgments come in the run's order of queries (as they are mostly written),
    else copies."""
    judged = piece.judged_queries
    starts, heads = run_heads(judged)
    first = bools_of(pc.is_in(heads, value_set=ids_first.cast(heads.type)))
    leading = first.size if first.all() else int(np.argmin(first))
    if not first[leading:].any():
        ahead = int(starts[leading]) if leading < starts.size else len(judged)
        return [
            (judged.slice(0, ahead), piece.judged_docs.slice(0, ahead), piece.grades[:ahead]),
            (judged.slice(ahead), piece.judged_docs.slice(ahead), piece.grades[ahead:]),
        ]
    mask = np.repeat(first, np.diff(np.append(starts, len(judged))))
    in_first, in_second = arrow_of(mask), arrow_of(~mask)
    return [
        (judged.filter(in_first), piece.judged_docs.filter(in_first), piece.grades[mask]),
        (judged.filter(in_second), piece.judged_docs.filter(in_second), piece.grades[~mask]),
    ]


def scored_pieces(
    pieces: list[RunPiece | None],
    join: Callable[[RunPiece], J],
    score: Callable[[J], T],
) -> list[T]:
    """``score(join(piece))`` of every piece, one thread each when there are several, in
    the pieces' order; the first piece's error is raised first (both have finished then).

    Each piece leaves ``pieces`` as its join starts, and its columns (the run's ids, the
    largest arrays) are let go once joined, so that the scoring reuses their memory: the
    caller keeps no other reference to them."""

    def joined_and_scored(index: int) -> T:
        piece = pieces[index]
        pieces[index] = None
        if piece is None:
            raise ValueError(f"scored_pieces: piece {index} was already taken")
        joined = join(piece)
        del piece
        return score(joined)

    if len(pieces) == 1:
        return [joined_and_scored(0)]
    with ThreadPoolExecutor(len(pieces), thread_name_prefix="abrank-halves") as pool:
        futures = [pool.submit(joined_and_scored, index) for index in range(len(pieces))]
    return [future.result() for future in futures]


def merged_by_query(
    parts: Sequence[tuple[pa.Array, dict[str, np.ndarray]]],
) -> tuple[pa.Array, dict[str, np.ndarray]]:
    """The pieces' (query ids, values by metric) as one, in query-id byte order (the order
    of each piece's ids, and trec_eval's)."""
    if len(parts) == 1:
        return parts[0]
    ids, order = query_order([part[0] for part in parts])
    values = {
        name: np.concatenate([part[1][name] for part in parts])[order] for name in parts[0][1]
    }
    return ids, values


def query_order(ids: Sequence[pa.Array]) -> tuple[pa.Array, np.ndarray]:
    """The pieces' query ids as one array in byte order, and the order that puts values
    laid out piece after piece in that order."""
    joined = pa.concat_arrays([part.cast(pa.large_string()) for part in ids])
    order = numpy_of(pc.sort_indices(joined))
    return joined.take(arrow_of(order)), order


def _next_query_start(ids: pa.ChunkedArray, near: int) -> int | None:
    """The first row at or after ``near`` whose query id differs from the row before
    it, searched within :data:`_BOUNDARY_WINDOW` rows (None: none there)."""
    stop = min(len(ids), near + _BOUNDARY_WINDOW)
    part = ids.slice(near - 1, stop - near + 1).combine_chunks()
    change = bools_of(pc.not_equal(part[1:], part[:-1]))
    found = np.flatnonzero(change)
    return near + int(found[0]) if found.size else None
