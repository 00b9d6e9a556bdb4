"""The keys of offline rankings: the relevance judgments their judged metrics read.

An offline experiment replays the same queries through each ranker (a TREC run or a table
per arm) and scores the rankings against judgments (qrels), unless the logs carry labels of
their own. The options of the judged metrics are top-level keys of the experiment
(:class:`abrank.config.experiment.Experiment`: ``relevance_threshold``, ``no_relevant``,
``gain``, ``depth``, ``duplicates``) and ``analysis.missing_queries``; their values and the
judgments file are described here.
"""

from __future__ import annotations

from typing import Literal

from abrank.config.keys import INPUT_FORMATS, Columns, DecimalMark, Separator, Strict
from abrank.config.paths import resolved
from abrank.config.problems import Checks

#: ``no_relevant``: a query on which a metric is undefined (nothing relevant) is dropped
#: from that metric's comparisons, or scores 0 as trec_eval scores it.
NoRelevant = Literal["drop", "zero"]
#: ``gain``: NDCG's gain of a grade, the grade itself (trec_eval) or 2^grade - 1.
Gain = Literal["linear", "exp"]
#: ``duplicates``: a (query, document) pair ranked twice is an error, or its first row counts.
Duplicates = Literal["error", "first"]
#: ``analysis.missing_queries``: a query missing from an arm's log scores 0, is dropped
#: from the comparison, or is an error.
MissingQueries = Literal["zero", "drop", "error"]


class JudgmentsConfig(Strict):
    """The relevance judgments (qrels), when the logs carry no labels of their own."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


def resolved_judgments(checks: Checks, judgments: JudgmentsConfig | None) -> JudgmentsConfig | None:
    """The judgments with their absolute path (its problems go to ``checks``)."""
    if judgments is None:
        return None
    return judgments.model_copy(
        update={"path": resolved(checks, ("judgments", "path"), judgments.path)}
    )
