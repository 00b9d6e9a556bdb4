"""The keys of counterfactual evaluation (``analysis.design: counterfactual``).

A counterfactual experiment reads the click logs of the rankers that were shown (``log:``
with an arm column, or a path per arm: the control and the treatments, as for an online
test) and predicts the click metrics of ``candidates``, rankings that were never shown
(TREC runs or tables keyed by the log's ``query`` column). ``propensities`` says where the
examination by rank comes from: ``harvest`` (estimated from the logs, the default),
``column`` (the log's ``propensity`` column) or a mapping rank -> value. The ``analysis``
keys :class:`CounterfactualKeys` hold the support threshold, the estimator and the
bootstrap of the harvested propensities (DESIGN.md "Counterfactual evaluation").
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from abrank.config.keys import INPUT_FORMATS, Columns, DecimalMark, Separator, Slug, Strict
from abrank.config.offline import Duplicates
from abrank.config.paths import resolved
from abrank.config.problems import Checks

#: ``propensities:``: harvested, read from the log's ``propensity`` column, or rank -> value.
Propensities = Literal["harvest", "column"] | dict[int, float]


class CandidateConfig(Strict):
    """A ranking never shown: its name (a comparison's ``treatment``), a label, its file."""

    name: Slug
    label: str | None = None
    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None
    decimal: DecimalMark | None = None
    columns: Columns = Columns()
    duplicates: Duplicates | None = None


class CounterfactualKeys(Strict):
    """The ``analysis`` keys of counterfactual evaluation (listed after the online keys)."""

    #: above this share of a candidate's top k never logged for its query: no verdict
    max_unsupported: float = Field(default=0.2, ge=0, le=1)
    #: the estimator of the comparisons (both are reported): self-normalised or plain IPS
    estimator: Literal["snips", "ips"] = "snips"
    #: unit-bootstrap replicates of the harvested propensities' intervals
    propensity_resamples: int = Field(default=200, ge=0, le=100_000)


def resolved_candidates(checks: Checks, candidates: list[CandidateConfig]) -> list[CandidateConfig]:
    """The candidates with absolute paths and labels; repeated names are problems."""
    seen: set[str] = set()
    out = []
    for index, candidate in enumerate(candidates):
        loc = ("candidates", index)
        if candidate.name in seen:
            checks.add(
                (*loc, "name"), f"expected a unique candidate name, got {candidate.name!r} again"
            )
        seen.add(candidate.name)
        path = resolved(checks, (*loc, "path"), candidate.path)
        out.append(
            candidate.model_copy(update={"path": path, "label": candidate.label or candidate.name})
        )
    return out


def propensity_problems(propensities: Propensities) -> list[tuple[tuple, str]]:
    """What is wrong with a ``propensities:`` mapping: ranks 1..R each once from 1, values
    in (0, 1] (relative to rank 1 when rank 1 is not 1: they are rescaled)."""
    if not isinstance(propensities, dict):
        return []
    found: list[tuple[tuple, str]] = []
    ranks = sorted(propensities)
    if ranks != list(range(1, len(ranks) + 1)):
        found.append(
            (
                ("propensities",),
                f"expected ranks 1, 2, ... up to the deepest with none missing, got "
                f"{', '.join(map(str, ranks)) or 'none'}",
            )
        )
    for rank, value in propensities.items():
        if not (math.isfinite(value) and 0 < value <= 1):
            found.append(
                (("propensities", rank), f"expected a propensity in (0, 1], got {value!r}")
            )
    return found
