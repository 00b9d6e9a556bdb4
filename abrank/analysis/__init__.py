"""The main job: experiment config -> data -> per-query metrics -> comparisons -> readout.

:func:`run_experiment` computes everything a readout shows and returns a
:class:`~abrank.readout.Readout`; :func:`write_readout` writes it atomically, so a failed run
never leaves a half-written folder and never damages an earlier readout.
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Collection
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np
import pandas as pd

from abrank import workers
from abrank.config import Experiment, load_experiment
from abrank.errors import ConfigError, DataError
from abrank.io import read_attributes, read_judgments, read_rankings
from abrank.readout import Readout

FORMATS = ("html", "md", "json", "csv")
JUDGED_K = 10
JUDGED_GAP_WARNING = 0.05
CURVE_POINTS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 50, 100, 200, 500, 1000)

Progress = Callable[[str], None]


def run_experiment(
    config: str | Path | Experiment, *, seed: int | None = None, progress: Progress | None = None
) -> Readout:
    """Load, score and compare the arms of one experiment; return its readout (nothing written)."""
    experiment = config if isinstance(config, Experiment) else load_experiment(config)
    if seed is not None:
        if seed < 0:
            raise ConfigError(f"--seed: expected a non-negative integer, got {seed}")
        experiment = experiment.model_copy(
            update={"analysis": experiment.analysis.model_copy(update={"seed": seed})}
        )
    say = _timed(progress)
    data = load_data(experiment, say)
    say("scoring queries")
    scored = score_arms(experiment, data)
    say("comparing arms")
    comparisons, too_small = compare_arms(experiment, scored, data.segments)
    say("summarising")
    return _build_readout(experiment, data, scored, comparisons, too_small)


# --------------------------------------------------------------------------- loading


@dataclasses.dataclass(frozen=True)
class LoadedData:
    """The experiment's inputs as canonical frames, with fingerprints of the files read."""

    rankings: dict[str, pd.DataFrame]
    judgments: pd.DataFrame
    segments: pd.DataFrame  # index query_id, one column per segment
    inputs: list[dict[str, Any]]


def load_data(experiment: Experiment, say: Progress | None = None) -> LoadedData:
    """Read every file the experiment names; raise DataError on the first bad one."""
    say = say or (lambda message: None)
    inputs: list[dict[str, Any]] = []
    rankings: dict[str, pd.DataFrame] = {}
    for arm in experiment.arms:
        say(f"loading {arm.name} ({_display_path(arm.path)})")
        frame = read_rankings(
            arm.path,
            format=arm.format,
            columns=arm.columns.mapping(),
            duplicates=arm.duplicates or experiment.duplicates,
            sep=arm.sep,
            decimal=arm.decimal,
        )
        rankings[arm.name] = frame
        role = "control" if arm is experiment.control else "treatment"
        inputs.append(_fingerprint(arm.path, role, arm.name, len(frame)))

    if experiment.judgments is not None:
        say(f"loading judgments ({_display_path(experiment.judgments.path)})")
        judgments = read_judgments(
            experiment.judgments.path,
            format=experiment.judgments.format,
            columns=experiment.judgments.columns.mapping(),
            sep=experiment.judgments.sep,
            decimal=experiment.judgments.decimal,
        )
        inputs.append(_fingerprint(experiment.judgments.path, "judgments", None, len(judgments)))
    else:
        judgments = _inline_judgments(experiment, rankings)

    segments = _segment_table(experiment, rankings, inputs)
    return LoadedData(rankings, judgments, segments, inputs)


def _inline_judgments(experiment: Experiment, rankings: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Judgments carried by the logs themselves (a ``relevance`` column), merged over arms."""
    parts = []
    for arm in experiment.arms:
        frame = rankings[arm.name]
        if "relevance" not in frame.columns:
            raise DataError(
                f"{_display_path(arm.path)}: expected a relevance column in the log or a `judgments` "
                f"file in the config, got neither (columns: {', '.join(map(str, frame.columns))})"
            )
        labelled = frame.loc[frame["relevance"].notna(), ["query_id", "doc_id", "relevance"]]
        parts.append(labelled)
    merged = pd.concat(parts, ignore_index=True).drop_duplicates(["query_id", "doc_id"])
    if merged.empty:
        raise DataError("the logs' relevance columns: expected at least one label, got none")
    return merged.reset_index(drop=True)


def _segment_table(
    experiment: Experiment, rankings: dict[str, pd.DataFrame], inputs: list
) -> pd.DataFrame:
    """One row per query with its segment values, from an attributes file or the logs."""
    columns = list(experiment.segments.columns)
    if not columns:
        return pd.DataFrame(index=pd.Index([], name="query_id", dtype=str))
    attributes = experiment.segments.attributes
    if attributes is not None:
        table = read_attributes(
            attributes.path,
            format=attributes.format,
            columns=attributes.columns.mapping(),
            sep=attributes.sep,
            decimal=attributes.decimal,
        )
        inputs.append(_fingerprint(attributes.path, "attributes", None, len(table)))
        source = [(attributes.path, table)]
    else:
        source = [(arm.path, rankings[arm.name]) for arm in experiment.arms]
    parts = []
    for column in columns:
        found = [(path, frame) for path, frame in source if column in frame.columns]
        if not found:
            path, frame = source[0]
            raise DataError(
                f"{_display_path(path)}: segments.columns: expected a column {column!r}, "
                f"found columns: {', '.join(map(str, frame.columns))}"
            )
        values = pd.concat([frame[["query_id", column]] for _, frame in found], ignore_index=True)
        values = values.drop_duplicates("query_id").set_index("query_id")[column]
        parts.append(values.astype(str).where(values.notna(), "(none)"))
    return pd.concat(parts, axis=1)


# --------------------------------------------------------------------------- scoring


@dataclasses.dataclass(frozen=True)
class ScoredArms:
    """Per-query metric values of every arm over the analysed queries.

    ``values[arm]`` covers every analysed query (the judged queries that any arm holds):
    a query the arm's log lacks is scored as an empty ranking (0), and ``present[arm]``
    tells which queries the log really holds, so that each comparison can apply the
    missing-query policy to its own two arms only. Undefined values (a metric that no
    ranking could score above 0 on a query) are NaN, or 0 under ``no_relevant: zero``.
    """

    values: dict[str, pd.DataFrame]  # arm -> frame indexed by query_id, one column per metric
    present: dict[str, pd.Index]  # arm -> judged queries the arm's log holds
    universe: pd.Index  # queries analysed: judged queries held by any arm
    judged_at_k: dict[str, float]
    first_relevant: dict[str, pd.Series]
    curves: pd.DataFrame
    without_relevant: pd.Index  # analysed queries whose judgments hold no relevant document
    undefined: dict[str, int]  # metric -> analysed queries on which it is undefined
    unjudged_queries: dict[str, int]
    judged_queries: int


def score_arms(experiment: Experiment, data: LoadedData) -> ScoredArms:
    """Score each arm on every analysed query (judged queries that any arm holds)."""
    from abrank.engines.evaluate import evaluate
    from abrank.metrics import parse_metric

    metrics = [parse_metric(name) for name in experiment.metrics]
    judged = pd.Index(pd.unique(data.judgments["query_id"]))
    logged = {name: pd.Index(pd.unique(frame["query_id"])) for name, frame in data.rankings.items()}
    present = {name: queries.intersection(judged) for name, queries in logged.items()}
    unjudged = {name: int(logged[name].size - present[name].size) for name in logged}
    control = experiment.control.name
    universe = _union(present.values())
    if universe.empty:
        raise DataError(
            "the rankings and judgments: expected queries in common, got none "
            f"(e.g. ranking query {_first_id(data.rankings[control])!r}, judged query {judged[0]!r})"
        )
    universe = universe.sort_values().rename("query_id")

    judgments = data.judgments
    if judged.size != universe.size:
        judgments = judgments.loc[_member(judgments["query_id"], universe)]
    best = judgments.groupby("query_id", sort=False)["relevance"].max().reindex(universe)
    without_relevant = best.index[best.fillna(-np.inf).to_numpy() < experiment.relevance_threshold]

    # The uncut reciprocal rank gives where the first relevant document lands (1 / RR).
    uncut_rr = parse_metric(f"mrr(rel={experiment.relevance_threshold:g})")
    judged_metric = parse_metric(f"judged@{JUDGED_K}")
    curve_metrics = _curve_metrics(metrics)
    requested = {m.name for m in metrics}
    extra = [m for m in [*curve_metrics, judged_metric, uncut_rr] if m.name not in requested]
    options = dict(
        rel_level=experiment.relevance_threshold, gain=experiment.gain, depth=experiment.depth
    )
    zero = experiment.no_relevant == "zero"
    values: dict[str, pd.DataFrame] = {}
    curves: list[pd.DataFrame] = []
    judged_at_k: dict[str, float] = {}
    first_relevant: dict[str, pd.Series] = {}
    undefined: dict[str, int] = {}
    for name, frame in data.rankings.items():
        rankings = frame
        if logged[name].size != present[name].size:
            rankings = frame.loc[_member(frame["query_id"], universe)]
        # complete: a query missing from this log is scored as an empty ranking
        table = evaluate(rankings, judgments, [*metrics, *extra], complete=True, **options)
        table = table.reindex(universe).rename_axis("query_id")
        own = table.loc[present[name]] if present[name].size != universe.size else table
        judged_at_k[name] = float(own[judged_metric.name].mean())
        rr = table[uncut_rr.name].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            first_relevant[name] = pd.Series(
                np.where(rr > 0, np.round(1.0 / rr), np.nan), index=table.index, name="rank"
            ).loc[own.index]
        if not undefined:  # undefined values depend on the judgments only, not on the arm
            undefined = {m.name: int(table[m.name].isna().sum()) for m in metrics}
        scored = table[[m.name for m in metrics]]
        if zero:  # trec_eval's convention: an undefined value scores 0
            scored = scored.fillna(0.0)
        values[name] = scored
        curve_table = own.fillna(0.0) if zero else own
        rows = [
            {"arm": name, "metric": m.family, "k": m.k, "value": float(curve_table[m.name].mean())}
            for m in curve_metrics
        ]
        curves.append(pd.DataFrame(rows, columns=["arm", "metric", "k", "value"]))
    return ScoredArms(
        values,
        present,
        universe,
        judged_at_k,
        first_relevant,
        pd.concat(curves, ignore_index=True),
        without_relevant,
        undefined,
        unjudged,
        int(judged.size),
    )


def _curve_metrics(metrics: list) -> list:
    """metric@k for k = 1..cutoff of every cut-off metric, for the metric@k chart."""
    curve = []
    seen = set()
    for metric in metrics:
        if metric.k is None or metric.family == "judged":
            continue
        for k in CURVE_POINTS:
            if k > metric.k:
                break
            point = dataclasses.replace(metric, k=k)
            if point.name not in seen:
                seen.add(point.name)
                curve.append(point)
    return curve


# --------------------------------------------------------------------------- comparing


def compare_arms(
    experiment: Experiment, scored: ScoredArms, segments: pd.DataFrame
) -> tuple[list, list[dict]]:
    """Every metric x treatment comparison, overall and per segment, with adjusted p-values.

    Each comparison depends on its own two arms only: its queries are those the control
    and that treatment hold (both under ``missing_queries: drop``, either under ``zero``),
    never those of another treatment.
    """
    from abrank.stats import adjust

    analysis = experiment.analysis
    options = dict(
        design=analysis.design,
        primary_test=analysis.primary_test,
        tests=tuple(analysis.tests),
        alpha=analysis.alpha,
        confidence_level=analysis.confidence_level,
        n_resamples=analysis.resamples,
        seed=analysis.seed,
    )
    groups_by_column = {
        column: segments[column].groupby(segments[column], sort=True).groups
        for column in segments.columns
    }
    primary: list = []  # (order, future of a list of comparisons)
    breakdown: list = []
    too_small: list[tuple[tuple, dict]] = []
    metric_order = {metric: i for i, metric in enumerate(experiment.metrics)}
    for t_index, treatment in enumerate(experiment.treatments):
        queries = _pair_queries(experiment, scored, treatment.name)
        pairs = {
            metric: _pair_values(experiment, scored, treatment.name, metric, queries)
            for metric in experiment.metrics
        }
        primary.append(_compare_pairs(pairs, treatment.name, None, options))
        s_index = 0
        for column, groups in groups_by_column.items():
            for value, members in groups.items():
                label = f"{column}={value}"
                subsets = {}
                for metric, pair in pairs.items():
                    subset = tuple(
                        series.reindex(series.index.intersection(members)) for series in pair
                    )
                    n = _pair_size(subset, analysis.design)
                    if n < experiment.segments.min_queries:
                        entry = {"segment": label, "treatment": treatment.name, "metric": metric}
                        too_small.append(
                            ((t_index, metric_order[metric], s_index), {**entry, "n": n})
                        )
                    else:
                        subsets[metric] = subset
                if subsets:
                    order = (t_index, s_index)
                    breakdown.append(
                        (order, _compare_pairs(subsets, treatment.name, label, options))
                    )
                s_index += 1
    primary_results = [c for found in workers.results(primary) for c in found]
    orders = [order for order, _ in breakdown]
    found = workers.results([future for _, future in breakdown])
    # segment comparisons in the order treatment, metric, segment
    ranked = sorted(
        (
            ((t_index, metric_order[c.metric], s_index), c)
            for (t_index, s_index), comparisons in zip(orders, found, strict=True)
            for c in comparisons
        ),
        key=lambda item: item[0],
    )
    primary = adjust(primary_results, method=analysis.correction)
    breakdown = adjust([c for _, c in ranked], method=analysis.segment_correction)
    return [*primary, *breakdown], [entry for _, entry in sorted(too_small, key=lambda e: e[0])]


def _pair_queries(experiment: Experiment, scored: ScoredArms, treatment: str) -> tuple:
    """The queries of one control-vs-treatment comparison, by the missing-query policy.

    Paired design: one index shared by both arms. Independent design: each arm's own.
    """
    control = experiment.control.name
    mine, theirs = scored.present[control], scored.present[treatment]
    if experiment.analysis.design != "paired":
        return mine, theirs
    policy = experiment.analysis.missing_queries
    if policy == "error":
        for name, missing in (
            (control, theirs.difference(mine)),
            (treatment, mine.difference(theirs)),
        ):
            if len(missing):
                shown = ", ".join(map(repr, missing[:5])) + (
                    f" and {len(missing) - 5} more" if len(missing) > 5 else ""
                )
                path = next(arm.path for arm in experiment.arms if arm.name == name)
                raise DataError(
                    f"{_display_path(path)}: expected every analysed query "
                    f"(analysis.missing_queries: error), got {len(missing)} missing: {shown}"
                )
    shared = mine.intersection(theirs) if policy == "drop" else mine.union(theirs)
    shared = shared.sort_values()
    return shared, shared


def _pair_values(
    experiment: Experiment, scored: ScoredArms, treatment: str, metric: str, queries: tuple
) -> tuple[pd.Series, pd.Series]:
    control = experiment.control.name
    return tuple(
        scored.values[arm][metric].reindex(index)
        for arm, index in zip((control, treatment), queries, strict=True)
    )


def _pair_size(pair: tuple[pd.Series, pd.Series], design: str) -> int:
    control, treatment = pair
    if design == "paired":
        return int((control.notna() & treatment.notna()).sum())
    return int(min(control.notna().sum(), treatment.notna().sum()))


def _compare_pairs(pairs: dict, treatment: str, segment: str | None, options: dict):
    """The comparisons of every metric of ``pairs`` (metric -> (control, treatment)
    Series), as a future of a list in the metrics' order (see :func:`stats.compare_metrics`)."""
    from abrank.stats import compare_metrics

    controls, treatments = {}, {}
    for metric, (control, treatment_values) in pairs.items():
        if options["design"] == "paired":
            defined = control.notna() & treatment_values.notna()
            control, treatment_values = control[defined], treatment_values[defined]
            if len(control) == 0:
                raise DataError(
                    f"metric {metric}: expected queries with a defined value, got none "
                    "(no relevant judgments?)"
                )
        else:
            control, treatment_values = (
                control.dropna().to_numpy(),
                treatment_values.dropna().to_numpy(),
            )
        controls[metric], treatments[metric] = control, treatment_values
    return workers.start_comparison(  # in a thread when that is safe; see abrank.workers
        compare_metrics,
        controls,
        treatments,
        treatment_name=treatment,
        segment=segment,
        **options,
    )


# --------------------------------------------------------------------------- readout


def _build_readout(
    experiment: Experiment, data: LoadedData, scored: ScoredArms, comparisons, too_small
) -> Readout:
    from abrank import __version__
    from abrank.metrics import parse_metric

    analysis = experiment.analysis
    control = experiment.control.name
    per_query = []
    for arm in experiment.arms:
        table = scored.values[arm.name]
        table = table.join(data.segments, how="left") if len(data.segments.columns) else table
        per_query.append(table.reset_index().assign(arm=arm.name))
    per_query_frame = pd.concat(per_query, ignore_index=True)
    per_query_frame = per_query_frame[["arm", *per_query_frame.columns.drop("arm")]]
    first = pd.concat(
        [
            s.rename("rank").rename_axis("query_id").reset_index().assign(arm=name)
            for name, s in scored.first_relevant.items()
        ],
        ignore_index=True,
    )[["arm", "query_id", "rank"]]

    missing = {
        name: int(scored.universe.difference(index).size) for name, index in scored.present.items()
    }
    logged = {
        name: int(index.size) + scored.unjudged_queries[name]
        for name, index in scored.present.items()
    }
    matched = int(_intersection(scored.present.values()).size)
    warnings = [*_identical_logs(data.inputs), *_warnings(experiment, scored, missing)]
    overall_notes: dict[str, list[str]] = {}
    segment_notes: dict[str, int] = {}
    for comparison in comparisons:
        for note in comparison.notes:
            if comparison.segment is None:
                subject = f"{comparison.metric} ({comparison.treatment})"
                overall_notes.setdefault(note, []).append(subject)
            else:
                segment_notes[note] = segment_notes.get(note, 0) + 1
    for note, subjects in overall_notes.items():
        warnings.append(f"{', '.join(subjects)}: {note}")
    for note, count in segment_notes.items():
        warnings.append(f"{count} segment comparison{'s' if count > 1 else ''}: {note}")
    for comparison in comparisons:
        if comparison.approximation and comparison.segment is None:
            warnings.append(
                f"{comparison.metric} ({comparison.treatment}): resampled with an approximation: "
                f"{comparison.approximation}"
            )
    summary = {
        "experiment": {
            "name": experiment.name,
            "title": experiment.title or experiment.name,
            "description": experiment.description,
            "owner": experiment.owner,
        },
        "abrank_version": __version__,
        "config_path": _display_path(experiment.source),
        "design": analysis.design,
        "seed": analysis.seed,
        "alpha": analysis.alpha,
        "confidence_level": analysis.confidence_level,
        "n_resamples": analysis.resamples,
        "primary_test": analysis.primary_test,
        "tests": list(analysis.tests),
        "correction": {"primary": analysis.correction, "segments": analysis.segment_correction},
        "relevance_threshold": experiment.relevance_threshold,
        "no_relevant": experiment.no_relevant,
        "gain": experiment.gain,
        "depth": experiment.depth,
        "metrics": list(experiment.metrics),
        "metric_labels": {name: parse_metric(name).label for name in experiment.metrics},
        "primary_metric": experiment.primary_metric,
        "arms": [
            {
                "name": arm.name,
                "label": arm.label or arm.name,
                "role": "control" if arm.name == control else "treatment",
                "queries": logged[arm.name],
            }
            for arm in experiment.arms
        ],
        "comparisons": [c.to_dict() for c in comparisons],
        "segments": {
            "columns": list(experiment.segments.columns),
            "min_queries": experiment.segments.min_queries,
            "too_small": too_small,
        },
        "diagnostics": {
            "queries": {name: logged[name] for name, frame in data.rankings.items()},
            "judged_queries": scored.judged_queries,
            "analysed_queries": int(scored.universe.size),
            "matched": matched,
            "missing": missing,
            "missing_policy": analysis.missing_queries,
            "without_relevant": int(scored.without_relevant.size),
            "undefined": {
                "policy": experiment.no_relevant,
                "metrics": dict(scored.undefined),
            },
            "unjudged_queries": scored.unjudged_queries,
            "judged_at_k": {
                "k": JUDGED_K,
                "arms": {k: _finite(v) for k, v in scored.judged_at_k.items()},
            },
            "warnings": warnings,
        },
        "inputs": data.inputs,
    }
    resampled = {
        (c.metric, c.treatment): c.resampled_deltas
        for c in comparisons
        if c.segment is None and getattr(c, "resampled_deltas", None) is not None
    }
    return Readout(summary, per_query_frame, scored.curves, first, resampled, experiment.text)


def _identical_logs(inputs: list[dict[str, Any]]) -> list[str]:
    """A warning for each treatment whose log holds the control's very bytes (same sha256).

    Comparing a ranker with itself is nearly always a config mistake (a copied path, an
    export run twice from the same model); the readout would show a zero delta everywhere.
    """
    control = next(item for item in inputs if item["role"] == "control")
    return [
        f"{item['arm']}: its log {item['path']} has the same content as the control's "
        f"({control['path']}, sha256 {control['sha256'][:12]}): the arms cannot differ; "
        "check the treatment's path"
        for item in inputs
        if item["role"] == "treatment" and item["sha256"] == control["sha256"]
    ]


def _warnings(experiment: Experiment, scored: ScoredArms, missing: dict[str, int]) -> list[str]:
    control = experiment.control.name
    notes = []
    base = scored.judged_at_k.get(control, np.nan)
    for arm in experiment.treatments:
        value = scored.judged_at_k.get(arm.name, np.nan)
        if np.isfinite(base) and np.isfinite(value) and value < base - JUDGED_GAP_WARNING:
            notes.append(
                f"{arm.name}: judged@{JUDGED_K} is {value:.3f} against control's {base:.3f}; unjudged "
                f"documents count as not relevant, which biases the comparison against {arm.name}"
            )
    policy = experiment.analysis.missing_queries
    for name, count in missing.items():
        if count and experiment.analysis.design == "paired":
            effect = {"zero": "scored 0", "drop": "left out of every arm"}.get(policy, policy)
            notes.append(f"{name}: {count} analysed queries are missing from its log ({effect})")
    for name, count in scored.unjudged_queries.items():
        if count:
            notes.append(
                f"{name}: {count} queries in the log have no judgments and are not analysed"
            )
    effect = (
        "scored 0 (no_relevant: zero)"
        if experiment.no_relevant == "zero"
        else "left out of the comparisons (no_relevant: drop)"
    )
    by_count: dict[int, list[str]] = {}
    for metric, count in scored.undefined.items():
        if count:
            by_count.setdefault(count, []).append(metric)
    for count, names in by_count.items():
        notes.append(
            f"{', '.join(names)}: undefined on {count} of {scored.universe.size} queries (no "
            f"judged document could score on {'them' if len(names) > 1 else 'it'}), {effect}"
        )
    return notes


# --------------------------------------------------------------------------- writing

#: The file that marks a folder as an abrank readout: JSON with the abrank version, the
#: experiment and the files the run wrote. Only a folder holding it, and nothing but those
#: files, is ever replaced by a later run (summary.json alone proves nothing: `--format`
#: can leave it out, and a user's folder may hold a file of that name).
READOUT_MARKER = ".abrank-readout"
_MARKER_FORMAT = 1
_SHOWN = 3  # how many entries of a refused folder a message names
#: OS errors that mean the user's output path cannot be written: bad input (exit 2), not a bug
_UNWRITABLE = {
    errno.EACCES,
    errno.EPERM,
    errno.EROFS,
    errno.ENOTDIR,
    errno.EISDIR,
    errno.EEXIST,
    errno.ENOTEMPTY,
    errno.ENAMETOOLONG,
}


def default_folder(
    experiment_name: str, out: str | Path | None = None, configured: str | None = None
) -> Path:
    """Where a readout goes: ``--out``, else the config's ``output``, else ``reports/<name>``."""
    if out is not None:
        return Path(out)
    if configured is not None:
        return Path(configured)
    return Path("reports") / experiment_name


def check_output_folder(folder: str | Path) -> None:
    """Refuse an output path that a readout may not be written to, before any work is done.

    abrank never deletes, renames or replaces anything it did not write. A readout may go
    to a path that does not exist yet, to an empty folder, or over an earlier readout: a
    folder holding the :data:`READOUT_MARKER` file and only the files that marker lists.
    Anything else raises :class:`ConfigError` naming the path and what lies there: the
    working folder (or one holding it), a file, a symbolic link, a folder with other
    content, a place the user may not write. :func:`write_readout` checks again; the CLI
    calls this first so that a bad ``--out`` fails before the analysis runs.
    """
    _output_state(Path(folder))


def write_readout(
    readout: Readout, folder: str | Path, *, formats: Collection[str] = FORMATS
) -> list[Path]:
    """Write the readout into ``folder`` atomically: built aside, then swapped into place.

    The files are written into a hidden staging folder beside ``folder``
    (``.NAME.tmp-<pid>``) and moved into place only when complete, so a failed run leaves
    no partial readout and never damages an earlier one. Every readout holds the
    :data:`READOUT_MARKER` file, by which a later run knows the folder is abrank's to
    replace; :func:`check_output_folder` says what is refused. Once the new readout is in
    place, staging folders left by killed earlier runs are removed, but only those that
    match abrank's own names and hold the marker. Returns the files written.
    """
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ConfigError(
            f"--format: expected some of {', '.join(FORMATS)}, got {', '.join(unknown)}"
        )
    folder = Path(folder)
    _output_state(folder)
    staging = _hidden_sibling(folder, "tmp")
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        _clear_own_leftover(staging, folder)
        staging.mkdir()
    except OSError as exc:
        raise _write_error(folder, exc) from exc
    try:
        _write_marker(staging, readout, None)
        if "json" in formats:
            with open(staging / "summary.json", "w", encoding="utf-8") as handle:
                json.dump(readout.summary, handle, indent=2, allow_nan=False)
                handle.write("\n")
        if "csv" in formats:
            _write_csv(readout.per_query, staging / "per_query.csv")
        rendered = [f for f in ("html", "md") if f in formats]
        if rendered:
            from abrank.render import write_report

            write_report(readout, staging, formats=tuple(rendered))
        written = [
            p.relative_to(staging).as_posix()
            for p in staging.rglob("*")
            if p.is_file() and p != staging / READOUT_MARKER
        ]
        _write_marker(staging, readout, sorted(written))
        _swap_into_place(staging, folder)
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OSError):
            raise _write_error(folder, exc) from exc
        raise
    _remove_leftovers(folder)
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """CSV through Arrow's writer: full float precision, empty cells for missing values."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    options = pcsv.WriteOptions(quoting_style="needed")
    pcsv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path, options)


def _swap_into_place(staging: Path, folder: Path) -> None:
    """Move the complete staging folder to ``folder``.

    The output path is checked again (it may have changed while the readout was built). A
    new path or an empty folder takes the staging folder by one rename, which the OS
    refuses over a file or a non-empty folder. An earlier readout is first renamed aside,
    put back if the second rename fails, and deleted only once the new one is in place.
    """
    if _output_state(folder) != "readout":
        os.replace(staging, folder)
        return
    retired = _hidden_sibling(folder, "old")
    _clear_own_leftover(retired, folder)
    os.replace(folder, retired)
    try:
        os.replace(staging, folder)
    except BaseException:
        os.replace(retired, folder)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _output_state(folder: Path) -> str:
    """``"new"``, ``"empty"`` or ``"readout"``; a ConfigError for a path abrank may not use."""
    try:
        target = folder.resolve()
        here = Path.cwd().resolve()
    except (OSError, RuntimeError) as exc:
        raise ConfigError(f"{folder}: expected a usable output path, got {_reason(exc)}") from None
    if target == here or target in here.parents:
        which = "the working folder" if target == here else "a folder holding the working folder"
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got {which}; abrank never replaces it "
            "(name a new or empty folder, or an earlier readout)"
        )
    if folder.is_symlink():
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got a symbolic link; abrank replaces "
            "only folders it wrote"
        )
    if not folder.exists():
        _check_writable_parent(folder)
        return "new"
    if not folder.is_dir():
        kind = "a file" if folder.is_file() else "a special file (not a folder)"
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got {kind}; abrank never replaces "
            "files it did not write"
        )
    try:
        entries = sorted(os.listdir(folder))
    except OSError as exc:
        raise ConfigError(
            f"{folder}: expected a folder abrank can read, got {_reason(exc)}"
        ) from None
    _check_writable_parent(folder)
    if not entries:
        return "empty"
    foreign = _foreign_entries(folder)
    if foreign is None:
        raise ConfigError(
            f"{folder}: expected a new folder, an empty one or an earlier abrank readout, got a "
            f"folder holding {_shown(entries)} without the {READOUT_MARKER} marker of a readout; "
            "abrank replaces only folders it wrote"
        )
    if foreign:
        raise ConfigError(
            f"{folder}: expected an abrank readout holding only the files abrank wrote, got "
            f"other files too: {_shown(foreign)}; move them out or choose another output folder"
        )
    return "readout"


def _check_writable_parent(folder: Path) -> None:
    """The nearest existing folder above ``folder`` must be a folder the user may write."""
    parent = folder.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(
            f"{folder}: expected a folder for the readout, got the file {parent} in its path"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{folder}: expected a folder abrank can write, got permission denied (in {parent})"
        )


def _read_marker(folder: Path) -> dict[str, Any] | None:
    """The readout marker of ``folder``, or None when it has no valid one."""
    path = folder / READOUT_MARKER
    if path.is_symlink() or not path.is_file():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or not isinstance(marker.get("abrank_readout"), int):
        return None
    files = marker.get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        return None
    return marker


def _foreign_entries(folder: Path) -> list[str] | None:
    """Entries of a readout folder that its marker does not list (None: no valid marker)."""
    marker = _read_marker(folder)
    if marker is None:
        return [] if _legacy_readout(folder) else None
    listed = {*marker["files"], READOUT_MARKER}
    parents = {p.as_posix() for name in listed for p in PurePosixPath(name).parents}
    foreign: list[str] = []

    def unreadable(exc: OSError) -> None:
        foreign.append(Path(exc.filename).relative_to(folder).as_posix())

    for root, dirs, files in os.walk(folder, onerror=unreadable):
        base = Path(root).relative_to(folder)
        for name in list(dirs):
            relative = (base / name).as_posix()
            if os.path.islink(os.path.join(root, name)) or relative not in parents:
                foreign.append(relative)
                dirs.remove(name)
        foreign.extend(
            (base / name).as_posix() for name in files if (base / name).as_posix() not in listed
        )
    return sorted(foreign)


_LEGACY_FILES = {"summary.json", "per_query.csv", "report.html", "report.md"}


def _legacy_readout(folder: Path) -> bool:
    """A readout written before readouts carried the marker: nothing but abrank's own file
    names (charts/ holding only PNGs), and a summary.json that abrank wrote."""
    try:
        entries = set(os.listdir(folder))
        charts = folder / "charts"
        if "charts" in entries:
            if charts.is_symlink() or not charts.is_dir():
                return False
            if any(not n.endswith(".png") or (charts / n).is_dir() for n in os.listdir(charts)):
                return False
        if "summary.json" not in entries or not entries <= {*_LEGACY_FILES, "charts"}:
            return False
        if any((folder / n).is_symlink() or (folder / n).is_dir() for n in entries - {"charts"}):
            return False
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and {"abrank_version", "comparisons"} <= set(summary)


def _is_abrank_folder(path: Path) -> bool:
    """A real folder (not a link) that holds a valid readout marker."""
    return path.is_dir() and not path.is_symlink() and _read_marker(path) is not None


def _write_marker(folder: Path, readout: Readout, files: list[str] | None) -> None:
    """Mark ``folder`` as written by abrank; ``files`` None while the readout is unfinished."""
    from abrank import __version__

    marker = {
        "abrank_readout": _MARKER_FORMAT,
        "abrank_version": __version__,
        "experiment": readout.summary.get("experiment", {}).get("name"),
        "complete": files is not None,
        "files": files or [],
    }
    (folder / READOUT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def _hidden_sibling(folder: Path, kind: str) -> Path:
    """This process's staging (``tmp``) or retired (``old``) folder beside ``folder``."""
    return folder.parent / f".{folder.name}.{kind}-{os.getpid()}"


def _clear_own_leftover(path: Path, folder: Path) -> None:
    """Make room for this process's hidden folder: a leftover of a dead process that had the
    same pid is removed when abrank wrote it; anything else there is left alone, and refused."""
    if not os.path.lexists(path):
        return
    if not _is_abrank_folder(path):
        raise ConfigError(
            f"{folder}: expected to build the readout beside it in {path.name}, got something "
            "abrank did not write there; move it away"
        )
    shutil.rmtree(path)


def _remove_leftovers(folder: Path) -> None:
    """Remove staging and retired folders of killed earlier runs that wrote ``folder``: only
    names of abrank's own pattern, of processes no longer running, that hold the marker."""
    pattern = re.compile(rf"\.{re.escape(folder.name)}\.(?:tmp|old)-(\d+)")
    try:
        names = os.listdir(folder.parent)
    except OSError:
        return
    for name in names:
        match = pattern.fullmatch(name)
        if match is None or _process_alive(int(match.group(1))):
            continue
        path = folder.parent / name
        if _is_abrank_folder(path):
            shutil.rmtree(path, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    """Whether a process of that id may still run (when in doubt: yes, so nothing is removed)."""
    if pid == os.getpid() or os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _write_error(folder: Path, exc: OSError) -> Exception:
    """An OS error met while writing, reworded to name the user's output path, not the
    hidden staging folder: bad input (ConfigError) when the path cannot be written."""
    if exc.errno in _UNWRITABLE:
        return ConfigError(f"{folder}: expected a folder abrank can write, got {_reason(exc)}")
    return OSError(exc.errno, f"{folder}: could not write the readout: {exc.strerror or exc}")


def _reason(exc: BaseException) -> str:
    """An OS error's reason in lower case ("permission denied"), without the path."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text[0].lower() + text[1:]


def _shown(names: list[str]) -> str:
    """The first few names, for a message."""
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


# --------------------------------------------------------------------------- helpers


def _timed(progress: Progress | None) -> Progress:
    start = time.perf_counter()

    def say(message: str) -> None:
        if progress is not None:
            progress(f"[{time.perf_counter() - start:6.1f}s] {message}")

    return say


def _fingerprint(path: str, role: str, arm: str | None, rows: int) -> dict[str, Any]:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {
        "role": role,
        "arm": arm,
        "path": _display_path(path),
        "sha256": digest.hexdigest(),
        "rows": int(rows),
    }


def _display_path(path: str | Path) -> str:
    """A path relative to the working folder when it lies below it (stable across machines)."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _member(values: pd.Series | pd.Index, allowed: pd.Index) -> np.ndarray:
    """Which values lie in ``allowed``, through Arrow's hash join (pandas' ``isin`` on
    Arrow strings loops in Python over the allowed values)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    found = pc.is_in(pa.array(values), value_set=pa.array(allowed))
    return found.to_numpy(zero_copy_only=False)


def _union(indexes) -> pd.Index:
    return functools.reduce(pd.Index.union, indexes)


def _intersection(indexes) -> pd.Index:
    return functools.reduce(pd.Index.intersection, indexes)


def _first_id(frame: pd.DataFrame) -> str:
    return str(frame["query_id"].iat[0]) if len(frame) else ""


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
