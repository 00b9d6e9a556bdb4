"""trec_eval's output: ``abrank metrics`` printed as trec_eval prints, from TREC files or tables."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from abrank._lazy import import_pandas_in_background
from abrank.engines.prepared import Prepared
from abrank.errors import ConfigError, DataError
from abrank.io.buffers import arrow_of
from abrank.io.files import is_gzip, open_bytes
from abrank.io.trec import (
    RUN_FIELDS,
    qrels_columns,
    read_trec_qrels,
    read_trec_run,
    run_arrays,
)
from abrank.metrics import Metric
from abrank.treceval.lines import arrow_ids, fixed_texts, join_lines, repr_texts

if TYPE_CHECKING:
    import pandas as pd

    from abrank.engines.pieces import RunPiece
    from abrank.treceval import TrecMeasures


def trec_eval_text(
    qrels_path: str | Path,
    run_path: str | Path,
    metrics: Sequence[str | Metric],
    *,
    per_query: bool = False,
    complete: bool = False,
    rel_level: float = 1,
    depth: int | None = 1000,
    digits: int | None = None,
    judged_only: bool = False,
) -> str:
    """What ``abrank metrics`` prints: trec_eval's ``-q`` layout with canonical metric names.

    Rows are ``measure<TAB>query<TAB>value``: one per query and metric when ``per_query``
    (queries in byte order, as trec_eval prints them), then one ``all`` row per metric with
    the mean. As in trec_eval, a judged query without any relevant document scores 0 (the
    metrics engine leaves such values undefined) and counts in the mean; queries in the run
    but not in the qrels are ignored; with ``complete`` (trec_eval ``-c``) judged queries
    missing from the run score 0 too. Values are printed at full double precision
    (``repr``) unless ``digits`` is given (``digits=4`` prints like trec_eval's ``%.4f``).
    ``depth`` is trec_eval's ``-M``; trec_eval 9 itself sets no limit by default, so for
    runs deeper than 1,000 documents per query pass ``depth=None`` to match it.
    ``judged_only`` makes every metric but judged@k judged-only (``ndcg@10(judged)``).
    """
    from abrank.engines.memory import check_options, compute, scored_queries
    from abrank.engines.pieces import merged_by_query, scored_pieces
    from abrank.metrics import as_judged_only, parse_metrics

    if digits is not None and (
        not isinstance(digits, int) or isinstance(digits, bool) or digits < 0
    ):
        raise ConfigError(f"digits: expected a whole number >= 0, got {digits!r}")
    parsed = parse_metrics(metrics)
    if judged_only:
        parsed = as_judged_only(parsed)
    check_options(rel_level, "linear", depth)
    pieces, joined = _file_pieces(qrels_path, run_path, depth)

    def scored_values(prep: Prepared) -> tuple[pa.Array, dict[str, np.ndarray]]:
        scored = scored_queries(prep, complete)
        if not scored.any():
            return prep.ids.slice(0, 0), {m.name: np.zeros(0) for m in parsed}
        results = compute(prep, parsed, float(rel_level), "linear")
        # trec_eval scores an undefined value (no relevant judgment) as 0
        columns = {m.name: np.nan_to_num(results[m.name][scored], nan=0.0) for m in parsed}
        return prep.ids.filter(arrow_of(scored)), columns

    qids, columns = merged_by_query(scored_pieces(pieces, joined, scored_values))
    if not len(qids):
        raise _none_in_common(run_path, qrels_path)
    return format_trec_eval(qids, columns, per_query=per_query, digits=digits)


def _file_pieces(
    qrels_path: str | Path, run_path: str | Path, depth: int | None
) -> tuple[list[RunPiece | None], Callable[[RunPiece], Prepared]]:
    """The files' columns as the pieces :func:`abrank.engines.pieces.scored_pieces` joins
    and scores (a large run's pieces of queries, on every core at once; subtopic
    judgments whole), and the join of a piece. The list holds the only reference to
    the pieces, so that each piece's columns go once it is joined."""
    from abrank.engines.pieces import in_pieces

    piece, subtopics = _file_columns(qrels_path, run_path)
    pieces: list[RunPiece | None] = [piece] if subtopics is not None else [*in_pieces(piece)]

    def joined(part: RunPiece) -> Prepared:
        return _joined(qrels_path, run_path, part, subtopics, depth)

    return pieces, joined


def _file_columns(
    qrels_path: str | Path, run_path: str | Path
) -> tuple[RunPiece, pa.ChunkedArray | None]:
    """The columns the join reads, from the files: the run's query and doc ids and its
    scores negated (ascending is better), the qrels' query and doc ids and grades; and
    their subtopics (None unless the qrels judge subtopics)."""
    from abrank.engines.pieces import RunPiece

    jq, jd, grade, subtopics = qrels_columns(qrels_path, check=False)
    if subtopics is not None:  # checked (a repeated triple would count twice), then joined
        import_pandas_in_background()  # the subtopics' grouping reads them with pandas
        jq, jd, grade, subtopics = qrels_columns(qrels_path)
    rq, rd, score, _ = run_arrays(run_path)
    key = np.negative(score, out=score) if score.flags.writeable else -score  # best first
    return RunPiece(rq, rd, key, jq, jd, grade), subtopics


def _joined(
    qrels_path: str | Path,
    run_path: str | Path,
    piece: RunPiece,
    subtopics: pa.ChunkedArray | None,
    depth: int | None,
) -> Prepared:
    """The run's rows of ``piece`` joined to its judgments, refused as trec_eval refuses
    them: a document twice among a query's first ``depth`` rows, or a pair judged twice.
    The join finds such pairs anyway; the readers' own searches, which name the lines in
    the files, run only when there is one to report."""
    from abrank.engines.memory import prepare_arrays, prepare_subtopics

    rq, rd, key = piece.query_ids, piece.doc_ids, piece.key
    jq, jd, grade = piece.judged_queries, piece.judged_docs, piece.grades
    try:
        if subtopics is not None:
            return prepare_subtopics(rq, rd, key, jq, jd, grade, subtopics, depth, None)
        return prepare_arrays(
            rq,
            rd,
            key,
            None,
            jq,
            jd,
            grade,
            depth,
            None,
            query_starts=(piece.query_starts, piece.judged_starts),
        )
    except DataError as exc:
        if str(exc).startswith("rankings: (query_id, doc_id)"):
            read_trec_run(run_path)
        if str(exc).startswith("judgments: (query_id, doc_id)"):
            read_trec_qrels(qrels_path)
        raise


def trec_eval_report(
    qrels_path: str | Path,
    run_path: str | Path,
    measures: TrecMeasures,
    *,
    per_query: bool = False,
    complete: bool = False,
    rel_level: float = 1,
    depth: int | None = None,
    digits: int = 4,
    judged_only: bool = False,
) -> str:
    """What trec_eval prints for these measures, options and files, byte for byte.

    ``measures`` come from :func:`abrank.treceval.parse_trec_measures`; the options are
    trec_eval's ``-q`` (``per_query``), ``-c`` (``complete``), ``-l``, ``-M`` (whose
    default, as in trec_eval, is no limit) and ``-J`` (``judged_only``: unjudged documents,
    and as in trec_eval those judged with a negative grade, leave each ranking before any
    measure reads it). See :mod:`abrank.treceval` for the layout.
    """
    from abrank.engines.memory import check_options
    from abrank.engines.pieces import scored_pieces
    from abrank.treceval.report import ReportColumns, report_columns, report_text

    check_options(rel_level, "linear", depth)
    pieces, joined = _file_pieces(qrels_path, run_path, depth)
    runid = run_tag(run_path) if "runid" in measures.cutoffs else None

    def measured(part: Prepared) -> tuple[bool, ReportColumns]:
        prep, common = _as_measured(part, judged_only)  # a piece may have none in common
        columns = report_columns(
            prep, measures, rel_level=rel_level, complete=complete, runid=runid
        )
        return common, columns

    parts = scored_pieces(pieces, joined, measured)
    if not any(common for common, _ in parts):
        raise _none_in_common(run_path, qrels_path)
    return report_text(
        [columns for _, columns in parts], per_query=per_query, complete=complete, digits=digits
    )


def _scorable(prep: Prepared, judged_only: bool, run: str | Path, qrels: str | Path) -> Prepared:
    """:func:`_as_measured`'s joined run and judgments, refused when no query of the run
    is judged."""
    prep, common = _as_measured(prep, judged_only)
    if not common:
        raise _none_in_common(run, qrels)
    return prep


def _as_measured(prep: Prepared, judged_only: bool) -> tuple[Prepared, bool]:
    """The joined run and judgments as the measures read them: without unjudged documents
    under ``-J`` (and, as in trec_eval, those judged with a negative grade); and whether
    any query is both in the run and judged."""
    from abrank.engines.condensed import condense

    if judged_only:
        prep = condense(prep, keep_negative=False)
    return prep, bool((prep.in_run & prep.in_judgments).any())


def _none_in_common(run: str | Path, qrels: str | Path) -> DataError:
    """The error of a run none of whose queries is judged."""
    return DataError(f"{run}: query ids: expected queries that are also in {qrels}, got none")


def trec_eval_report_of_tables(
    rankings: pd.DataFrame,
    judgments: pd.DataFrame,
    measures: TrecMeasures,
    *,
    run: str | Path,
    qrels: str | Path,
    default_set: bool = False,
    per_query: bool = False,
    complete: bool = False,
    rel_level: float = 1,
    depth: int | None = None,
    digits: int = 4,
    judged_only: bool = False,
) -> str:
    """What trec_eval prints for these measures on rankings and judgments read from tables
    (canonical frames: :func:`abrank.read_rankings`, :func:`abrank.read_judgments`), as
    :func:`trec_eval_report` prints it for TREC files.

    ``run`` and ``qrels`` name the files the frames were read from, in messages. A table
    has no run tag, so ``runid`` is refused; ``default_set`` says that the measures are
    trec_eval's default set because none was named (its message then says how to name
    them).
    """
    from abrank.engines.memory import check_options, prepare
    from abrank.treceval import format_report

    if "runid" in measures.cutoffs:
        if default_set:  # no -m: trec_eval's default set, which opens with runid
            raise ConfigError(
                f"{run}: without -m, abrank metrics prints trec_eval's default set, "
                "whose runid needs a TREC run file (its sixth column names the run); got a "
                "table: name the measures with -m (trec_eval's: -m map -m recip_rank -m "
                "P.5,10; or abrank's: -m ndcg@10 mrr@10 map)"
            )
        raise ConfigError(
            f"-m runid: expected a TREC run file (its sixth column names the run), "
            f"got {run}, a table"
        )
    check_options(rel_level, "linear", depth)
    prep = _scorable(prepare(rankings, judgments, depth), judged_only, run, qrels)
    return format_report(
        prep,
        measures,
        rel_level=rel_level,
        complete=complete,
        per_query=per_query,
        digits=digits,
    )


def run_tag(path: str | Path) -> str:
    """The run's name as trec_eval prints it (``runid``): the tag, the sixth field, of the
    file's last non-blank line."""
    window = 1 << 16
    compressed = is_gzip(path)
    with open_bytes(path) as handle:
        if compressed:  # no seeking back in a stream: keep its last bytes
            data = b""
            while chunk := handle.read(1 << 20):
                data = (data + chunk)[-(1 << 20) :]
            lines = data.splitlines()
        else:
            size = handle.seek(0, 2)
            while True:
                handle.seek(max(size - window, 0))
                lines = handle.read().splitlines()
                if window >= size or any(
                    line.strip() and not line.startswith(b"#") for line in lines[1:]
                ):
                    break
                window *= 4
    # the last line that is neither blank nor a comment (trec_eval 10: '#' first)
    last = next(
        (line for line in reversed(lines) if line.strip() and not line.startswith(b"#")), b""
    )
    fields = last.split()
    if len(fields) < len(RUN_FIELDS):
        raise DataError(
            f"{path}: last line: expected {len(RUN_FIELDS)} whitespace-separated fields "
            f"({' '.join(RUN_FIELDS)}), got {len(fields)}"
        )
    return fields[5].decode("utf-8", "replace")


def format_trec_eval(
    qids: Sequence[str] | pa.Array,
    columns: dict[str, np.ndarray],
    *,
    per_query: bool = False,
    digits: int | None = None,
) -> str:
    """trec_eval's ``-q`` layout for per-query values (one array per metric, in ``qids`` order).

    Per-query rows group all measures of one query, then the next query; one ``all`` row
    per metric follows with the mean. Undefined values must already be scored (trec_eval
    prints 0 for them). ``qids`` may be an Arrow array (no Python string per query).
    """

    def text(value: float) -> str:
        return repr(value) if digits is None else f"{value:.{digits}f}"

    out = ""
    if per_query and columns:
        texts = [
            repr_texts(column) if digits is None else fixed_texts(column, digits)
            for column in columns.values()
        ]
        out = join_lines(arrow_ids(qids), list(columns), texts)
    means = (text(float(np.mean(np.asarray(c, dtype=np.float64)))) for c in columns.values())
    rows = "".join(f"{name}\tall\t{mean}\n" for name, mean in zip(columns, means, strict=True))
    return out + rows if out or rows else "\n"
