"""The offline design: rankings replayed against judgments, compared query by query.

Each arm's rankings (a TREC run or a table) are scored against the judgments per query
(:mod:`abrank.engines`), the arms are compared on the per-query values (paired over the
queries they share, or independent), and the comparisons are repeated on judged
documents only when the arms' judged@k differ (DESIGN.md "Metrics", "Statistics").
"""

from __future__ import annotations

from typing import Any

from abrank.config import Experiment


class OfflineDesign:
    """Offline replays: what every A/B config that reads no impression log is."""

    name = "offline"
    #: rankings of millions of rows: the allocator keeps what it frees for the next
    #: temporaries (100k queries x 100 per arm: the memory engine 18 s -> 14 s, DuckDB
    #: 20 s -> 18.5 s, the same peak)
    large_logs = True
    statistics = "paired"
    #: reads machine labels beside human ones (``judgments`` of kind machine)
    machine_labels = True

    def claims(self, experiment: Experiment) -> bool:
        """Every config that no other design claims."""
        return True

    def reads(self, summary: Any) -> bool:
        """Readouts without a unit (queries are the unit)."""
        return getattr(summary, "unit", None) is None

    def metric_name(self, name: str) -> str:
        """A metric's canonical name (:func:`abrank.metrics.parse_metric`)."""
        from abrank.metrics import parse_metric

        return parse_metric(name).name

    def metric_label(self, experiment: Experiment, name: str) -> str:
        """The metric's label (``MRR@10``)."""
        from abrank.metrics import parse_metric

        return parse_metric(name).label

    def check(self, checks: Any, experiment: Experiment, analysis: Any) -> Any:
        """The A/B keys: no unit without impressions, a split over the arms; machine
        judgments only in the paired design."""
        from abrank.config.online import checked_online

        if experiment.machine_judgments is not None and analysis.design != "paired":
            checks.add(
                ("analysis", "design"),
                "expected paired with a judgments source of kind machine (prediction-powered "
                f"inference corrects each query's delta), got {analysis.design!r}",
            )
        return checked_online(
            checks,
            analysis,
            design=analysis.design,
            online=False,
            arms=[str(arm.name) for arm in experiment.arms],
        )

    def arm_holds(self, experiment: Experiment) -> tuple[str, bool]:
        """An arm's files are its rankings, read for every date of a window."""
        return "rankings", True

    def check_engine(self, experiment: Experiment, engine: str) -> None:
        """Every engine runs offline experiments on judged metrics; the SQL engines all
        families but those :data:`abrank.engines.UNSUPPORTED_FAMILIES` names."""
        from abrank.engines import check_metrics, check_supported

        check_supported(engine, "offline")
        check_metrics(engine, experiment.metrics)

    def run(
        self, experiment: Experiment, inputs: Any, say: Any, engine: Any, *, explain: bool = True
    ) -> Any:
        """Rankings and judgments, per-query metrics, paired comparisons, the readout (with
        its explanation tables when ``explain``: on an SQL engine, each arm's top rows come
        back from the engine for them).

        The judged-only repetition is scored and started while the comparisons run, so
        that the comparison threads never wait for it (its numbers are the same whenever
        it runs).
        """
        from abrank.analysis.compare import start_comparing_arms
        from abrank.analysis.comparisons import cancelled_on_error
        from abrank.analysis.machine_labels import machine_label_summary, start_machine_labels
        from abrank.analysis.summarise import build_readout
        from abrank.analysis.unjudged import check_reason, judged_only_result
        from abrank.designs.offline.explain import sql_explanation_inputs, with_explanation
        from abrank.designs.offline.sql import offline_inputs

        opened = offline_inputs(experiment, engine, say, inputs=inputs, explain=explain)
        with opened as (data, score):
            say("scoring queries")
            scored = score(experiment, data)
            say("comparing arms")
            started = [start_comparing_arms(experiment, scored, data.segments)]
            labels = None
            with cancelled_on_error(started):
                if data.machine_judgments is not None:
                    say("scoring and comparing under machine labels")
                    labels = start_machine_labels(
                        experiment, data, score, scored_human=scored, human=started[0]
                    )
                    started += labels.pending()[1:]
                    # the rest of the readout reads the machine-filled labels
                    data, scored = labels.filled_data, labels.scored["filled"]
                repeated = check_reason(scored.judged_at_k) is not None
                judged_only: Any = None
                if repeated:
                    say("repeating the comparisons on judged documents only")
                    judged_only = _start_judged_only(experiment, data, score, labels)
                    if judged_only is not None:
                        started += judged_only.pending() if labels else [judged_only]
                if labels is None:
                    comparisons, too_small = started[0].result()
                    machine = None
                else:
                    comparisons, too_small = labels.result()
                    machine = machine_label_summary(experiment, labels, comparisons)
                condensed = judged_only_result(judged_only) if repeated else None
            # an SQL engine selects the lists of the explanation tables while it is open
            tables = sql_explanation_inputs(experiment, score, scored, say) if explain else None
        say("summarising")
        readout = build_readout(
            experiment, data, scored, comparisons, too_small, condensed, machine_labels=machine
        )
        if not explain:
            return readout
        return with_explanation(readout, experiment, data, scored, say, tables)

    def validate(self, experiment: Experiment, inputs: Any, engine: Any) -> dict[str, Any]:
        """The queries of each arm's rankings and the judged queries (opened by the chosen
        engine: on an SQL engine, counted where the files lie)."""
        from abrank.analysis.validate import ArmInputs
        from abrank.designs.offline.sql import check_offline_inputs

        counts = check_offline_inputs(experiment, engine, _quiet, inputs=inputs)
        arms = tuple(ArmInputs(name, queries=int(n)) for name, n in counts.queries.items())
        return {"arms": arms, "judged_queries": int(counts.judged)}

    def report(self) -> Any:
        """Positions of the first relevant document, per-arm judged coverage, unjudged
        documents, the queries that moved most."""
        from abrank.designs.offline.sections import (
            moves_section,
            offline_facts,
            offline_table,
            positions_section,
        )
        from abrank.render.sections import KindSections
        from abrank.render.what_moved_section import what_moved_section

        return KindSections(
            positions_section,
            offline_table,
            offline_facts,
            per_query=True,
            moves=moves_section,
            moved=what_moved_section,
        )


def _start_judged_only(experiment: Experiment, data: Any, score: Any, labels: Any) -> Any:
    """The judged-only repetition, started: of the experiment's comparisons, or with
    machine labels (``labels``) of the chosen estimate's, each judged-only metric scored
    under human, machine-filled and machine labels as the plain ones are (None when no
    metric has a judged-only twin)."""
    from abrank.analysis.machine_labels import start_machine_labels
    from abrank.analysis.unjudged import judged_only_experiment, start_judged_only

    if labels is None:
        return start_judged_only(experiment, data, score)
    condensed = judged_only_experiment(experiment)
    if condensed is None:
        return None
    return start_machine_labels(
        condensed, labels.data, score, segments=labels.data.segments.iloc[:, :0]
    )


def _quiet(message: str) -> None:
    """Progress messages are not shown while validating."""


DESIGN = OfflineDesign()

__all__ = ["DESIGN", "OfflineDesign"]
