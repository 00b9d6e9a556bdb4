"""trec_eval's report of a run joined to its judgments, whole or in pieces of its queries.

:func:`report_columns` makes one joined piece's columns: every measure's values over the
piece's scored queries, and how its ``all`` row is made (a mean, a sum, a geometric mean,
the number of queries, a text). :func:`report_text` puts the pieces' queries back in
trec_eval's order (byte order of the ids) and prints the per-query rows and the ``all``
rows from the whole columns, so that a run scored in pieces of its queries
(:mod:`abrank.engines.pieces`) prints what it prints whole, byte for byte: the means add
the same values in the same order. The layout is trec_eval's (:mod:`abrank.treceval`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

from abrank.io.buffers import arrow_of, texts_of

if TYPE_CHECKING:
    from abrank.engines.prepared import Prepared
    from abrank.treceval import TrecMeasures

__all__ = ["ReportColumn", "ReportColumns", "derived_columns", "report_columns", "report_text"]

#: How an ``all`` row is made from a column's per-query values (None: no ``all`` row).
TOTALS = ("mean", "sum", "geometric", "queries", "text")


@dataclass(frozen=True)
class ReportColumn:
    """One printed measure of a piece: ``values`` per scored query (numbers, or the texts
    of relstring; None for runid and num_q), printed per query under ``-q`` when
    ``shown``, in ``style`` (``number``: ``%6.4f``; ``count``: a whole number; ``quoted``),
    and its ``all`` row made as ``total`` says (:data:`TOTALS`; ``text`` prints ``text``)."""

    name: str
    values: np.ndarray | list[str] | None
    style: str
    total: str | None
    shown: bool = True
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The column's description and values, as JSON-safe builtins."""
        values = self.values
        return {
            "name": self.name,
            "values": None
            if values is None
            else [v if isinstance(v, str) else float(v) for v in values],
            "style": self.style,
            "total": self.total,
            "shown": self.shown,
            "text": self.text,
        }


@dataclass(frozen=True)
class ReportColumns:
    """A joined piece's report: its scored query ids (byte order), its columns in
    trec_eval's printing order, and its judgments graded above 0 (``num_rel``'s ``all``
    row under ``-c`` counts those of every query, as trec_eval does)."""

    ids: pa.Array
    columns: tuple[ReportColumn, ...]
    relevant_judgments: int

    def to_dict(self) -> dict[str, Any]:
        """The piece's queries, columns and count, as JSON-safe builtins."""
        return {
            "ids": [str(i) for i in self.ids.to_pylist()],
            "columns": [column.to_dict() for column in self.columns],
            "relevant_judgments": self.relevant_judgments,
        }


def report_columns(
    prep: Prepared,
    measures: TrecMeasures,
    *,
    rel_level: float = 1,
    complete: bool = False,
    runid: str | None = None,
) -> ReportColumns:
    """The columns of ``measures`` over the scored queries of one joined piece ``prep``
    (with ``complete``, trec_eval's ``-c``, its judged queries that the run lacks too)."""
    from abrank.engines.memory import compute, scored_queries
    from abrank.metrics import Metric
    from abrank.treceval.all_trec import relstrings

    nq = len(prep.ids)
    scored = scored_queries(prep, complete)
    threshold = float(rel_level)
    named = measures.metrics()
    values = compute(prep, [m for _, m in named], threshold, "linear") if named else {}
    # the counts, each computed only when asked for (each is a pass over the judgments)
    counts: dict[str, Callable[[], np.ndarray]] = {
        "num_ret": lambda: prep.retrieved.astype(np.int64),
        "num_rel": lambda: np.bincount(
            prep.judged_code[prep.judged_grade >= threshold], minlength=nq
        ),
        "num_rel_ret": lambda: np.bincount(
            prep.row_code[prep.row_grade >= threshold], minlength=nq
        ),
        "num_nonrel_judged_ret": lambda: np.bincount(
            prep.row_code[(prep.row_grade >= 0) & (prep.row_grade < threshold)], minlength=nq
        ),
    }
    value_of = {printed: values[metric.name] for printed, metric in named}
    columns: list[ReportColumn] = []
    for name, cutoffs in measures.cutoffs.items():
        if name == "runid":
            columns.append(ReportColumn("runid", None, "", "text", False, runid or ""))
        elif name == "num_q":
            columns.append(ReportColumn("num_q", None, "", "queries", False))
        elif name in ("gm_map", "gm_bpref"):  # trec_eval prints them for all only
            family = {"gm_map": "map", "gm_bpref": "bpref"}[name]
            per = compute(prep, [Metric(family, None)], threshold, "linear")[family]
            columns.append(ReportColumn(name, np.nan_to_num(per)[scored], "", "geometric", False))
        elif name == "relstring":  # per query only, quoted (m_relstring.c)
            length = int(measures.numbers(name)[0])  # C's (long) cast of the parameter
            strings = relstrings(prep, length)
            per = [strings[i] if prep.in_run[i] else "" for i in np.flatnonzero(scored)]
            columns.append(ReportColumn(measures.printed(name), per, "quoted", None))
        elif name not in counts and measures.family(name) is None:
            for printed, column in derived_columns(prep, measures, name, threshold).items():
                column = np.where(prep.in_run, column, 0.0)  # trec_eval -c: missing score 0
                columns.append(ReportColumn(printed, column[scored], "number", "mean"))
        elif name in counts:
            columns.append(ReportColumn(name, counts[name]()[scored], "count", "sum"))
        else:
            for printed in [name] if cutoffs is None else [f"{name}_{k}" for k in cutoffs]:
                column = np.nan_to_num(value_of[printed], nan=0.0)
                columns.append(ReportColumn(printed, column[scored], "number", "mean"))
    return ReportColumns(
        prep.ids.filter(arrow_of(scored)),
        tuple(columns),
        int(np.count_nonzero(prep.judged_grade > 0)),
    )


def report_text(
    parts: Sequence[ReportColumns],
    *,
    per_query: bool = False,
    complete: bool = False,
    digits: int = 4,
) -> str:
    """What trec_eval prints for the pieces' columns together: per query (``-q``) every
    shown measure of a query, then the next query in byte order; then the ``all`` rows."""
    from abrank.treceval.default_set import geometric_mean
    from abrank.treceval.lines import join_lines

    ids, columns = _merged(parts)
    number = f"{{:6.{digits}f}}"
    text = ""
    if per_query:
        shown = [c for c in columns if c.shown and c.values is not None]
        if shown:
            text = join_lines(
                ids,
                [f"{c.name:<22}" for c in shown],
                [_texts(cast("np.ndarray | list[str]", c.values), c.style, digits) for c in shown],
            )
    rows = []
    for column in columns:
        values = column.values
        if column.total is None:  # relstring: per-query rows only
            continue
        if column.total == "text":
            total = column.text
        elif column.total == "queries":
            total = str(len(ids))
        elif column.total == "geometric":
            total = number.format(geometric_mean(np.asarray(values, dtype=np.float64)))
        elif column.total == "sum":
            if column.name == "num_rel" and complete:
                total = str(sum(part.relevant_judgments for part in parts))
            else:
                total = str(int(np.asarray(values).sum()))
        else:  # trec_eval adds the queries' values one by one in query order, then divides
            shown_values = np.asarray(values, dtype=np.float64)
            mean = (
                float(np.cumsum(shown_values)[-1]) / shown_values.size if shown_values.size else 0.0
            )
            total = number.format(mean)
        rows.append(f"{column.name:<22}\tall\t{total}\n")
    return text + "".join(rows)


def _merged(parts: Sequence[ReportColumns]) -> tuple[pa.Array, list[ReportColumn]]:
    """The pieces' query ids in byte order and their columns' values in that order."""
    from abrank.engines.pieces import query_order

    if len(parts) == 1:
        return parts[0].ids, list(parts[0].columns)
    ids, order = query_order([part.ids for part in parts])
    merged = []
    for index, first in enumerate(parts[0].columns):
        pieces = [part.columns[index].values for part in parts]
        values: np.ndarray | list[str] | None = None
        if first.values is not None:
            if isinstance(first.values, list):
                joined = [v for piece in pieces for v in piece]  # type: ignore[union-attr]
                values = [joined[i] for i in order]
            else:
                values = np.concatenate(cast("list[np.ndarray]", pieces))[order]
        merged.append(
            ReportColumn(first.name, values, first.style, first.total, first.shown, first.text)
        )
    return ids, merged


def _texts(values: np.ndarray | list[str], style: str, digits: int) -> pa.Array:
    """One column of per-query rows as text: a measure's values (``%6.4f``), counts, or
    relstrings (quoted)."""
    from abrank.treceval.lines import fixed_texts

    if style == "count":
        return arrow_of(np.asarray(values, dtype=np.int64)).cast(pa.string())
    if style == "quoted":
        return texts_of([f"'{text}'" for text in values])
    return fixed_texts(np.asarray(values, dtype=np.float64), digits, 6)


def derived_columns(
    prep: Prepared, measures: TrecMeasures, name: str, threshold: float
) -> dict[str, np.ndarray]:
    """The per-query columns (by query code) of a measure that no abrank metric family
    computes as trec_eval does, keyed by the names trec_eval prints."""
    from abrank.treceval import all_trec
    from abrank.treceval.default_set import interpolated_precision, r_precision

    nq = len(prep.ids)
    cutoffs = measures.cutoffs.get(name) or ()
    printed = measures.printed(name)
    if name == "iprec_at_recall":
        at = interpolated_precision(prep, threshold, measures.fractions(name))
        return {f"{name}_{level:3.2f}": v for level, v in at.items()}
    if name == "11pt_avg":
        given = measures.numbers(name)
        at = interpolated_precision(prep, threshold, tuple(dict.fromkeys(given)))
        return {printed: all_trec.eleven_point_average_at(at, given)}
    if name == "Rprec":
        return {name: r_precision(prep, threshold)}
    if name == "Rprec_mult":
        fractions = all_trec.rprec_mult(prep, threshold, measures.fractions(name))
        return {f"{name}_{f:3.2f}": v for f, v in fractions.items()}
    if name == "relative_P":
        found = all_trec.relative_precision(prep, threshold, cutoffs)
        return {f"{name}_{k}": v for k, v in found.items()}
    if name == "unj":
        return {f"{name}_{k}": v for k, v in all_trec.unjudged_at(prep, cutoffs).items()}
    if name == "infAP":
        return {name: all_trec.inferred_ap(prep, threshold)}
    if name == "utility":
        return {printed: all_trec.utility(prep, threshold, measures.numbers(name))}
    if name == "binG":
        return {name: all_trec.binary_gain(prep, threshold)}
    if name in ("set_P", "set_recall"):
        hits = np.bincount(prep.row_code[prep.row_grade >= threshold], minlength=nq)
        if name == "set_P":
            base = prep.retrieved.astype(np.float64)
        else:
            relevant = prep.judged_code[prep.judged_grade >= threshold]
            base = np.bincount(relevant, minlength=nq).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return {name: np.where(base > 0, hits / base, 0.0)}
    if name in ("set_relative_P", "set_map", "set_F"):
        beta = measures.numbers("set_F")[0] if name == "set_F" else 1.0
        return {printed: all_trec.set_measures(prep, threshold, beta)[name]}
    levels, others = measures.pairs(name)
    if name == "ndcg":
        return {printed: all_trec.ndcg_gains(prep, levels)}
    if name == "G":
        return {printed: all_trec.gain_ratio(prep, levels)}
    if name == "ndcg_rel":
        return {printed: all_trec.ndcg_rel(prep, levels)}
    if name == "Rndcg":
        return {printed: all_trec.rndcg(prep, threshold, levels)}
    p = others.get("p", all_trec.RBP_PERSISTENCE)
    if name == "rbp":
        return {printed: all_trec.rbp(prep, levels, p)}
    if name == "rbp_resid":
        return {printed: all_trec.rbp_residual(prep, p)}
    raise NotImplementedError(f"trec_eval measure {name!r} has no computation here")
