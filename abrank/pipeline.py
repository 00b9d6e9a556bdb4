"""The main job: experiment config -> data -> per-query metrics -> comparisons -> readout.

:func:`run_experiment` computes everything a readout shows and returns a
:class:`~abrank.readout.Readout`; :func:`write_readout` writes it atomically, so a failed run
never leaves a half-written folder and never damages an earlier readout.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Collection
from pathlib import Path
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
            attributes.path, format=attributes.format, columns=attributes.columns.mapping()
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
    """Per-query metric values of every arm over the analysed queries."""

    values: dict[str, pd.DataFrame]  # arm -> frame indexed by query_id, one column per metric
    present: dict[str, pd.Index]  # arm -> judged queries the arm's log holds
    universe: pd.Index  # queries analysed
    judged_at_k: dict[str, float]
    first_relevant: dict[str, pd.Series]
    curves: pd.DataFrame
    without_relevant: pd.Index  # analysed queries whose judgments hold no relevant document
    unjudged_queries: dict[str, int]
    judged_queries: int


def score_arms(experiment: Experiment, data: LoadedData) -> ScoredArms:
    """Score each arm on every judged query any arm holds, applying the missing-query policy."""
    from abrank.metrics import evaluate, parse_metric

    metrics = [parse_metric(name) for name in experiment.metrics]
    judged = pd.Index(pd.unique(data.judgments["query_id"]))
    logged = {name: pd.Index(pd.unique(frame["query_id"])) for name, frame in data.rankings.items()}
    present = {name: queries.intersection(judged) for name, queries in logged.items()}
    unjudged = {name: int(logged[name].size - present[name].size) for name in logged}
    control = experiment.control.name
    paired = experiment.analysis.design == "paired"
    universe = _union(present.values())
    if paired:
        missing = {name: universe.difference(index) for name, index in present.items()}
        policy = experiment.analysis.missing_queries
        if policy == "error" and any(len(m) for m in missing.values()):
            name, ids = next((n, m) for n, m in missing.items() if len(m))
            shown = ", ".join(map(repr, ids[:5])) + (
                f" and {len(ids) - 5} more" if len(ids) > 5 else ""
            )
            path = next(arm.path for arm in experiment.arms if arm.name == name)
            raise DataError(
                f"{_display_path(path)}: expected every analysed query (analysis.missing_queries: error), "
                f"got {len(ids)} missing: {shown}"
            )
        if policy == "drop":
            universe = _intersection(present.values())
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
    values: dict[str, pd.DataFrame] = {}
    curves: list[pd.DataFrame] = []
    judged_at_k: dict[str, float] = {}
    first_relevant: dict[str, pd.Series] = {}
    for name, frame in data.rankings.items():
        rankings = frame
        if logged[name].size != present[name].size or not _member(present[name], universe).all():
            rankings = frame.loc[_member(frame["query_id"], universe)]
        table = evaluate(rankings, judgments, [*metrics, *extra], complete=paired, **options)
        scope = universe if paired else present[name]
        table = table.reindex(scope).rename_axis("query_id")
        analysed_here = present[name].intersection(table.index)
        judged_at_k[name] = float(table.loc[analysed_here, judged_metric.name].mean())
        rr = table[uncut_rr.name].to_numpy()
        with np.errstate(divide="ignore"):
            first_relevant[name] = pd.Series(
                np.where(rr > 0, np.round(1.0 / rr), np.nan), index=table.index, name="rank"
            )
        # No metric is defined for a query with nothing relevant to find (DESIGN.md
        # "Metrics"): blank them all, so the per-query table, curves and comparisons agree.
        table.loc[_member(table.index, without_relevant)] = np.nan
        values[name] = table[[m.name for m in metrics]]
        rows = [
            {"arm": name, "metric": m.family, "k": m.k, "value": float(table[m.name].mean())}
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
    """Every metric x treatment comparison, overall and per segment, with adjusted p-values."""
    from abrank.stats import adjust

    analysis = experiment.analysis
    control = experiment.control.name
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
    primary: list = []
    breakdown: list = []
    too_small: list[dict] = []
    for treatment in experiment.treatments:
        for metric in experiment.metrics:
            pair = (scored.values[control][metric], scored.values[treatment.name][metric])
            primary.append(_compare_pair(pair, metric, treatment.name, None, options))
            for column, groups in groups_by_column.items():
                for value, queries in groups.items():
                    subset = tuple(
                        series.reindex(series.index.intersection(queries)) for series in pair
                    )
                    label = f"{column}={value}"
                    n = _pair_size(subset, analysis.design)
                    if n < experiment.segments.min_queries:
                        if metric == experiment.metrics[0]:
                            too_small.append(
                                {"segment": label, "treatment": treatment.name, "n": n}
                            )
                        continue
                    breakdown.append(_compare_pair(subset, metric, treatment.name, label, options))
    primary = adjust(workers.results(primary), method=analysis.correction)
    breakdown = adjust(workers.results(breakdown), method=analysis.segment_correction)
    return [*primary, *breakdown], too_small


def _pair_size(pair: tuple[pd.Series, pd.Series], design: str) -> int:
    control, treatment = pair
    if design == "paired":
        return int((control.notna() & treatment.notna()).sum())
    return int(min(control.notna().sum(), treatment.notna().sum()))


def _compare_pair(pair, metric: str, treatment: str, segment: str | None, options: dict):
    from abrank.stats import compare

    control, treatment_values = pair
    if options["design"] == "paired":
        defined = control.notna() & treatment_values.notna()
        control, treatment_values = control[defined], treatment_values[defined]
        if len(control) == 0:
            raise DataError(
                f"metric {metric}: expected queries with a defined value, got none (no relevant judgments?)"
            )
    else:
        control, treatment_values = (
            control.dropna().to_numpy(),
            treatment_values.dropna().to_numpy(),
        )
    return workers.start_comparison(  # in a thread when that is safe; see abrank.workers
        compare,
        control,
        treatment_values,
        metric=metric,
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
    warnings = _warnings(experiment, scored, missing)
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
    if scored.without_relevant.size:
        notes.append(
            f"{scored.without_relevant.size} queries have no document judged relevant (grade >= "
            f"{experiment.relevance_threshold:g}); they are left out of every comparison"
        )
    return notes


# --------------------------------------------------------------------------- writing


def default_folder(
    experiment_name: str, out: str | Path | None = None, configured: str | None = None
) -> Path:
    """Where a readout goes: ``--out``, else the config's ``output``, else ``reports/<name>``."""
    if out is not None:
        return Path(out)
    if configured is not None:
        return Path(configured)
    return Path("reports") / experiment_name


def write_readout(
    readout: Readout, folder: str | Path, *, formats: Collection[str] = FORMATS
) -> list[Path]:
    """Write the readout into ``folder`` atomically: built aside, then swapped into place."""
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        raise ConfigError(
            f"--format: expected some of {', '.join(FORMATS)}, got {', '.join(unknown)}"
        )
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        if "json" in formats:
            with open(staging / "summary.json", "w", encoding="utf-8") as handle:
                json.dump(readout.summary, handle, indent=2, allow_nan=False)
                handle.write("\n")
        if "csv" in formats:
            _write_csv(readout.per_query, staging / "per_query.csv")
        rendered = [f for f in ("html", "md") if f in formats]
        if rendered:
            from abrank.report import write_report

            write_report(readout, staging, formats=tuple(rendered))
        _swap_into_place(staging, folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    """CSV through Arrow's writer: full float precision, empty cells for missing values."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    options = pcsv.WriteOptions(quoting_style="needed")
    pcsv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path, options)


def _swap_into_place(staging: Path, folder: Path) -> None:
    retired = folder.parent / f".{folder.name}.old-{os.getpid()}"
    if folder.exists():
        os.replace(folder, retired)
    os.replace(staging, folder)
    shutil.rmtree(retired, ignore_errors=True)


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
