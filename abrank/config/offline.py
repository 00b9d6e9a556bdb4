"""The keys of offline rankings: the relevance judgments their judged metrics read.

An offline experiment replays the same queries through each ranker (a TREC run or a table
per arm) and scores the rankings against judgments (qrels), unless the logs carry labels of
their own. The options of the judged metrics are top-level keys of the experiment
(:class:`abrank.config.experiment.Experiment`: ``relevance_threshold``, ``no_relevant``,
``gain``, ``depth``, ``duplicates``) and ``analysis.missing_queries``; their values and the
judgments file are described here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Tag

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


#: ``judgments[].kind``: graded by people, or by a model (an LLM assessor's labels).
JudgmentKind = Literal["human", "machine"]


class JudgmentsConfig(Strict):
    """The relevance judgments (qrels), when the logs carry no labels of their own: one
    source (a mapping, human labels), or a list of sources each with its ``kind``
    (:mod:`abrank.config.judgments`: one human source and at most one machine source)."""

    path: str
    #: human labels, or a model's (machine labels, DESIGN.md "Machine-labelled judgments")
    kind: JudgmentKind = "human"
    #: the model that produced machine labels (its family is compared with the
    #: treatments' ``uses_model``)
    model: str | None = None
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


#: The tags of the two forms of ``judgments:``; not key names (they hold a space), so that
#: the config's messages leave them out of a field's path (abrank.config.build).
JUDGMENT_FORMS = ("one source", "list of sources")


def _judgments_form(value: Any) -> str:
    """Which form of ``judgments:`` a value is: a list, or anything else (one source)."""
    return JUDGMENT_FORMS[1] if isinstance(value, list) else JUDGMENT_FORMS[0]


#: ``judgments:`` as written: one source (human labels), or a list of sources with kinds;
#: validated as the form the value has (a mapping, or a list), so that a problem is
#: reported once, in that form's words.
Judgments = Annotated[
    Annotated[JudgmentsConfig, Tag(JUDGMENT_FORMS[0])]
    | Annotated[list[JudgmentsConfig], Tag(JUDGMENT_FORMS[1])],
    Discriminator(_judgments_form),
]


def resolved_judgments(
    checks: Checks, judgments: JudgmentsConfig | list[JudgmentsConfig] | None
) -> JudgmentsConfig | list[JudgmentsConfig] | None:
    """The judgments with their absolute paths (their problems go to ``checks``; a list's
    kinds are checked by :func:`abrank.config.judgments.check_sources`)."""
    if judgments is None:
        return None
    if isinstance(judgments, list):
        return [
            source.model_copy(
                update={"path": resolved(checks, ("judgments", index, "path"), source.path)}
            )
            for index, source in enumerate(judgments)
        ]
    return judgments.model_copy(
        update={"path": resolved(checks, ("judgments", "path"), judgments.path)}
    )
