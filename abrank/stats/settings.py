"""How a run tests its comparisons, as one typed value instead of a bag of keywords.

Every comparison of a run uses the same tests at the same level, with the same resamples
and seed (DESIGN.md "Statistics"). :class:`TestSettings` holds them; the analysis builds
it once from the config (:meth:`TestSettings.from_analysis`) and hands it to each design's
test (:func:`abrank.stats.compare_metrics`, :func:`abrank.stats.compare_clustered_metrics`,
:func:`abrank.stats.compare_interleaved` take ``settings=``), and the planner can hand the
same value to the same tests. The public functions keep their keywords for one-off calls.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["TestSettings"]

DEFAULT_TESTS = ("t", "permutation", "bootstrap")


@dataclasses.dataclass(frozen=True)
class TestSettings:
    """The tests of every comparison: ``primary_test`` decides the verdict and the interval,
    ``tests`` run beside it; the verdicts' ``alpha`` and the intervals' ``confidence_level``;
    ``n_resamples`` of the resampling tests and their ``seed``; ``sequential_tuning``, the
    N* of the ``sequential`` test's confidence sequence (None: the comparison's own size)."""

    __test__ = False  # not a pytest class, whatever its name

    primary_test: str = "t"
    tests: tuple[str, ...] = DEFAULT_TESTS
    alpha: float = 0.05
    confidence_level: float = 0.95
    n_resamples: int = 10_000
    seed: int | None = 0
    sequential_tuning: int | None = None

    @classmethod
    def from_analysis(cls, analysis: Any) -> TestSettings:
        """The settings of a config's ``analysis`` section (names already canonical)."""
        return cls(
            primary_test=analysis.primary_test,
            tests=tuple(analysis.tests),
            alpha=analysis.alpha,
            confidence_level=analysis.confidence_level,
            n_resamples=analysis.resamples,
            seed=analysis.seed,
            sequential_tuning=analysis.sequential_tuning,
        )

    def keywords(self, *, sequential: bool = True) -> dict[str, Any]:
        """The settings as the public functions' keywords (without ``sequential_tuning``
        for a test that has no confidence sequence)."""
        out = dataclasses.asdict(self)
        if not sequential:
            del out["sequential_tuning"]
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        out = dataclasses.asdict(self)
        out["tests"] = list(self.tests)
        return out
