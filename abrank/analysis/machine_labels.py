"""Machine-labelled judgments beside human ones: three estimates of every comparison, and
how far the two kinds of label agree (DESIGN.md "Machine-labelled judgments").

abrank never calls a model: the machine labels are a judgments file like any qrels. With
a human source and a machine source, every arm is scored three times by the one scoring
engine, under (a) the human labels only, (b) machine-filled labels (the human grade where
a human judged the document, else the machine's) and (c) the machine labels only. The
comparisons are then made three ways, through the one comparison loop:

- ``human``: today's comparisons on the human labels (the queries humans judged);
- ``filled``: the same tests on the machine-filled labels (every labelled query);
- ``ppi``: prediction-powered inference (:func:`abrank.stats.ppi.compare_ppi`) on the
  paired per-query deltas: the machine-label delta on the queries humans did not judge,
  corrected by the human-minus-machine delta on the queries they did (power-tuned).
  It assumes that the human-judged queries are a uniform random sample of the queries;
  a query judged by humans is one with any human judgment. On a human-judged query where
  the machine labels leave a metric undefined (or judge nothing), the machine value is 0.

``analysis.judgments_estimate`` (default ``ppi``) chooses which one the comparisons
report (their own delta, interval and verdict, and the decision that reads them); each
comparison keeps all three in ``estimates``. The rest of the readout (per-query table,
judged@k and the unjudged-documents check, explanations) reads the machine-filled labels,
so that a document a machine labelled counts as judged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
import pandas as pd

from abrank.analysis.compare import QuerySamples, start_comparing_arms
from abrank.analysis.comparisons import ArmPair, PendingComparisons, done, start_all
from abrank.analysis.load import LoadedData
from abrank.analysis.score import JUDGED_K, ScoredArms
from abrank.config import Experiment
from abrank.readout.model import MachineLabels
from abrank.stats.agreement import agreement, kendall_tau

__all__ = [
    "ESTIMATES",
    "MachineLabelRun",
    "chosen_estimate",
    "filled_judgments",
    "label_agreement",
    "machine_label_summary",
    "start_machine_labels",
    "with_estimates",
]

#: The three estimates, in the order the readout shows them.
ESTIMATES = ("human", "filled", "ppi")
KEY = ["query_id", "doc_id"]
Scorer = Callable[[Experiment, LoadedData], ScoredArms]


def chosen_estimate(experiment: Experiment) -> str:
    """The estimate the comparisons report: ``analysis.judgments_estimate``, else ppi."""
    return experiment.analysis.judgments_estimate or "ppi"


def filled_judgments(human: pd.DataFrame, machine: pd.DataFrame) -> pd.DataFrame:
    """The machine-filled judgments: every human judgment, and the machine's grade of each
    (query, document) pair no human judged."""
    human = human[[*KEY, "relevance"]]
    machine = machine[[*KEY, "relevance"]]
    seen = pd.MultiIndex.from_frame(human[KEY])
    extra = ~pd.MultiIndex.from_frame(machine[KEY]).isin(seen)
    return pd.concat([human, machine.loc[extra]], ignore_index=True)


class PPISamples:
    """The prediction-powered design's samples for the comparison loop: per pair and
    metric, the (control, treatment) values under human labels and under machine labels
    (each on the pair's queries, by the missing-query policy); its test is
    :func:`abrank.stats.ppi.compare_ppi`, and its size the human-judged queries."""

    def __init__(
        self,
        experiment: Experiment,
        human: ScoredArms,
        machine: ScoredArms,
        segments: pd.DataFrame,
    ):
        self.experiment = experiment
        self.human = QuerySamples(experiment, human, segments)
        self.machine = QuerySamples(experiment, machine, segments)
        self.judged = human.universe

    def metrics(self) -> list[str]:
        return self.human.metrics()

    def overall(self, pair: ArmPair, metric: str) -> tuple[pd.Series, ...]:
        return (*self.human.overall(pair, metric), *self.machine.overall(pair, metric))

    def segments(self, pair: ArmPair) -> list[tuple[str, Any]]:
        return self.human.segments(pair)

    def in_segment(self, pair: ArmPair, metric: str, key: Any) -> tuple:
        return tuple(
            series.reindex(series.index.intersection(key)) for series in self.overall(pair, metric)
        )

    def size(self, samples: tuple[pd.Series, ...]) -> int:
        control, treatment = samples[0], samples[1]
        return int((control.notna() & treatment.notna()).sum())

    def lower_is_better(self, metric: str) -> bool:
        return self.human.lower_is_better(metric)

    def start(self, samples: Mapping[str, Any], pair: ArmPair, segment: str | None) -> Future:
        analysis = self.experiment.analysis
        judged = self.judged

        def compute() -> list:
            return [
                _ppi_comparison(
                    metric,
                    values,
                    judged,
                    pair.name,
                    segment,
                    analysis.alpha,
                    analysis.confidence_level,
                )
                for metric, values in samples.items()
            ]

        return done(compute)


def _ppi_comparison(
    metric: str,
    values: tuple[pd.Series, ...],
    judged: pd.Index,
    treatment: str,
    segment: str | None,
    alpha: float,
    level: float,
) -> Any:
    """One metric's prediction-powered comparison from its human and machine values."""
    from abrank.stats.ppi import compare_ppi

    h_c, h_t, m_c, m_t = values
    labelled = h_c.index[(h_c.notna() & h_t.notna()).to_numpy()]
    machine_c = m_c.reindex(labelled).fillna(0.0).to_numpy()
    machine_t = m_t.reindex(labelled).fillna(0.0).to_numpy()
    rest = m_c.index.difference(judged)
    rest = rest[(m_c.reindex(rest).notna() & m_t.reindex(rest).notna()).to_numpy()]
    return compare_ppi(
        (h_c.reindex(labelled).to_numpy(), h_t.reindex(labelled).to_numpy()),
        (machine_c, machine_t),
        (m_c.reindex(rest).to_numpy(), m_t.reindex(rest).to_numpy()),
        metric=metric,
        treatment=treatment,
        segment=segment,
        alpha=alpha,
        confidence_level=level,
    )


@dataclasses.dataclass
class MachineLabelRun:
    """The three estimates' comparisons of ``experiment`` started in the comparison
    threads, and the scores and judgments they came from (``filled_data``: the data the
    rest of the readout reads)."""

    experiment: Experiment
    human: PendingComparisons
    filled: PendingComparisons
    ppi: PendingComparisons
    scored: dict[str, ScoredArms]
    data: LoadedData  # the inputs as read (human judgments, machine judgments)
    filled_data: LoadedData  # the same with the machine-filled judgments

    def pending(self) -> list[PendingComparisons]:
        return [self.human, self.filled, self.ppi]

    def result(self) -> tuple[list, list[dict]]:
        """The chosen estimate's comparisons (each with all three in ``estimates``) and
        the segment comparisons it left out as too small."""
        found = {name: getattr(self, name).result() for name in ESTIMATES}
        by_estimate = {name: comparisons for name, (comparisons, _) in found.items()}
        comparisons, too_small = found[chosen_estimate(self.experiment)]
        return with_estimates(comparisons, by_estimate), too_small


def start_machine_labels(
    experiment: Experiment,
    data: LoadedData,
    score: Scorer,
    *,
    scored_human: ScoredArms | None = None,
    human: PendingComparisons | None = None,
    segments: pd.DataFrame | None = None,
) -> MachineLabelRun:
    """Score the arms under machine-filled and machine-only labels (and under the human
    labels, unless ``scored_human`` is given) and start the three estimates' comparisons
    (``human``: the human ones, when already started), per segment of ``segments`` (the
    data's by default)."""
    assert data.machine_judgments is not None
    segments = data.segments if segments is None else segments
    if scored_human is None:
        scored_human = score(experiment, data)
    if human is None:
        human = start_comparing_arms(experiment, scored_human, segments)
    filled_data = dataclasses.replace(
        data,
        judgments=filled_judgments(data.judgments, data.machine_judgments),
        labels="filled",
    )
    machine_data = dataclasses.replace(data, judgments=data.machine_judgments, labels="machine")
    scored_filled = score(experiment, filled_data)
    scored_machine = score(experiment, machine_data)
    filled = start_comparing_arms(experiment, scored_filled, segments)
    ppi = start_all(experiment, PPISamples(experiment, scored_human, scored_machine, segments))
    scored = {"human": scored_human, "filled": scored_filled, "machine": scored_machine}
    return MachineLabelRun(experiment, human, filled, ppi, scored, data, filled_data)


def _estimate(comparison: Any) -> dict[str, Any]:
    """One estimate as ``estimates`` holds it (a prediction-powered one also with its
    ``lambda`` and the machine-only queries, ``n_unlabelled``)."""
    out = {
        "delta": comparison.delta,
        "ci": list(comparison.ci),
        "p_value": comparison.p_value,
        "p_adjusted": comparison.p_adjusted,
        "verdict": comparison.verdict,
        "n": comparison.n,
        "method": comparison.primary_test,
    }
    ppi = comparison.extra.get("ppi")
    if isinstance(ppi, dict):
        out.update({"lambda": ppi.get("lambda"), "n_unlabelled": ppi.get("n_unlabelled")})
    return out


def with_estimates(comparisons: list, by_estimate: Mapping[str, Sequence[Any]]) -> list:
    """``comparisons`` each with ``estimates``: its counterpart under every estimate (by
    metric, treatment and segment; None where that estimate has none)."""
    index = {
        name: {(c.metric, c.treatment, c.segment): c for c in found}
        for name, found in by_estimate.items()
    }
    out = []
    for comp in comparisons:
        key = (comp.metric, comp.treatment, comp.segment)
        estimates = {
            name: (_estimate(index[name][key]) if key in index[name] else None)
            for name in ESTIMATES
        }
        out.append(dataclasses.replace(comp, estimates=estimates))
    return out


def verdicts_changed(comparisons: Sequence[Any]) -> list[dict[str, Any]]:
    """The overall comparisons whose verdict is not the same under the three estimates."""
    changed = []
    for comp in comparisons:
        if comp.segment is not None or not comp.estimates:
            continue
        verdicts = {
            name: (est["verdict"] if est is not None else None)
            for name, est in comp.estimates.items()
        }
        if len({v for v in verdicts.values() if v is not None}) > 1:
            changed.append({"metric": comp.metric, "treatment": comp.treatment, **verdicts})
    return changed


def changed_notes(changed: Sequence[Mapping[str, Any]], chosen: str, several: bool) -> list[str]:
    """A headline note per comparison whose verdict depends on the labels."""
    words = {"human": "human labels only", "filled": "machine-filled", "ppi": "prediction-powered"}
    notes = []
    for entry in changed:
        subject = f"{entry['metric']} ({entry['treatment']})" if several else entry["metric"]
        parts = ", ".join(
            f"{entry[name] or 'not tested'} {words[name]}"
            + (" (the readout's)" if name == chosen else "")
            for name in ESTIMATES
        )
        notes.append(f"{subject}: the verdict depends on the labels: {parts}")
    return notes


def machine_label_summary(
    experiment: Experiment, run: MachineLabelRun, comparisons: Sequence[Any]
) -> MachineLabels:
    """``diagnostics.machine_labels`` of a run (:func:`label_agreement`), with the verdicts
    that change between the estimates of ``comparisons`` (:func:`with_estimates`'s)."""
    return label_agreement(experiment, run.data, run, verdicts_changed(comparisons))


def label_agreement(
    experiment: Experiment, data: LoadedData, run: MachineLabelRun, changed: list[dict]
) -> MachineLabels:
    """``diagnostics.machine_labels``: agreement of the two kinds of label where both
    judged a document, overall and per arm (documents in the arm's top k), Kendall's tau
    between the (arm, metric) means under each kind, and the verdicts that change."""
    assert data.machine_judgments is not None
    both = _both(data.judgments, data.machine_judgments)
    overall = agreement(both["human"].to_numpy(), both["machine"].to_numpy())
    per_arm = {}
    for arm, frame in (data.shown if data.shown is not None else data.rankings).items():
        top = frame.loc[frame["rank"] <= JUDGED_K, KEY].drop_duplicates()
        shown = both.merge(top, on=KEY, how="inner")
        found = agreement(shown["human"].to_numpy(), shown["machine"].to_numpy()).to_dict()
        per_arm[arm] = {k: v for k, v in found.items() if k != "confusion"}
    human_means = _means(run.scored["human"])
    machine_means = _means(run.scored["machine"])
    keys = sorted(set(human_means) & set(machine_means))
    tau = kendall_tau(
        np.array([human_means[k] for k in keys]), np.array([machine_means[k] for k in keys])
    )
    figures = overall.to_dict()
    machine = experiment.machine_judgments
    return MachineLabels(
        overlap=figures["overlap"],
        kappa_linear=figures["kappa_linear"],
        kappa_quadratic=figures["kappa_quadratic"],
        confusion=figures["confusion"],
        mean_difference=figures["mean_difference"],
        per_arm=per_arm,
        tau=tau if math.isfinite(tau) else None,
        estimate=chosen_estimate(experiment),
        k=JUDGED_K,
        human_queries=int(run.scored["human"].universe.size),
        machine_queries=int(pd.unique(data.machine_judgments["query_id"]).size),
        model=machine.model if machine is not None else None,
        verdicts_changed=tuple(changed),
    )


def _both(human: pd.DataFrame, machine: pd.DataFrame) -> pd.DataFrame:
    """The (query, document) pairs both kinds judged, with columns human and machine."""
    return (
        human[[*KEY, "relevance"]]
        .merge(machine[[*KEY, "relevance"]], on=KEY, how="inner", suffixes=("_h", "_m"))
        .rename(columns={"relevance_h": "human", "relevance_m": "machine"})
    )


def _means(scored: ScoredArms) -> dict[tuple[str, str], float]:
    """Each (arm, metric) mean over the queries on which the metric is defined."""
    return {
        (arm, metric): float(values[metric].mean())
        for arm, values in scored.values.items()
        for metric in values.columns
        if values[metric].notna().any()
    }
