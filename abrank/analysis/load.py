"""Reading an experiment's inputs: every arm's rankings, the judgments, the segment table.

The files are those of the run's resolved inputs (:func:`abrank.inputs.resolve_inputs`);
each file read is recorded with its fingerprint (sha256, rows) so that the readout says
exactly which inputs it was computed from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from abrank._lazy import pandas as pd
from abrank.analysis.window import read_window
from abrank.config import Experiment
from abrank.errors import DataError
from abrank.inputs import InputFiles, Inputs, arm_key, display_path, resolve_inputs
from abrank.io import read_attributes, read_judgments, read_rankings

#: A callback that is told what the run is doing (one line of text at a time).
Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True)
class LoadedData:
    """The experiment's inputs as canonical frames, with fingerprints of the files read."""

    rankings: dict[str, pd.DataFrame]
    judgments: pd.DataFrame
    segments: pd.DataFrame  # index query_id, one column per segment
    inputs: list[dict[str, Any]]
    #: the machine labels (``judgments`` source of kind machine), None without them
    machine_judgments: pd.DataFrame | None = None
    #: which labels ``judgments`` holds: human, filled (machine-filled) or machine; an SQL
    #: engine, which scores relations rather than these frames, scores that label set's
    labels: str = "human"
    #: each arm's top rows (``query_id``, ``doc_id``, ``rank``) where ``rankings`` holds
    #: none (an SQL engine's), for the machine labels' per-arm agreement; None: ``rankings``
    shown: dict[str, pd.DataFrame] | None = None


def load_data(
    experiment: Experiment, say: Progress | None = None, *, inputs: Inputs | None = None
) -> LoadedData:
    """Read every file of the run's ``inputs`` (resolved from ``experiment`` when not
    given); raise DataError on the first bad one."""
    say = say or (lambda message: None)
    resolved = inputs if inputs is not None else resolve_inputs(experiment)
    read_files: list[dict[str, Any]] = []
    rankings: dict[str, pd.DataFrame] = {}
    for index, arm in enumerate(experiment.arms):
        source = resolved[arm_key(index)]
        files = source.files
        say(f"loading {arm.name} ({shown_files(files)})")

        read = ranking_reader(experiment, arm, source)
        frame, sizes = read_window(read, files, key="query_id", order=(), what="query")
        rankings[arm.name] = frame
        read_files += [source.entry(file, rows) for file, rows in sizes]

    judgments = load_judgments(experiment, resolved, say, read_files)
    if judgments is None:
        judgments = _inline_judgments(experiment, resolved, rankings)
    machine = load_judgments(experiment, resolved, say, read_files, kind="machine")

    segments = _segment_table(experiment, resolved, rankings, read_files)
    return LoadedData(rankings, judgments, segments, read_files, machine)


def _inline_judgments(
    experiment: Experiment, inputs: Inputs, rankings: dict[str, pd.DataFrame]
) -> pd.DataFrame:
    """Judgments carried by the logs themselves (a ``relevance`` column), merged over arms."""
    parts = []
    for index, arm in enumerate(experiment.arms):
        frame = rankings[arm.name]
        if "relevance" not in frame.columns:
            raise DataError(
                f"{display_path(inputs[arm_key(index)].template)}: expected a relevance column in the log or a `judgments` "
                f"file in the config, got neither (columns: {', '.join(map(str, frame.columns))})"
            )
        labelled = frame.loc[frame["relevance"].notna(), ["query_id", "doc_id", "relevance"]]
        parts.append(labelled)
    merged = pd.concat(parts, ignore_index=True).drop_duplicates(["query_id", "doc_id"])
    if merged.empty:
        raise DataError("the logs' relevance columns: expected at least one label, got none")
    return merged.reset_index(drop=True)


def _segment_table(
    experiment: Experiment, inputs: Inputs, rankings: dict[str, pd.DataFrame], read: list
) -> pd.DataFrame:
    """One row per query with its segment values, from an attributes file or the logs."""
    columns = list(experiment.segments.columns)
    if not columns:
        return pd.DataFrame(index=pd.Index([], name="query_id", dtype=str))
    table = attribute_segments(experiment, inputs, read)
    if table is not None:
        return table
    source = [
        (inputs[arm_key(index)].template, rankings[arm.name])
        for index, arm in enumerate(experiment.arms)
    ]
    return segment_values(source, columns)


def attribute_segments(
    experiment: Experiment, inputs: Inputs, read: list[dict[str, Any]]
) -> pd.DataFrame | None:
    """The segment values per query from the config's attributes file (its ``inputs``
    entry appended to ``read``), or None when the config names none: on every engine,
    since the file is one small row per query."""
    attributes = experiment.segments.attributes
    if attributes is None:
        return None
    source = inputs["segments.attributes.path"]
    table = read_attributes(
        source.file,
        format=source.format,
        columns=attributes.columns.mapping(),
        sep=attributes.sep,
        decimal=attributes.decimal,
    )
    read.append(source.entry(source.file, len(table)))
    return segment_values([(source.file, table)], list(experiment.segments.columns))


def segment_values(source: list[tuple[str, pd.DataFrame]], columns: list[str]) -> pd.DataFrame:
    """One row per query with each segment column's value as text (``(none)`` where
    missing), taken from the first of the (path, frame) sources that has the column."""
    parts = []
    for column in columns:
        found = [(path, frame) for path, frame in source if column in frame.columns]
        if not found:
            path, frame = source[0]
            raise DataError(
                f"{display_path(path)}: segments.columns: expected a column {column!r}, "
                f"found columns: {', '.join(map(str, frame.columns))}"
            )
        values = pd.concat([frame[["query_id", column]] for _, frame in found], ignore_index=True)
        by_query = values.drop_duplicates("query_id").set_index("query_id")[column]
        parts.append(by_query.astype(str).where(by_query.notna(), "(none)"))
    return pd.concat(parts, axis=1)


def ranking_reader(
    experiment: Experiment, arm: Any, files: InputFiles
) -> Callable[[str], pd.DataFrame]:
    """A reader of one arm's rankings files (``files``: their formats), with the arm's
    columns and options."""

    def read(file: str) -> pd.DataFrame:
        return read_rankings(
            file,
            format=files.format_of(file),
            columns=arm.columns.mapping(),
            duplicates=arm.duplicates or experiment.duplicates,
            sep=arm.sep,
            decimal=arm.decimal,
        )

    return read


def impression_reader(
    source: Any,
    keep: list[str] | None = None,
    filled: Sequence[str] = (),
    teams: Sequence[str] | None = None,
    files: InputFiles | None = None,
    numeric: Sequence[str] = (),
) -> Callable[[str], pd.DataFrame]:
    """A reader of impression log files with the columns and options of ``source`` (a
    ``log:`` or an arm of the config) and the formats of ``files`` (None: detected by the
    reader, as declared in ``source``); ``keep``, ``filled`` (the segment columns) and
    ``teams`` (an interleaved log's arms) and ``numeric`` (the columns of numeric metrics)
    as for :func:`abrank.io.read_impressions` (None: every column)."""
    from abrank.io import read_impressions

    def read(file: str) -> pd.DataFrame:
        return read_impressions(
            file,
            format=source.format if files is None else files.format_of(file),
            columns=source.columns.mapping(),
            sep=source.sep,
            decimal=source.decimal,
            keep=keep,
            filled=filled,
            teams=teams,
            numeric=numeric,
        )

    return read


def shown_files(files: list[str]) -> str:
    """A log's files in a progress line: the one file, or the first and the last."""
    if len(files) == 1:
        return display_path(files[0])
    return f"{len(files)} files, {display_path(files[0])} .. {display_path(files[-1])}"


def load_judgments(
    experiment: Experiment,
    inputs: Inputs,
    say: Progress,
    read: list[dict[str, Any]],
    *,
    kind: str = "human",
) -> pd.DataFrame | None:
    """The ``judgments:`` file of ``kind`` (human, or machine labels) of the run's
    ``inputs`` as a canonical frame (None without one); its ``inputs`` entry is appended
    to ``read``."""
    from abrank.config.judgments import source_key

    found = source_key(experiment.judgments, kind)
    if found is None:
        return None
    key, config = found
    source = inputs[key]
    what = "judgments" if kind == "human" else "machine judgments"
    say(f"loading {what} ({display_path(source.file)})")
    judgments = read_judgments(
        source.file,
        format=source.format,
        columns=config.columns.mapping(),
        sep=config.sep,
        decimal=config.decimal,
    )
    read.append(source.entry(source.file, len(judgments)))
    return judgments
