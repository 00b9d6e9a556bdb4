"""Sample ratio mismatch: were units split between the arms as the design said?

When an experiment meant to send half its users to each arm ends with visibly more in one,
something between randomization and logging lost or added users (a crash in one arm, a bot
filter, a redirect), and every comparison of the arms is suspect. The check is Pearson's
chi-square goodness of fit of the units per arm against the expected shares (Fabijan et al.,
KDD 2019); an alarm is raised below a strict ``alpha`` (0.001 by default), because the check
runs on every readout and a false alarm discards a good experiment.

The chi-square p-value is an approximation that is poor in the far tail when few units are
expected per arm: at ``alpha`` 0.001 with about 20 expected per arm it raises the alarm up to
1.7 times as often as it should. Below :data:`EXACT_BELOW` expected units in some arm the
p-value is therefore the exact multinomial test's (two arms: the exact binomial test, as
``scipy.stats.binomtest``): the probability, under the expected shares, of every split of
the same total that is no more likely than the one observed. Its false-alarm rate never
exceeds ``alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from abrank.errors import ConfigError, DataError

SRM_ALPHA = 0.001
"""The p-value below which a sample ratio mismatch raises the alarm."""

EXACT_BELOW = 1000.0
"""Below this many expected units in some arm, the exact test gives the p-value."""

EXACT_MAX_OUTCOMES = 2_000_000
"""With three arms or more, the exact test enumerates every split of the total; past this
many splits the chi-square stands in (that many only arise with hundreds of units, where
the chi-square is close)."""

_RELATIVE = 1 + 1e-7  # splits this close to the observed one's probability count as as likely


@dataclass(frozen=True)
class SampleRatioCheck:
    """The check of units per arm against the expected shares (chi-square or exact).

    ``units``: units seen per arm; ``expected``: each arm's expected share (normalised to
    sum to 1); ``chi2``: Pearson's statistic sum((observed - expected)^2 / expected) with
    len(units) - 1 degrees of freedom; ``p_value``: its upper tail (``test`` ``"chi2"``),
    or the exact multinomial test's when some arm expects fewer than :data:`EXACT_BELOW`
    units (``test`` ``"exact"``); ``alarm``: p_value < ``alpha``.
    """

    units: dict[str, int]
    expected: dict[str, float]
    chi2: float
    p_value: float
    alarm: bool
    alpha: float
    test: str = "chi2"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins: {units, expected, chi2, p_value, alarm, alpha, test}."""
        return {
            "units": dict(self.units),
            "expected": dict(self.expected),
            "chi2": float(self.chi2),
            "p_value": float(self.p_value),
            "alarm": bool(self.alarm),
            "alpha": float(self.alpha),
            "test": self.test,
        }


def sample_ratio_mismatch(
    units: Mapping[str, int],
    expected: Mapping[str, float] | None = None,
    *,
    alpha: float = SRM_ALPHA,
) -> SampleRatioCheck:
    """Chi-square goodness of fit of ``units`` (arm -> number of units) to ``expected``;
    the exact multinomial test's p-value when some arm expects fewer than
    :data:`EXACT_BELOW` units.

    ``expected`` maps every arm to its share of units (any positive weights: they are
    normalised; default equal shares). Raises ConfigError for a share that is not a
    positive number, an arm missing from ``expected`` or an arm of ``expected`` without
    units, a bad ``alpha`` or fewer than two arms; DataError for a count that is not a
    non-negative integer or when no arm has a unit.
    """
    if not isinstance(units, Mapping) or len(units) < 2:
        raise ConfigError(f"units: expected the units of at least two arms, got {units!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise ConfigError(f"alpha: expected a number between 0 and 1, got {alpha!r}")
    counts: dict[str, int] = {}
    for arm, count in units.items():
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or int(count) < 0:
            raise DataError(f"units: arm {arm!r}: expected a non-negative integer, got {count!r}")
        counts[str(arm)] = int(count)
    shares = _shares(counts, expected)
    total = sum(counts.values())
    if total == 0:
        raise DataError("units: expected at least one unit in some arm, got 0 in every arm")
    from scipy.special import chdtrc

    observed = np.array([counts[arm] for arm in counts], dtype=np.float64)
    weights = np.array([shares[arm] for arm in counts], dtype=np.float64)
    expected_counts = total * weights
    chi2 = float(np.sum((observed - expected_counts) ** 2 / expected_counts))
    p_value = float(chdtrc(len(counts) - 1, chi2))
    test = "chi2"
    if expected_counts.min() < EXACT_BELOW:
        exact = exact_multinomial_p(observed.astype(np.int64), weights)
        if exact is not None:
            p_value, test = exact, "exact"
    return SampleRatioCheck(
        units=counts,
        expected=shares,
        chi2=chi2,
        p_value=p_value,
        alarm=bool(p_value < alpha),
        alpha=float(alpha),
        test=test,
    )


def exact_multinomial_p(observed: np.ndarray, weights: np.ndarray) -> float | None:
    """The exact goodness-of-fit p-value of the counts ``observed`` under the shares
    ``weights`` (summing to 1): the total probability of the splits of the same total
    that are at most as likely as the observed one (within a relative 1e-7, as scipy's
    ``binomtest``). Two arms: ``scipy.stats.binomtest``. More arms: every split of the
    total is enumerated, None when there are more than :data:`EXACT_MAX_OUTCOMES`."""
    from scipy import stats as sps

    observed = np.asarray(observed, dtype=np.int64)
    total, k = int(observed.sum()), observed.size
    if k == 2:
        return float(sps.binomtest(int(observed[0]), total, float(weights[0])).pvalue)
    if math.comb(total + k - 1, k - 1) > EXACT_MAX_OUTCOMES:
        return None
    splits = _splits(total, k)
    log_pmf = sps.multinomial.logpmf(splits, total, weights)
    log_observed = sps.multinomial.logpmf(observed, total, weights)
    keep = log_pmf <= log_observed + math.log(_RELATIVE)
    return float(min(1.0, np.exp(log_pmf[keep]).sum()))


def _splits(total: int, k: int) -> np.ndarray:
    """Every way to split ``total`` units between ``k`` arms: an (outcomes x k) matrix."""
    if k == 1:
        return np.array([[total]], dtype=np.int64)
    parts = []
    for first in range(total + 1):
        rest = _splits(total - first, k - 1)
        parts.append(np.column_stack([np.full(len(rest), first, dtype=np.int64), rest]))
    return np.concatenate(parts)


def _shares(counts: Mapping[str, int], expected: Mapping[str, float] | None) -> dict[str, float]:
    """The expected share of each arm of ``counts``, normalised to sum to 1."""
    if expected is None:
        return {arm: 1.0 / len(counts) for arm in counts}
    if not isinstance(expected, Mapping):
        raise ConfigError(f"expected: expected a mapping of arm -> share, got {expected!r}")
    named = {str(arm): share for arm, share in expected.items()}
    missing = [arm for arm in counts if arm not in named]
    if missing:
        raise ConfigError(
            f"expected: expected a share for every arm ({', '.join(counts)}), "
            f"got none for {', '.join(missing)}"
        )
    extra = [arm for arm in named if arm not in counts]
    if extra:
        raise ConfigError(
            f"expected: expected shares of the arms {', '.join(counts)} only, "
            f"got an extra arm {', '.join(extra)}"
        )
    for arm, share in named.items():
        if (
            isinstance(share, bool)
            or not isinstance(share, (int, float, np.integer, np.floating))
            or not math.isfinite(float(share))
            or float(share) <= 0
        ):
            raise ConfigError(f"expected: arm {arm!r}: expected a positive share, got {share!r}")
    total = sum(float(named[arm]) for arm in counts)
    return {arm: float(named[arm]) / total for arm in counts}
