"""A large TREC run scored in pieces of its queries, two per core, on every core at once.

The memory engine's join (:func:`abrank.engines.memory.prepare_arrays`) and its metric
kernels read each query's own rows and judgments only, and NumPy and Arrow do their work
on whole columns without holding the GIL. A run whose rows come grouped by query (as
runs are written) is therefore, cut at query boundaries, independent pieces that threads
join and score at once: ``abrank metrics`` on 100k queries x 100 documents spends most of
its single-core time there (benchmarks/bench_metrics.py). Two pieces per core rather than
one: a thread's second piece reuses the memory its first piece's temporaries freed (on 10M
run lines, 90,000 fewer page faults and 200 MB less peak memory than halves). Each
query's values are computed from the same rows in the same order either way, so the
pieces' values, put back in query-id order, are the whole run's to the last bit.

A run below :data:`PIECES_FROM` rows, a machine of one core, or a run of which two pieces
share a query (its rows not grouped by query) is scored whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from abrank.cores import usable_cores
from abrank.io.arrow import run_heads
from abrank.io.buffers import arrow_of, bools_of, numpy_of

__all__ = [
    "PIECES_FROM",
    "PIECES_PER_CORE",
    "RunPiece",
    "in_pieces",
    "merged_by_query",
    "query_order",
    "scored_pieces",
]

#: Run rows from which a run is scored in pieces: below, starting the threads and cutting
#: the judgments cost more than the other cores save.
PIECES_FROM = 1_000_000

#: Pieces per core (measured on 10M run lines, two cores: two pieces per core 0.1 s
#: quicker than one, with 200 MB less peak memory; three or four, no quicker).
PIECES_PER_CORE = 2

#: Rows after a cut's place searched for the start of the next query.
_BOUNDARY_WINDOW = 1 << 16

T = TypeVar("T")
J = TypeVar("J")


@dataclass(frozen=True)
class RunPiece:
    """Some queries' rows of a run (``query_ids``, ``doc_ids``, ``key``: ascending is
    better) in file order, and every judgment of those queries (``judged_queries``,
    ``judged_docs``, ``grades``). Judgments of queries the run does not have, which
    ``-c`` scores, are each in some one piece. ``query_starts`` and ``judged_starts``,
    when the cut found them: the rows where each run of equal query ids starts in
    ``query_ids`` and in ``judged_queries``, which the join would otherwise look for."""

    query_ids: pa.ChunkedArray
    doc_ids: pa.ChunkedArray
    key: np.ndarray
    judged_queries: pa.ChunkedArray
    judged_docs: pa.ChunkedArray
    grades: np.ndarray
    query_starts: np.ndarray | None = None
    judged_starts: np.ndarray | None = None

    def to_dict(self) -> dict[str, Any]:
        """How many rows and judgments the piece holds, as JSON-safe builtins."""
        return {"rows": len(self.query_ids), "judgments": len(self.judged_queries)}


def in_pieces(
    piece: RunPiece, *, count: int | None = None, smallest: int | None = None
) -> list[RunPiece]:
    """``piece`` cut into ``count`` pieces of disjoint queries (by default
    :data:`PIECES_PER_CORE` per usable core) at the query boundaries nearest after even
    shares of its rows, or ``[piece]`` when it is not worth cutting (fewer rows than
    ``smallest``, by default :data:`PIECES_FROM`; one core) or cannot be cut (see the
    module text). Fewer pieces come back where a share holds no query boundary."""
    rows = len(piece.query_ids)
    smallest = PIECES_FROM if smallest is None else smallest
    cores = usable_cores()
    if rows < max(smallest, 2) or cores < 2:
        return [piece]
    count = PIECES_PER_CORE * cores if count is None else count
    cuts: list[int] = []
    for share in range(1, count):
        near = max(rows * share // count, cuts[-1] + 1 if cuts else 1)
        cut = _next_query_start(piece.query_ids, near) if near < rows else None
        if cut is not None:
            cuts.append(cut)
    if not cuts:
        return [piece]
    bounds = list(pairwise([0, *cuts, rows]))
    parts = [piece.query_ids.slice(start, stop - start) for start, stop in bounds]
    with ThreadPoolExecutor(min(cores, len(parts)), thread_name_prefix="abrank-cut") as pool:
        judged_heads = pool.submit(run_heads, piece.judged_queries)  # beside the run's
        heads = list(pool.map(run_heads, parts))
        ids = [pc.unique(part_heads) for _, part_heads in heads]
        every = pa.concat_arrays(ids)
        if pc.count_distinct(every).as_py() != len(every):
            return [piece]  # a query in two pieces: the rows are not grouped by query
        judgments = _judgments_by_piece(piece, ids, *judged_heads.result())
    return [
        RunPiece(
            part,
            piece.doc_ids.slice(start, stop - start),
            piece.key[start:stop],
            query_starts=part_starts,
            **judged,
        )
        for part, (start, stop), (part_starts, _), judged in zip(
            parts, bounds, heads, judgments, strict=True
        )
    ]


def _judgments_by_piece(
    piece: RunPiece, ids: list[pa.Array], starts: np.ndarray, heads: pa.Array
) -> list[dict[str, Any]]:
    """The judgments of each piece's queries (``ids[k]``: piece k's distinct query ids;
    ``starts`` and ``heads``: :func:`run_heads` of the judgments), as :class:`RunPiece`'s
    fields: slices when the judgments come in the run's order of queries (as they are
    mostly written; a query the run lacks goes with the queries before it), with the rows
    where their queries' runs start; else copies (those the run lacks go with the last
    piece)."""
    judged = piece.judged_queries
    known = pa.concat_arrays([part.cast(heads.type) for part in ids])
    found = pc.index_in(heads, value_set=known)  # null: a query the run lacks
    at = np.full(len(heads), -1, dtype=np.int64)
    at[bools_of(pc.is_valid(found))] = numpy_of(found.drop_null())
    # the piece of each run of judgments: where its query sits among the pieces' ids
    ends = np.cumsum([len(part) for part in ids])
    owner = np.searchsorted(ends, at, side="right")
    owner[at < 0] = -1
    placed = owner[owner >= 0]
    if np.all(placed[1:] >= placed[:-1]):
        owner = np.maximum.accumulate(np.maximum(owner, 0))  # the run's order of queries
        # piece k's judgments end where the first run of a later piece starts
        cut = np.searchsorted(owner, np.arange(1, len(ids)), side="left")
        edges = [0, *(int(starts[c]) if c < starts.size else len(judged) for c in cut)]
        edges.append(len(judged))
        # each edge is a run's first row (or the end): a slice's runs start where the
        # whole column's do
        first = np.searchsorted(starts, edges)
        return [
            dict(
                judged_queries=judged.slice(start, stop - start),
                judged_docs=piece.judged_docs.slice(start, stop - start),
                grades=piece.grades[start:stop],
                judged_starts=starts[low:high] - start,
            )
            for (start, stop), (low, high) in zip(
                pairwise(edges), pairwise(first.tolist()), strict=True
            )
        ]
    owner[owner < 0] = len(ids) - 1
    row_owner = np.repeat(owner, np.diff(np.append(starts, len(judged))))
    out = []
    for index in range(len(ids)):
        mask = row_owner == index
        keep = arrow_of(mask)
        out.append(
            dict(
                judged_queries=judged.filter(keep),
                judged_docs=piece.judged_docs.filter(keep),
                grades=piece.grades[mask],
            )
        )
    return out


def scored_pieces(
    pieces: list[RunPiece | None],
    join: Callable[[RunPiece], J],
    score: Callable[[J], T],
) -> list[T]:
    """``score(join(piece))`` of every piece, in the pieces' order: on a thread per usable
    core when there are several pieces, each thread taking the next piece as it finishes
    one; the first piece's error is raised first (every piece has finished then).

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
    workers = min(len(pieces), max(usable_cores(), 1))
    with ThreadPoolExecutor(workers, thread_name_prefix="abrank-pieces") as pool:
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
    """The first row at or after ``near`` (>= 1) whose query id differs from the row
    before it, searched within :data:`_BOUNDARY_WINDOW` rows (None: none there)."""
    stop = min(len(ids), near + _BOUNDARY_WINDOW)
    part = ids.slice(near - 1, stop - near + 1).combine_chunks()
    change = bools_of(pc.not_equal(part[1:], part[:-1]))
    found = np.flatnonzero(change)
    return near + int(found[0]) if found.size else None
