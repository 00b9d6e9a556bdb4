"""The offline path (rankings per arm + judgments, judged metrics) on an SQL engine.

:func:`offline_inputs` gives what :func:`abrank.run_experiment` needs of an offline
experiment whichever engine runs it: the inputs (:class:`~abrank.analysis.load.LoadedData`)
and the function that scores them (:class:`~abrank.analysis.score.ScoredArms`). On the
memory engine those are :func:`~abrank.analysis.load.load_data` and
:func:`~abrank.analysis.score.score_arms`; on an SQL engine the rankings are opened in the
engine (:mod:`abrank.engines.sql.rankings`) and never loaded whole: ``LoadedData`` then
holds empty rankings frames (the readout reads only their arm names), the per-query segment
values (one row per query) and the fingerprints of the files read, and the scoring runs
:mod:`abrank.engines.sql.judged`, whose per-query values make the same ``ScoredArms`` as
the memory engine's. The comparisons, the judged-only repeat and the readout then run
unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, cast

import numpy as np
import pandas as pd

from abrank.analysis.engine import EngineChoice, fingerprints_meanwhile
from abrank.analysis.load import LoadedData, Progress, attribute_segments, load_data, shown_files
from abrank.analysis.score import (
    JUDGED_K,
    ScoredArms,
    analysed_queries,
    arms_scored,
    curve_metrics,
    residual_metrics,
    score_arms,
    union,
)
from abrank.analysis.unjudged import judged_only_names
from abrank.config import Experiment
from abrank.engines.sql import compile_sql, open_backend
from abrank.errors import ConfigError, DataError
from abrank.inputs import Inputs, arm_key, display_path, resolve_inputs

__all__ = [
    "InputCounts",
    "Scorer",
    "SqlOffline",
    "check_offline_inputs",
    "explanation_source",
    "judgments_source",
    "offline_inputs",
]

#: Scores an experiment's loaded inputs (``score_arms`` or :meth:`SqlOffline.score`).
Scorer = Callable[[Experiment, LoadedData], ScoredArms]


@contextlib.contextmanager
def offline_inputs(
    experiment: Experiment,
    choice: EngineChoice,
    say: Progress,
    *,
    inputs: Inputs | None = None,
    explain: bool = True,
) -> Iterator[tuple[LoadedData, Scorer]]:
    """The loaded inputs (the run's ``inputs``, resolved from ``experiment`` when not
    given) and their scorer on the chosen engine; an SQL engine's connection stays open
    while the caller scores (and repeats the scoring on judged documents only), and is
    closed after. ``explain``: the explanation tables will read the numbered rows."""
    if choice.name == "memory":
        yield load_data(experiment, say, inputs=inputs), score_arms
        return
    # the scoring numbers each arm's rows in rank order: repeated pairs and ranks are
    # found there
    offline = SqlOffline(experiment, choice, say, inputs=inputs, checks_later=True, explain=explain)
    try:
        yield offline.load(), offline.score
    finally:
        offline.close()


def explanation_source(score: Scorer) -> SqlOffline | None:
    """The SQL engine's opened inputs behind a scorer that :func:`offline_inputs` gave
    (None for the memory engine's): what selects the explanation tables' lists in the
    engine while its connection is open."""
    owner = getattr(score, "__self__", None)
    return owner if isinstance(owner, SqlOffline) else None


@dataclasses.dataclass(frozen=True)
class InputCounts:
    """What an offline experiment's inputs hold, as ``abrank validate`` reports it: the
    distinct queries of each arm's log and of the judgments."""

    queries: dict[str, int]  # arm -> distinct query ids in its log
    judged: int  # distinct query ids in the judgments

    def to_dict(self) -> dict[str, Any]:
        """The counts as JSON-safe builtins."""
        return {"queries": dict(self.queries), "judged": self.judged}


def judgments_source(given: Any, config: Any) -> Any:
    """The engine's source of a judgments file: ``given`` its resolved input (file,
    format), ``config`` its config entry (columns, separators)."""
    from abrank.engines.sql.rankings import TableSource

    path = given.file
    return TableSource(
        files=(path,),
        format=given.format,
        label=str(path),
        columns=config.columns.mapping(),
        sep=config.sep,
        decimal=config.decimal,
    )


def check_offline_inputs(
    experiment: Experiment, choice: EngineChoice, say: Progress, *, inputs: Inputs | None = None
) -> InputCounts:
    """Open and check every input of an offline experiment on the chosen engine, as
    :func:`abrank.run_experiment` opens them, short of scoring: the same loader (memory) or
    the same statements that open the files in the engine (DuckDB, Spark), and the same
    check that some logged query is judged. What ``abrank validate`` runs (``inputs``:
    the run's, resolved from ``experiment`` when not given)."""
    if choice.name == "memory":
        queries = analysed_queries(experiment, load_data(experiment, say, inputs=inputs))
        logged = {name: int(index.size) for name, index in queries.logged.items()}
        return InputCounts(logged, int(queries.judged.size))
    offline = SqlOffline(experiment, choice, say, inputs=inputs)
    try:
        offline.load()
        return offline.query_counts()
    finally:
        offline.close()


class SqlOffline:
    """One offline experiment's inputs opened in an SQL engine."""

    def __init__(
        self,
        experiment: Experiment,
        choice: EngineChoice,
        say: Progress,
        *,
        inputs: Inputs | None = None,
        checks_later: bool = False,
        explain: bool = True,
    ):
        """``checks_later``: a ranking's repeated pairs and a rank column's repeated ranks
        are found in :meth:`score`'s numbered rows
        (:func:`abrank.engines.sql.rankings.open_rankings` with ``later``), not by a pass
        of their own when the rankings are opened (``abrank validate``, which does not
        score, finds them there). ``explain``: the explanation tables will read the
        numbered rows (:meth:`explanation_inputs`); without them an engine that can
        keeps the judged rows only (``keeps_every_numbered_row``)."""
        self.inputs = inputs if inputs is not None else resolve_inputs(experiment)
        self.checks_later = checks_later
        self.explain = explain
        self.experiment = experiment
        self.choice = choice
        self.say = say
        self.backend = open_backend(choice.name, choice.options, choice.connection)
        self.rankings: dict[str, Any] = {}
        self.judgments: Any = None
        #: the machine labels (``judgments`` source of kind machine) and the name of the
        #: machine-filled judgments kept in the engine; None without machine labels
        self.machine: Any = None
        self.filled: str | None = None
        self.engine = choice.name
        # (arm, options, labels) -> ArmScores of the last scoring
        self.cache: dict[tuple, Any] = {}
        self.numbered: dict[str, str] = {}  # arm -> relation of its numbered rows, kept
        self.results: dict[str, Any] = {}  # counting statement -> its result
        self.unjudged: dict[tuple[str, str], int] = {}  # (arm, judgments) -> unjudged queries
        #: arms whose checks left to the numbering were made (by the first label set's)
        self.checked: set[str] = set()

    def close(self) -> None:
        """Close the engine's connection (or drop what was registered on the caller's)."""
        self.backend.close()

    def load(self) -> LoadedData:
        """Open and check every input; the data the readout reads."""
        from abrank.engines.sql.rankings import TableSource, open_judgments, open_rankings

        experiment = self.experiment
        if experiment.human_judgments is None:
            raise ConfigError(
                f"{experiment.source}: judgments: expected a judgments file for engine "
                f"{self.engine}, got none (engine memory reads the labels of the logs' relevance "
                "column)"
            )
        from abrank.config.judgments import source_key

        key, config = source_key(experiment.judgments, "human") or ("", experiment.human_judgments)
        assert config is not None
        files_read: list[tuple[Any, str, Any]] = []  # (input, file, opened)
        judged = self.inputs[key]
        machine = source_key(experiment.judgments, "machine")
        labelled = (
            [] if machine is None else [(self.inputs[machine[0]], self.inputs[machine[0]].file)]
        )
        every = [
            (self.inputs[arm_key(i)], f)
            for i in range(len(experiment.arms))
            for f in self.inputs[arm_key(i)].files
        ]
        # the fingerprints read the files while the engine reads them too
        with fingerprints_meanwhile([*every, (judged, judged.file), *labelled]):
            for index, arm in enumerate(experiment.arms):
                arm_files = self.inputs[arm_key(index)]
                files = arm_files.files
                self.say(f"opening {arm.name} on {self.engine} ({shown_files(files)})")
                source = TableSource(
                    files=tuple(files),
                    format=arm_files.format,
                    label=str(files[0]) if len(files) == 1 else arm_files.template,
                    columns=arm.columns.mapping(),
                    sep=arm.sep,
                    decimal=arm.decimal,
                    duplicates=arm.duplicates or experiment.duplicates,
                    kept=tuple(experiment.segments.columns),  # what _segments reads
                )
                opened = open_rankings(
                    self.backend, f"abrank_rankings_{index}", source, later=self.checks_later
                )
                self.rankings[arm.name] = opened
                files_read += [(arm_files, f, opened) for f in files]
            path = judged.file
            self.say(f"opening judgments on {self.engine} ({display_path(path)})")
            source = judgments_source(judged, config)
            self.judgments = open_judgments(self.backend, "abrank_judgments", source)
            files_read.append((judged, path, self.judgments))
            if machine is not None:
                files_read.append(self._open_machine(*machine))
        read = [log.entry(f, opened.file_rows.get(f, 0)) for log, f, opened in files_read]
        segments = self._segments(read)
        names = [arm.name for arm in experiment.arms]
        empty = pd.DataFrame(columns=["query_id", "doc_id", "rank"])
        rankings = {name: empty for name in names}
        if self.machine is None:
            return LoadedData(rankings, pd.DataFrame(), segments, read)
        # the agreement of the two kinds of label reads both judgments and each arm's top
        # rows (machine_labels.label_agreement), as the memory engine has them
        human = self._judgment_frame(self.judgments.sql)
        labels = self._judgment_frame(self.machine.sql)
        shown = {name: self._top_rows(name, JUDGED_K) for name in names}
        return LoadedData(rankings, human, segments, read, labels, shown=shown)

    def _open_machine(self, key: str, config: Any) -> tuple[Any, str, Any]:
        """Open the machine labels as the human ones are opened, and keep the
        machine-filled judgments (every human judgment, and the machine's of the (query,
        document) pairs no human judged) in the engine; (input, file, opened)."""
        from abrank.engines.sql.rankings import open_judgments

        given = self.inputs[key]
        path = given.file
        self.say(f"opening machine judgments on {self.engine} ({display_path(path)})")
        source = judgments_source(given, config)
        self.machine = open_judgments(self.backend, "abrank_machine_judgments", source)
        cells = (
            "CAST({t}.query_id AS VARCHAR) AS query_id, CAST({t}.doc_id AS VARCHAR) AS doc_id, "
            "CAST({t}.relevance AS DOUBLE) AS relevance"
        )
        human, machine = self.judgments.sql, self.machine.sql
        sql = (
            f"SELECT {cells.format(t='h')} FROM {human} AS h UNION ALL "
            f"SELECT {cells.format(t='m')} FROM {machine} AS m LEFT JOIN {human} AS seen "
            "ON CAST(m.query_id AS VARCHAR) = CAST(seen.query_id AS VARCHAR) "
            "AND CAST(m.doc_id AS VARCHAR) = CAST(seen.doc_id AS VARCHAR) "
            "WHERE seen.query_id IS NULL"
        )
        self.filled = "abrank_filled_judgments"
        self.backend.materialize(self.filled, compile_sql(sql, self.backend.dialect), by="query_id")
        return given, path, self.machine

    def _judgment_frame(self, relation: str) -> pd.DataFrame:
        """A judgments relation's rows as the memory engine reads them: ``query_id``,
        ``doc_id`` (text) and ``relevance`` (float)."""
        sql = (
            "SELECT CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id, "
            f"CAST(relevance AS DOUBLE) AS relevance FROM {relation} AS j"
        )
        table = self.backend.run(compile_sql(sql, self.backend.dialect)).to_pandas()
        return pd.DataFrame(
            {
                "query_id": table["query_id"].astype(str),
                "doc_id": table["doc_id"].astype(str),
                "relevance": table["relevance"].to_numpy(dtype=np.float64),
            }
        )

    def _top_rows(self, arm: str, k: int) -> pd.DataFrame:
        """An arm's rows of rank at most ``k`` (``query_id``, ``doc_id``, ``rank``), ranked
        as the memory engine ranks them: a rank column as given, scores in trec_eval's
        order (score descending, then doc id descending)."""
        from abrank.engines.sql.judged_plan import ranking_order

        opened = self.rankings[arm]
        ids = "CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id"
        if opened.ranked_by == "rank":
            sql = (
                f"SELECT {ids}, CAST(rank AS BIGINT) AS rank FROM {opened.sql} AS r "
                f"WHERE CAST(rank AS DOUBLE) <= {int(k)}"
            )
        else:
            value, key = ranking_order(opened.ranked_by)
            numbered = (
                "SELECT r.query_id AS query_id, r.doc_id AS doc_id, ROW_NUMBER() OVER "
                f"(PARTITION BY r.query_id ORDER BY {key}, r.doc_id DESC) AS rank "
                f"FROM (SELECT {ids}, {value} FROM {opened.sql} AS given) AS r"
            )
            sql = f"SELECT query_id, doc_id, rank FROM ({numbered}) AS n WHERE rank <= {int(k)}"
        table = self.backend.run(compile_sql(sql, self.backend.dialect)).to_pandas()
        return pd.DataFrame(
            {
                "query_id": table["query_id"].astype(str),
                "doc_id": table["doc_id"].astype(str),
                "rank": table["rank"].to_numpy(dtype=np.int64),
            }
        )

    def relation(self, labels: str) -> tuple[str, str | None]:
        """The judgments relation of a label set (human, filled or machine:
        :attr:`LoadedData.labels`) and its subtopic judgments' relation (None: none; the
        machine-filled judgments keep one grade per document, as the memory engine's)."""
        if labels == "human":
            return self.judgments.sql, self.judgments.subtopics
        if self.machine is None or self.filled is None:
            raise ValueError(f"labels {labels!r}: the experiment has no machine labels")
        if labels == "machine":
            return self.machine.sql, self.machine.subtopics
        if labels == "filled":
            return self.filled, None
        raise ValueError(f"labels: expected human, filled or machine, got {labels!r}")

    def _explained(self) -> str:
        """The judgments relation the explanation tables read: the machine-filled ones
        with machine labels (as the rest of the readout), else the human ones."""
        return self.relation("human" if self.machine is None else "filled")[0]

    def _segments(self, read: list[dict[str, Any]]) -> pd.DataFrame:
        """One row per query with its segment values, from an attributes file (read as a
        table: one row per query) or from the logs' columns (the first arm that has the
        column, first row of the query), as the memory path takes them."""
        from abrank.engines.sql import compile_sql, quote

        experiment = self.experiment
        columns = list(experiment.segments.columns)
        if not columns:
            return pd.DataFrame(index=pd.Index([], name="query_id", dtype=str))
        table = attribute_segments(experiment, self.inputs, read)
        if table is not None:
            return table
        parts = []
        arms = list(experiment.arms)
        for column in columns:
            having = [
                (i, arm) for i, arm in enumerate(arms) if column in self.rankings[arm.name].extra
            ]
            if not having:
                opened = self.rankings[arms[0].name]
                found = ", ".join(["query_id", "doc_id", opened.ranked_by, *opened.extra])
                raise DataError(
                    f"{display_path(self.inputs[arm_key(0)].template)}: segments.columns: expected a column {column!r}, "
                    f"found columns: {found}"
                )
            union_sql = " UNION ALL ".join(
                f"SELECT query_id, CAST({quote(column)} AS VARCHAR) AS value, {i} AS arm_index "
                f"FROM {self.rankings[arm.name].sql} AS r{i}"
                for i, arm in having
            )
            sql = (
                "SELECT query_id, value FROM (SELECT query_id, value, ROW_NUMBER() OVER "
                "(PARTITION BY query_id ORDER BY arm_index) AS choice "
                f"FROM ({union_sql}) AS values_found) AS chosen WHERE choice = 1"
            )
            table = self.backend.run(compile_sql(sql, self.backend.dialect)).to_pandas()
            values = pd.Series(
                table["value"].to_numpy(dtype=object),
                index=pd.Index(table["query_id"].astype(str), name="query_id"),
                name=column,
            )
            parts.append(values.where(values.notna(), "(none)").astype(str))
        return pd.concat(parts, axis=1)

    def query_counts(self) -> InputCounts:
        """The distinct queries of each arm's log and of the judgments, counted in the
        engine; a DataError when no logged query is judged, as :meth:`score` raises it
        (what ``abrank validate`` checks, without scoring)."""
        counts: dict[str, int] = {}
        judged_anywhere = False
        for arm in self.experiment.arms:
            opened = self.rankings[arm.name]
            sql = f"SELECT COUNT(DISTINCT query_id) AS n FROM {opened.sql} AS r"
            counts[arm.name] = int(self._run_once(sql)["n"][0].as_py())
            judged_anywhere |= counts[arm.name] > self._unjudged_queries(arm.name)
        threshold = self.experiment.relevance_threshold
        judged_ids = pd.Index(self._judged_table(threshold)["query_id"].astype(str))
        if not judged_anywhere:
            raise self._none_in_common(judged_ids)
        return InputCounts(counts, int(judged_ids.size))

    def _judged_table(self, threshold: float, judgments: str | None = None) -> pd.DataFrame:
        """One row per judged query of ``judgments`` (the human ones by default):
        ``query_id`` and ``relevant`` (1 when a grade reaches ``threshold``)."""
        threshold = float(threshold)
        judgments = self.judgments.sql if judgments is None else judgments
        sql = (
            "SELECT query_id, CASE WHEN MAX(relevance) >= "
            f"CAST({threshold!r} AS DOUBLE) THEN 1 ELSE 0 END AS relevant FROM "
            f"{judgments} AS j GROUP BY query_id"
        )
        return self._run_once(sql).to_pandas()

    def _unjudged_queries(
        self, arm: str, judgments: str | None = None, numbered: str | None = None
    ) -> int:
        """How many distinct queries of an arm's log have no judgment in ``judgments``
        (the human ones by default), counted once per arm and judgments: on the arm's
        numbered rows ``numbered`` where given (every ranked row, which Spark holds by
        query already: no row moves), else on the log."""
        judgments = self.judgments.sql if judgments is None else judgments
        if (arm, judgments) not in self.unjudged:
            rows = numbered if numbered is not None else self.rankings[arm].sql
            sql = (
                f"SELECT COUNT(*) AS n FROM (SELECT DISTINCT query_id FROM {rows} AS r) AS q "
                f"WHERE query_id NOT IN (SELECT DISTINCT query_id FROM {judgments} AS j)"
            )
            found = self.backend.run(compile_sql(sql, self.backend.dialect))
            self.unjudged[arm, judgments] = int(found["n"][0].as_py())
        return self.unjudged[arm, judgments]

    def _none_in_common(self, judged_ids: pd.Index) -> DataError:
        """The error of rankings that share no query with the judgments, with an example
        of each (the smallest ids)."""
        control = self.rankings[self.experiment.control.name].sql
        first = self._run_once(f"SELECT MIN(query_id) AS q FROM {control} AS r")["q"][0].as_py()
        judged = judged_ids.min() if judged_ids.size else ""
        return DataError(
            "the rankings and judgments: expected queries in common, got none "
            f"(e.g. ranking query {first or ''!r}, judged query {judged!r})"
        )

    def _run_once(self, sql: str) -> Any:
        """The result of a counting statement, run once per text (the inputs do not change
        while they are open)."""
        if sql not in self.results:
            self.results[sql] = self.backend.run(compile_sql(sql, self.backend.dialect))
        return self.results[sql]

    def score(self, experiment: Experiment, data: LoadedData) -> ScoredArms:
        """:func:`~abrank.analysis.score.score_arms` on the engine: per-query values of
        every arm over the analysed queries (judged queries that any arm holds), under the
        label set of ``data`` (:attr:`LoadedData.labels`: human, machine-filled or machine
        judgments, each a relation in the engine)."""
        from abrank.engines.sql.judged import score_arm_sql
        from abrank.engines.sql.rankings import check_numbered
        from abrank.metrics import parse_metric

        backend = self.backend
        metrics = [parse_metric(name) for name in experiment.metrics]
        requested = {m.name for m in metrics}
        curve = curve_metrics(metrics)
        extra = [m for m in [*curve, *residual_metrics(metrics)] if m.name not in requested]
        # the judged-only twins come in the same statement (a few more aggregates), so that
        # the judged-only repeat, when judged@k calls for it, runs no second scan
        twins = [parse_metric(name) for name in judged_only_names(experiment.metrics).values()]
        extra += [m for m in [*twins, *curve_metrics(twins)] if m.name not in requested]
        options = (experiment.relevance_threshold, experiment.gain, experiment.depth)
        labels = data.labels
        judgments, subtopics = self.relation(labels)
        # the explanation tables read the numbered rows of the readout's labels; the
        # others' are dropped once checked, and need only the judged rows where the
        # engine counts the rest as cheaply on the opened rows
        explained = self.explain and judgments == self._explained()
        every_row = explained or getattr(backend, "keeps_every_numbered_row", True)
        judged_table = self._judged_table(experiment.relevance_threshold, judgments)
        judged_ids = pd.Index(judged_table["query_id"].astype(str))
        arms: dict[str, Any] = {}
        present: dict[str, pd.Index] = {}
        unjudged: dict[str, int] = {}
        for index, arm in enumerate(experiment.arms):
            opened = self.rankings[arm.name]
            cached = self.cache.get((arm.name, options, labels))
            wanted = [*metrics, *curve, *residual_metrics(metrics)]
            if cached is not None and all(m.name in cached.values for m in wanted):
                scores = cached
            else:
                kept = f"abrank_numbered_{index}" + ("" if explained else f"_{labels}")
                scores = score_arm_sql(
                    backend,
                    opened.sql,
                    judgments,
                    [*metrics, *extra],
                    ranked_by=opened.ranked_by,
                    rel_level=experiment.relevance_threshold,
                    gain=experiment.gain,
                    depth=experiment.depth,
                    complete=True,
                    judged_k=JUDGED_K,
                    subtopics=subtopics,
                    # numbered once: the explanation tables' top rows are read from there
                    keep=kept,
                    every_row=every_row,
                )
                if arm.name not in self.checked:  # the rankings are the same under any labels
                    check_numbered(backend, opened, kept, every_row=every_row)
                    self.checked.add(arm.name)
                self._unjudged_queries(arm.name, judgments, kept if every_row else None)
                if explained:
                    self.numbered[arm.name] = kept
                else:
                    self.backend.drop(kept)
                self.cache[(arm.name, options, labels)] = scores
            arms[arm.name] = scores
            present[arm.name] = scores.first_relevant.index
            unjudged[arm.name] = self._unjudged_queries(arm.name, judgments)
        universe = union(present.values())
        if universe.empty:
            raise self._none_in_common(judged_ids)
        universe = universe.sort_values().rename("query_id")
        relevant = judged_table.set_index(judged_ids)["relevant"].reindex(universe)
        without_relevant = universe[relevant.to_numpy() == 0]
        return arms_scored(
            experiment, arms, present, universe, without_relevant, unjudged, int(judged_ids.size)
        )

    def explanation_inputs(
        self, experiment: Experiment, depth: int
    ) -> tuple[dict[str, pd.DataFrame], dict[str, pd.Series]]:
        """What the explanation tables (:func:`abrank.explain.tables.offline_explanation`)
        read, selected in the engine so that only the top of the lists comes back: each
        arm's top ``depth`` rows of every judged query (``query_id``, ``doc_id``, ``rank``
        and the row's ``grade``, NaN: unjudged), numbered in trec_eval's order as
        :func:`abrank.explain.lists.ranked_lists` numbers them (score descending, or rank
        ascending, then doc id descending in byte order); and per query the normalisers
        of the metrics that have one (NDCG's ideal DCG@k, recall's number of relevant
        judgments), counted over every judgment in the engine."""
        import pyarrow as pa

        from abrank.engines.sql.judged import top_rows_sql
        from abrank.engines.sql.judged_plan import judgments_sql, ranking_order
        from abrank.io.arrow import sorted_by_query

        judgments = self._explained()
        judged = judgments_sql(f"{judgments} AS given_judgments")
        # each query's rows together, in rank order, as the memory engine's lists come (the
        # tables are then made from runs of rows, 2-4x as fast): sorted by the engine, or
        # after they came back where the engine's sort of every row costs more
        ordered = getattr(self.backend, "sorts_fetched_rows", True)
        rankings = {}
        for arm in experiment.arms:
            opened = self.rankings[arm.name]
            value, key = ranking_order(opened.ranked_by)
            kept = self.numbered.get(arm.name)
            rows = (
                "SELECT CAST(query_id AS VARCHAR) AS query_id, CAST(doc_id AS VARCHAR) AS doc_id, "
                f"{value} FROM {opened.sql} AS given"
            )
            numbered = (
                "SELECT r.query_id AS query_id, r.doc_id AS doc_id, ROW_NUMBER() OVER "
                f"(PARTITION BY r.query_id ORDER BY {key}, r.doc_id DESC) AS rank "
                f"FROM ({rows}) AS r WHERE r.query_id IN (SELECT DISTINCT query_id FROM judged)"
            )
            sql = (
                f"WITH judged AS ({judged}) SELECT t.query_id AS query_id, t.doc_id AS doc_id, "
                "t.rank AS rank, j.grade AS grade FROM "
                f"(SELECT * FROM ({numbered}) AS n WHERE rank <= {int(depth)}) AS t "
                "LEFT JOIN judged AS j ON t.query_id = j.query_id AND t.doc_id = j.doc_id"
                + (" ORDER BY t.query_id, t.rank" if ordered else "")
            )
            if kept is not None:  # the scoring's numbered rows: no second numbering
                sql = top_rows_sql(kept, judgments, depth, ordered=ordered)
            table = self.backend.run(compile_sql(sql, self.backend.dialect))
            if not ordered:  # ids in byte order, as the engines order text
                table = sorted_by_query(table)
            if kept is not None:  # read for the last time: its memory goes back to the engine
                self.backend.drop(kept)
                del self.numbered[arm.name]
            table = pa.table(
                {
                    "query_id": table["query_id"].cast(pa.large_string()),
                    "doc_id": table["doc_id"].cast(pa.large_string()),
                    "rank": table["rank"].cast(pa.int64()),
                    "grade": table["grade"].cast(pa.float64()),
                }
            )
            rankings[arm.name] = table.to_pandas()
        return rankings, self._normalisers(experiment, judged)

    def _normalisers(self, experiment: Experiment, judged: str) -> dict[str, pd.Series]:
        """Per metric that has one, per judged query, what its change is divided by
        (:func:`abrank.explain.contributions.normaliser`), counted in the engine."""
        from abrank.engines.sql.judged import ideal_dcg_sql
        from abrank.engines.sql.judged_plan import sql_number
        from abrank.metrics import parse_metric

        out = {}
        for name in experiment.metrics:
            spec = parse_metric(name)
            if spec.family == "ndcg" and spec.k is not None:
                ideal = ideal_dcg_sql(spec.gain or experiment.gain, [spec.k], "idcg_")
                select = f"SELECT query_id, CAST(idcg_{int(spec.k)} AS DOUBLE) AS value"
                sql = f"WITH judged AS ({judged}) {select} FROM ({ideal}) AS ideal"
            elif spec.family == "recall":
                level = float(spec.rel) if spec.rel is not None else experiment.relevance_threshold
                value = f"SUM(CASE WHEN grade >= {sql_number(level)} THEN 1 ELSE 0 END)"
                sql = (
                    f"WITH judged AS ({judged}) SELECT query_id, CAST({value} AS DOUBLE) AS value "
                    "FROM judged GROUP BY query_id"
                )
            else:
                continue
            table = self.backend.run(compile_sql(sql, self.backend.dialect)).to_pandas()
            index = pd.Index(table["query_id"].astype(str), name="query_id")
            out[name] = pd.Series(table["value"].to_numpy(dtype=np.float64), index=index)
        return out


def score_files(
    engine: str,
    qrels: str,
    run: str,
    metrics: list[str],
    *,
    rel_level: float = 1,
    depth: int | None = 1000,
    complete: bool = False,
    judged_only: bool = False,
) -> tuple[list[str], dict[str, np.ndarray]]:
    """Per-query values of one run file on SQL engine ``engine`` (``abrank metrics
    --engine``): the scored query ids (byte order) and each metric's values, undefined
    ones scored 0 as trec_eval scores them. Queries are the judged ones the run holds
    (with ``complete`` every judged query); none in common is a DataError."""
    from abrank.engines import check_supported
    from abrank.engines.sql.judged import score_arm_sql
    from abrank.engines.sql.rankings import TableSource, open_judgments, open_rankings
    from abrank.io.detect import detect_format

    check_supported(engine, "offline")
    backend = open_backend(engine)
    try:
        ranked = open_rankings(
            backend, "abrank_rankings_0", TableSource((run,), detect_format(run), run)
        )
        judged = open_judgments(
            backend,
            "abrank_judgments",
            TableSource((qrels,), detect_format(qrels, judgments=True), qrels),
        )
        scores = score_arm_sql(
            backend,
            ranked.sql,
            judged.sql,
            metrics,
            # a log of rankings is ranked by rank or score: open_rankings refuses one with neither
            ranked_by=cast(str, ranked.ranked_by),
            rel_level=rel_level,
            depth=depth,
            complete=complete,
            judged_only=judged_only,
            subtopics=judged.subtopics,
        )
    finally:
        backend.close()
    if scores.first_relevant.empty:
        raise DataError(f"{run}: query ids: expected queries that are also in {qrels}, got none")
    columns = {
        name: np.nan_to_num(scores.values[name].to_numpy(dtype=np.float64), nan=0.0)
        for name in scores.values.columns
    }
    return list(scores.values.index), columns
