"""The exact permutation p-value of two arms that are each constant.

When every unit of the control holds one value and every unit of the treatment another,
a t-test is undefined (no variance) and the exact label-permutation test stands in. Of
the C(n_c + n_t, n_t) ways to label n_t of the units "treatment", the treatment's mean
minus the control's is a linear function of j, the number of treatment labels that fall on
treatment units: (b - a) (j / n_t - (n_t - j) / n_c). It reaches the observed |b - a| at
j = n_t (the observed labelling) and, only when n_c = n_t, at j = 0 (every label swapped);
every other labelling mixes the values and lies strictly between. So the two-sided p is
1 / C(n_c + n_t, n_t) for arms of unequal size and 2 / C(2n, n) for equal ones.
"""

from __future__ import annotations

import math


def constant_arms_p(n_c: int, n_t: int) -> float:
    """The two-sided exact permutation p of two constant arms with different values:
    (1 + [n_c = n_t]) / C(n_c + n_t, n_t), capped at 1 (through logs: no overflow)."""
    extremes = 2.0 if n_c == n_t else 1.0
    log_comb = math.lgamma(n_c + n_t + 1) - math.lgamma(n_c + 1) - math.lgamma(n_t + 1)
    return min(1.0, math.exp(math.log(extremes) - log_comb))
