"""The ``analysis`` section: how the arms are compared (DESIGN.md "Statistics").

The design, the tests and corrections (names of :mod:`abrank.stats.registry`, checked
against the design and made canonical), the level, resampling and seed, and sequential
inference; then the keys of impression logs (:class:`abrank.config.online.OnlineKeys`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from abrank.config.counterfactual import CounterfactualKeys
from abrank.config.keys import Strict
from abrank.config.offline import MissingQueries
from abrank.config.online import OnlineKeys
from abrank.config.problems import Checks
from abrank.design_registry import DESIGNS
from abrank.stats import registry as stats_registry
from abrank.stats.registry import INTERLEAVED, INTERLEAVED_TESTS


class StatisticsKeys(Strict):
    """The ``analysis`` keys of every design: design, tests, corrections, level, seed."""

    #: paired, independent, interleaved, or the name of a design added with
    #: :func:`abrank.designs.register`
    design: str = "paired"
    missing_queries: MissingQueries = "zero"
    alpha: float = Field(default=0.05, gt=0, lt=1)
    confidence_level: float = Field(default=0.95, gt=0, lt=1)
    # test and correction names: abrank.stats.registry, checked against the design below
    primary_test: str = "t"
    tests: list[str] = ["t", "permutation", "bootstrap"]
    #: always-valid inference (a cumulative readout looked at every day): the primary test
    #: becomes ``sequential``, a confidence sequence (abrank.stats.sequential); t stays beside it
    sequential: bool = False
    #: N*: the planned horizon, the sample size (queries, or units of both arms) at which
    #: the confidence sequence is tightest; null: each comparison's own sample size
    sequential_tuning: int | None = Field(default=None, ge=1)
    resamples: int = Field(default=10_000, ge=100, le=10_000_000)
    correction: str = "holm"
    segment_correction: str = "fdr_bh"
    seed: int = Field(default=0, ge=0)
    #: with human and machine judgments: which estimate the comparisons report (human
    #: labels only, machine-filled, or prediction-powered); None: ppi (needs a machine
    #: judgments source, abrank.config.judgments)
    judgments_estimate: Literal["human", "filled", "ppi"] | None = None

    @field_validator("design")
    @classmethod
    def _known_design(cls, value: str) -> str:
        if value in stats_registry.DESIGNS or value in DESIGNS.selectable():
            return value
        names = [*stats_registry.DESIGNS, *DESIGNS.selectable()]
        listed = ", ".join(repr(n) for n in names[:-1]) + f" or {names[-1]!r}"
        raise ValueError(listed)


class AnalysisConfig(CounterfactualKeys, OnlineKeys, StatisticsKeys):
    """How the arms are compared: the statistics keys, then the online keys, then the
    counterfactual ones (a model's fields start with its last base's, so the keys are
    listed in that order)."""


def checked_analysis(
    checks: Checks, analysis: AnalysisConfig, statistics: str = "paired"
) -> AnalysisConfig:
    """Test and correction names checked against the stats registry (the tests of the
    design: ``analysis.design``, or for a design added to :data:`abrank.designs.DESIGNS`
    the tests it uses, ``statistics``); returns a copy with canonical names."""
    design = analysis.design if analysis.design in stats_registry.DESIGNS else statistics

    def test(loc: tuple, value: str) -> str:
        problem = stats_registry.test_problem(value, design)
        if problem:
            checks.add(("analysis", *loc), problem)
            return value
        return stats_registry.test_spec(value).name

    def correction(key: str) -> str:
        value = getattr(analysis, key)
        problem = stats_registry.correction_problem(value)
        if problem:
            checks.add(("analysis", key), problem)
            return value
        return stats_registry.correction_spec(value).name

    tests = analysis.tests
    if design == INTERLEAVED and "tests" not in analysis.model_fields_set:
        tests = list(INTERLEAVED_TESTS)
    update = {
        "primary_test": test(("primary_test",), analysis.primary_test),
        "tests": [test(("tests", index), name) for index, name in enumerate(tests)],
        "correction": correction("correction"),
        "segment_correction": correction("segment_correction"),
    }
    update.update(sequential_update(checks, analysis, update))
    return analysis.model_copy(update=update)


def sequential_update(checks: Checks, analysis: AnalysisConfig, update: dict) -> dict:
    """``analysis.sequential: true`` makes ``sequential`` the primary test and adds it and
    ``t`` (the fixed-horizon second opinion) to the tests; an explicit other primary test
    beside it is a problem. A primary test ``sequential`` alone turns ``sequential`` on
    (the tests stay those listed)."""
    primary = update["primary_test"]
    explicit = "primary_test" in analysis.model_fields_set
    if analysis.sequential and explicit and primary != "sequential":
        checks.add(
            ("analysis", "primary_test"),
            f"expected 'sequential' (or no primary_test) with analysis.sequential: true, "
            f"got {analysis.primary_test!r}",
        )
        return {}
    if not analysis.sequential:
        return {"sequential": True} if primary == "sequential" else {}
    tests = list(update["tests"])
    tests += [name for name in ("t", "sequential") if name not in tests]
    return {"primary_test": "sequential", "tests": tests}
