"""Interleaving experiments: an interleaved log in, per-impression outcomes and comparisons out.

One log holds every impression's merged list, each result marked with the ``team`` (the
arm) that contributed it (DESIGN.md "Interleaving"). Per impression and per pair of arms,
the treatment wins when its results got more credited clicks, loses when fewer and ties
otherwise (:func:`abrank.interleaving.impression_outcomes`); the comparison tests the
preference Δ_AB clustered on ``analysis.unit``
(:func:`abrank.stats.compare_interleaved`), overall and per segment, from per-unit
counts (:func:`unit_counts`: wins, ties, losses, clicked impressions and first teams per
unit), which an SQL engine returns directly (:mod:`abrank.designs.interleaved.sql`), so
that both engines' comparisons are one code path. Two validity checks
come with it: which team contributed each impression's first result (half the time each
for a fair interleaving), and, when the arms' source rankings are given, how many
impressions showed a list that both rankings would have shown alike (such impressions
carry no preference).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionArray

from abrank.analysis.comparisons import ArmPair, arm_pairs, compare_all, done, test_settings
from abrank.analysis.load import Progress, impression_reader, ranking_reader, shown_files
from abrank.analysis.window import read_window
from abrank.config import Experiment
from abrank.designs.interleaved.evidence import (
    COUNT_COLUMNS,
    counts_evidence,
    credit_counts,
    credits_of,
)
from abrank.errors import DataError
from abrank.evidence import Evidence
from abrank.inputs import Inputs, arm_key, display_path, resolve_inputs


@dataclasses.dataclass(frozen=True)
class InterleavedData:
    """An interleaving experiment's inputs: the log (canonical impressions frame with its
    ``team`` column, rows by impression and rank), the source rankings of the arms that
    name one (canonical rankings frames), the fingerprints of the files read, and the log
    as messages show it."""

    log: pd.DataFrame
    rankings: dict[str, pd.DataFrame]
    inputs: list[dict[str, Any]]
    path: str


@dataclasses.dataclass(frozen=True)
class SameLists:
    """Impressions whose shown list both source rankings would have shown alike: their
    top ``n`` (n the impression's length) is the same documents in the same order.
    ``compared`` counts the impressions whose query both rankings hold, ``unmatched`` the
    others (no query column, or a query one ranking lacks)."""

    compared: int
    same: int
    unmatched: int

    @property
    def share(self) -> float | None:
        return self.same / self.compared if self.compared else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "same": self.same,
            "share": self.share,
            "unmatched": self.unmatched,
        }


@dataclasses.dataclass(frozen=True)
class InterleavedScores:
    """What the comparisons and the readout read of an interleaved log.

    ``evidence``: per pair, per unit (in order of its first impression by impression id)
    the impressions the pair's treatment won, tied and lost by each credit, those with any
    click, and those whose first result came from the control's and from the treatment's
    team, overall and per (segment value as text, unit), values in text order
    (:mod:`abrank.designs.interleaved.evidence`); ``unit_counts[(pair, credit)]`` and
    ``segment_counts[column][(pair, credit)]`` read one credit's counts
    (:data:`COUNT_COLUMNS`) from it. ``outcomes``: the per-impression
    outcomes with the segment columns (empty frames of the same columns where the engine
    returns per-unit counts only). Also the log's totals, the first-team counts, the
    same-list check (None without source rankings)."""

    outcomes: dict[tuple[str, str], pd.DataFrame]
    impressions: int
    units: int
    clicked: int
    per_arm: dict[str, tuple[int, int]]  # arm -> (impressions, units) it contributed to
    first_team: dict[str, int]
    same_lists: SameLists | None
    evidence: Evidence
    fixed_lists: Any = None  # abrank.interleaving.FixedLists, None without a query column

    @property
    def unit_counts(self) -> dict[tuple[str, str], pd.DataFrame]:
        """Per (pair, credit), the per-unit counts (:data:`COUNT_COLUMNS`)."""
        return {
            (pair, credit): credit_counts(table, credit)
            for pair, table in self.evidence.sums.items()
            for credit in credits_of(self.evidence)
        }

    @property
    def segment_counts(self) -> dict[str, dict[tuple[str, str], pd.DataFrame]]:
        """Per segment column and (pair, credit), the counts per (value, unit)."""
        return {
            column: {
                (pair, credit): credit_counts(table, credit)
                for pair, table in by_pair.items()
                for credit in credits_of(self.evidence)
            }
            for column, by_pair in self.evidence.segment_sums.items()
        }

    def to_dict(self) -> dict[str, Any]:
        """The totals and checks, JSON-safe (not the tables)."""
        return {
            "impressions": self.impressions,
            "units": self.units,
            "clicked": self.clicked,
            "per_arm": {arm: list(n) for arm, n in self.per_arm.items()},
            "first_team": dict(self.first_team),
            "same_lists": None if self.same_lists is None else self.same_lists.to_dict(),
            "pairs": [
                [pair, credit]
                for pair in self.evidence.sums
                for credit in credits_of(self.evidence)
            ],
        }


def load_interleaved(
    experiment: Experiment, say: Progress | None = None, *, inputs: Inputs | None = None
) -> InterleavedData:
    """Read the interleaved log (every date of the window) and the arms' source rankings
    of the run's ``inputs`` (resolved from ``experiment`` when not given); check the team
    column against the arms."""
    say = say or (lambda message: None)
    resolved = inputs if inputs is not None else resolve_inputs(experiment)
    source = experiment.log
    assert source is not None  # the config requires it for the interleaved design
    unit = experiment.analysis.unit or "user_id"
    keep = needed_columns(experiment)
    log_source = resolved["log.path"]
    files = log_source.files
    shown = display_path(files[0])

    say(f"loading the interleaved log ({shown_files(files)})")
    teams = [arm.name for arm in experiment.arms]
    log, sizes = read_window(
        impression_reader(source, keep, experiment.segments.columns, teams, files=log_source),
        files,
        key="impression_id",
        order=("impression_id", "rank"),
        what="impression",
    )
    read = [log_source.entry(file, rows) for file, rows in sizes]
    wanted = [("team", "the arm that contributed each result"), (unit, "analysis.unit")]
    wanted += [(c, "segments.columns") for c in experiment.segments.columns]
    if "sat_clicks" in experiment.metrics:
        wanted.append(("dwell", "metrics: sat_clicks counts the clicks by their dwell time"))
    for column, hint in wanted:
        if column not in log.columns:
            # every column, for the message
            found = impression_reader(source, files=log_source)(files[0]).columns
            raise DataError(
                f"{files[0]}: expected a {column} column ({hint}), found columns: "
                f"{', '.join(map(str, found))}"
            )
    checked = {c: "segments.columns" for c in experiment.segments.columns}
    # messages name the file as the reader's do: as the config resolved its path
    check_impression_columns(log, {unit: "analysis.unit", **checked}, str(files[0]))
    check_teams(log, [arm.name for arm in experiment.arms], str(files[0]))
    rankings, ranking_inputs = source_rankings(experiment, resolved, say)
    return InterleavedData(log, rankings, [*read, *ranking_inputs], shown)


def source_rankings(
    experiment: Experiment, inputs: Inputs, say: Progress
) -> tuple[dict[str, pd.DataFrame], list[dict[str, Any]]]:
    """The arms' source rankings (small files, read in Python on every engine, on the run
    date) and their ``inputs`` entries."""
    rankings: dict[str, pd.DataFrame] = {}
    read = []
    for index, arm in enumerate(experiment.arms):
        source = inputs.get(arm_key(index))
        if source is None:
            continue
        path = source.file
        say(f"loading the source ranking of {arm.name} ({display_path(path)})")
        rankings[arm.name] = ranking_reader(experiment, arm, source)(path)
        read.append(source.entry(path, len(rankings[arm.name])))
    return rankings, read


def needed_columns(experiment: Experiment) -> list[str]:
    """The log's columns an interleaving experiment reads besides impression_id, rank and
    clicked: the unit, the team, the segments, ``dwell`` for satisfied clicks, ``query``
    and ``doc_id`` (when the log has them)."""
    wanted = [experiment.analysis.unit or "user_id", "team", *experiment.segments.columns]
    if "sat_clicks" in experiment.metrics:
        wanted.append("dwell")
    wanted += ["query", "doc_id"]  # the same-list and fixed-list checks
    return list(dict.fromkeys(wanted))


def check_impression_columns(log: pd.DataFrame, columns: dict[str, str], path: str) -> None:
    """DataError naming the first row (impression and rank) whose value of one of
    ``columns`` (column -> the config key that names it: the unit, the segments) is missing
    or differs from the value of its impression's first row: every impression belongs to
    one unit and one value of each segment column. Rows come by impression, then rank."""
    impression = log["impression_id"].cat.codes.to_numpy()
    same_impression = impression[1:] == impression[:-1]

    def where(row: int) -> str:
        return f"{path}: impression {log['impression_id'].iloc[row]!s}, rank {int(log['rank'].iloc[row])}"

    for column, key in columns.items():
        missing = log[column].isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise DataError(
                f"{where(row)}: {column}: expected a value ({key}), got a missing value"
            )
        codes = column_codes(log[column])
        changes = np.flatnonzero(same_impression & (codes[1:] != codes[:-1]))
        if changes.size:
            row = int(changes[0]) + 1
            raise DataError(
                f"{where(row)}: {column}: expected one value per impression ({key}), "
                f"got {str(log[column].iloc[row])!r} after {str(log[column].iloc[row - 1])!r}"
            )


def check_teams(log: pd.DataFrame, arms: list[str], path: str) -> None:
    """DataError when a team value names no arm (the first such row: its impression and
    rank) or when an arm contributed no result at all."""
    team = log["team"]
    categories = [str(c) for c in team.cat.categories]
    unknown = [c for c in categories if c not in arms]
    if unknown:
        bad = np.isin(team.cat.codes.to_numpy(), [categories.index(c) for c in unknown])
        row = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"{path}: impression {log['impression_id'].iloc[row]!s}, rank "
            f"{int(log['rank'].iloc[row])}: team: expected one of the arms "
            f"({', '.join(arms)}), got {str(team.iloc[row])!r}"
        )
    used = set(np.asarray(team.cat.categories)[np.unique(team.cat.codes.to_numpy())])
    absent = [arm for arm in arms if arm not in used]
    if absent:
        raise DataError(
            f"{path}: team: expected results from every arm ({', '.join(arms)}), got none "
            f"from {', '.join(repr(a) for a in absent)}"
        )


def score_interleaved(experiment: Experiment, data: InterleavedData) -> InterleavedScores:
    """The per-impression outcomes of every pair of arms and credit, and the log's totals."""
    from abrank.interleaving import fixed_lists, impression_outcomes

    log = data.log
    unit = experiment.analysis.unit or "user_id"
    heads = _first_rows(log)
    segments = {c: log[c].iloc[heads].to_numpy() for c in experiment.segments.columns}
    outcomes: dict[tuple[str, str], pd.DataFrame] = {}
    rows = credit_rows(log, heads)
    # the ids as integer codes (decoded below): crediting then never handles id text
    ids = {"impression_id": log["impression_id"], "user_id": log[unit]}
    codes = {name: column_codes(column) for name, column in ids.items()}
    frame = log.take(rows).assign(**{name: c[rows] for name, c in codes.items()})
    for pair in arm_pairs(experiment):
        for credit in experiment.metrics:
            table = impression_outcomes(
                frame,
                control=pair.control,
                treatment=pair.treatment,
                credit=credit,
                sat_dwell=experiment.analysis.sat_dwell,
            )
            table = table.assign(
                **{name: decoded(ids[name], table[name].to_numpy()) for name in ids}
            )
            if unit == "impression_id":  # each impression its own unit: one id column
                table = table.drop(columns="user_id")
            elif unit != "user_id":
                table = table.rename(columns={"user_id": unit})
            outcomes[(pair.name, credit)] = table.assign(**segments)
    first = next(iter(outcomes.values()))
    counts = first["first_team"].astype(str).value_counts()
    pairs = {pair.name: pair for pair in arm_pairs(experiment)}
    teams = {key: (pairs[key[0]].control, pairs[key[0]].treatment) for key in outcomes}
    return InterleavedScores(
        outcomes=outcomes,
        impressions=len(first),
        units=int(first[unit].nunique()),
        clicked=int(first["clicked"].sum()),
        per_arm=arm_reach(log, heads, [arm.name for arm in experiment.arms], unit),
        first_team={arm.name: int(counts.get(arm.name, 0)) for arm in experiment.arms},
        same_lists=same_lists(log, heads, data.rankings, experiment) if data.rankings else None,
        fixed_lists=fixed_lists(log, query="query") if "query" in log.columns else None,
        evidence=counts_evidence(
            unit,
            {key: unit_counts(t, unit, *teams[key]) for key, t in outcomes.items()},
            {
                column: {
                    key: segment_unit_counts(t, column, unit, *teams[key])
                    for key, t in outcomes.items()
                }
                for column in experiment.segments.columns
            },
        ),
    )


def unit_counts(outcomes: pd.DataFrame, unit: str, control: str, treatment: str) -> pd.DataFrame:
    """Per unit of per-impression ``outcomes`` (units in order of first appearance, the
    order :func:`abrank.stats.preference_counts` gives them): :data:`COUNT_COLUMNS`."""
    codes, units = pd.factorize(outcomes[unit], sort=False)
    n = len(units)
    outcome = outcomes["outcome"].to_numpy()
    first = outcomes["first_team"].astype(str).to_numpy()
    flags = {
        "wins": outcome == 1,
        "ties": outcome == 0,
        "losses": outcome == -1,
        "clicked": outcomes["clicked"].to_numpy(dtype=bool),
        "first_control": first == control,
        "first_treatment": first == treatment,
    }
    return pd.DataFrame(
        {
            name: np.bincount(codes, weights=f, minlength=n).astype(np.int64)
            for name, f in flags.items()
        },
        index=pd.Index(units, name=unit),
    )


def segment_unit_counts(
    outcomes: pd.DataFrame, column: str, unit: str, control: str, treatment: str
) -> pd.DataFrame:
    """:func:`unit_counts` per value of ``column`` (as text, values in text order; units in
    order of first appearance among the value's impressions), indexed (value, unit)."""
    values = outcomes[column].astype(str)
    parts = []
    for value in sorted(values.unique()):
        table = unit_counts(outcomes.loc[(values == value).to_numpy()], unit, control, treatment)
        parts.append(
            table.set_index(
                pd.MultiIndex.from_product([[value], table.index], names=[column, unit])
            )
        )
    if not parts:
        empty = pd.MultiIndex.from_arrays([[], []], names=[column, unit])
        return pd.DataFrame({c: np.zeros(0, dtype=np.int64) for c in COUNT_COLUMNS}, index=empty)
    return pd.concat(parts)


def credit_rows(log: pd.DataFrame, heads: np.ndarray) -> np.ndarray:
    """The rows of the log that decide the per-impression outcomes, in log order: every
    clicked result (the credits and the any-click flag), each impression's first result
    (its first team and its unit) and the first row of each team (so that every arm is seen).
    The other rows, results nobody clicked below the first, change no outcome; leaving them
    out makes crediting several times faster on a log of ten results per impression."""
    keep = log["clicked"].to_numpy(dtype=bool, na_value=False).copy()
    keep[heads] = True
    teams = log["team"].cat.codes.to_numpy()
    for code in range(len(log["team"].cat.categories)):
        where = teams == code
        if where.any():
            keep[int(np.argmax(where))] = True
    return np.flatnonzero(keep)


def arm_reach(
    log: pd.DataFrame, heads: np.ndarray, arms: list[str], unit: str
) -> dict[str, tuple[int, int]]:
    """Per arm, the impressions and the units it contributed at least one result to: one
    count per (impression, team) pair over the log's rows, then per (unit, team) pair over
    the impressions (each impression has one unit; ``heads`` their first rows)."""
    teams = log["team"].cat.codes.to_numpy()
    categories = [str(c) for c in log["team"].cat.categories]
    k = len(categories)
    impressions = log["impression_id"].cat.codes.to_numpy().astype(np.int64)
    n = int(impressions.max()) + 1
    shown = np.bincount(impressions * k + teams, minlength=n * k).reshape(n, k) > 0
    unit_of = np.full(n, -1, dtype=np.int64)
    unit_of[impressions[heads]] = column_codes(log[unit])[heads]
    present = unit_of >= 0
    units = [
        np.count_nonzero(np.bincount(unit_of[present], weights=shown[present, j])) for j in range(k)
    ]
    per_team = np.count_nonzero(shown, axis=0)
    index = {name: j for j, name in enumerate(categories)}
    return {
        arm: (int(per_team[index[arm]]), int(units[index[arm]])) if arm in index else (0, 0)
        for arm in arms
    }


def column_codes(column: pd.Series) -> np.ndarray:
    """Integer codes of a column's values (a categorical's own codes, else factorized)."""
    return column.cat.codes.to_numpy() if hasattr(column, "cat") else pd.factorize(column)[0]


def decoded(column: pd.Series, codes: np.ndarray) -> np.ndarray | ExtensionArray:
    """The values of ``column`` whose :func:`column_codes` are ``codes`` (a Categorical for
    a categorical column; an extension array for a column of an extension type)."""
    if isinstance(column.dtype, pd.CategoricalDtype):  # (what has a .cat accessor)
        return pd.Categorical.from_codes(codes, dtype=column.dtype)
    return pd.unique(column)[codes]


def _first_rows(log: pd.DataFrame) -> np.ndarray:
    """The row of each impression's first result (rows come by impression, then rank)."""
    codes = log["impression_id"].cat.codes.to_numpy()
    return np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])


def same_lists(
    log: pd.DataFrame,
    heads: np.ndarray,
    rankings: dict[str, pd.DataFrame],
    experiment: Experiment,
) -> SameLists | None:
    """How many impressions showed a list whose top n the control's and the first
    treatment's source rankings share exactly (n = the impression's length): for each
    query, the depth to which both rankings agree, compared with each impression's length
    (``heads``: each impression's first row)."""
    control = experiment.control.name
    other = next((t.name for t in experiment.treatments if t.name in rankings), None)
    if control not in rankings or other is None:
        return None
    agree = agreement_depth(rankings[control], rankings[other])
    lengths = np.diff(np.r_[heads, len(log)])
    if "query" not in log.columns:
        return SameLists(compared=0, same=0, unmatched=int(heads.size))
    queries = log["query"].iloc[heads].astype(str).to_numpy()
    depth = agree.reindex(queries).to_numpy()
    known = ~np.isnan(depth)
    return SameLists(
        compared=int(known.sum()),
        same=int((depth[known] >= lengths[known]).sum()),
        unmatched=int((~known).sum()),
    )


def agreement_depth(first: pd.DataFrame, second: pd.DataFrame) -> pd.Series:
    """Per query both rankings hold: the number of leading ranks at which they show the
    same document (their common prefix; its length when one is a prefix of the other).
    Positions count each query's rows in rank order, whatever the order of the frame's rows
    (a rankings file need not be sorted)."""
    a, b = (
        frame[["query_id", "doc_id", "rank"]]
        .astype({"query_id": str, "doc_id": str})
        .sort_values(["query_id", "rank"], kind="stable")
        for frame in (first, second)
    )
    a = a.assign(position=a.groupby("query_id").cumcount() + 1)
    b = b.assign(position=b.groupby("query_id").cumcount() + 1)
    both = a.merge(b, on=["query_id", "position"], how="inner", suffixes=("_a", "_b"))
    common = pd.Index(a["query_id"].unique()).intersection(b["query_id"].unique())
    a_sizes = a.groupby("query_id").size().reindex(common)
    shorter = a_sizes.clip(upper=b.groupby("query_id").size().reindex(common))
    differ = both.loc[both["doc_id_a"] != both["doc_id_b"]]
    first_difference = differ.groupby("query_id")["position"].min().reindex(common)
    return (first_difference - 1).fillna(shorter).astype(float)


def compare_interleaved_arms(
    experiment: Experiment, scores: InterleavedScores
) -> tuple[list, list[dict]]:
    """Every (pair, credit) comparison on its per-unit counts, overall and per segment value
    (those with fewer than ``segments.min_queries`` units skipped), p-values adjusted per
    family as for the other designs (:func:`~abrank.analysis.comparisons.compare_all`)."""
    return compare_all(experiment, CountSamples(experiment, scores))


class CountSamples:
    """The interleaved design's samples for the comparison loop: from the evidence, a
    pair's per-unit counts of wins, ties, losses and first teams under a credit (the
    design's "metrics"), overall and per segment value."""

    def __init__(self, experiment: Experiment, scores: InterleavedScores):
        self.experiment = experiment
        self.evidence = scores.evidence

    def metrics(self) -> list[str]:
        return credits_of(self.evidence)

    def overall(self, pair: ArmPair, credit: str) -> pd.DataFrame:
        return credit_counts(self.evidence.sums[pair.name], credit)

    def segments(self, pair: ArmPair) -> list[tuple[str, Any]]:
        found = []
        for column in self.experiment.segments.columns:
            table = self.evidence.segment_sums[column][pair.name]
            values = set(pd.unique(table.index.get_level_values(0)))
            found += [(f"{column}={value}", (column, value)) for value in sorted(values, key=str)]
        return found

    def in_segment(self, pair: ArmPair, credit: str, key: Any) -> pd.DataFrame:
        column, value = key
        by_value = self.evidence.segment_sums[column][pair.name]
        return credit_counts(by_value.loc[by_value.index.get_level_values(0) == value], credit)

    def size(self, samples: pd.DataFrame) -> int:
        return len(samples)

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        return done(
            lambda: [
                compare_counts(self.experiment, table, pair, credit, segment)
                for credit, table in samples.items()
            ]
        )

    def lower_is_better(self, metric: str) -> bool:
        return False  # a credit counts clicks won: more is always better


def compare_counts(
    experiment: Experiment, table: pd.DataFrame, pair: Any, credit: str, segment: str | None
) -> Any:
    """One interleaved comparison of a pair by ``credit`` from per-unit counts
    (:data:`COUNT_COLUMNS`), with the pair's first-team check."""
    from abrank.stats import PreferenceCounts, compare_interleaved

    counts = PreferenceCounts(
        wins=table["wins"].to_numpy(),
        ties=table["ties"].to_numpy(),
        losses=table["losses"].to_numpy(),
        clicked=table["clicked"].to_numpy(),
    )
    first = {
        pair.control: int(table["first_control"].sum()),
        pair.treatment: int(table["first_treatment"].sum()),
    }
    return compare_interleaved(
        counts,
        unit=experiment.analysis.unit or "user_id",
        metric=credit,
        treatment_name=pair.name,
        segment=segment,
        teams=(pair.control, pair.treatment),
        first_team=first,
        settings=test_settings(experiment),
    )
