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

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import gammaln


def constant_arms_p(n_c: int, n_t: int) -> float:
    """The two-sided exact permutation p of two constant arms with different values:
    (1 + [n_c = n_t]) / C(n_c + n_t, n_t), capped at 1 (through logs: no overflow)."""
    return float(constant_arms_p_rows(np.array([n_c]), np.array([n_t]))[0])


def constant_arms_p_rows(n_c: ArrayLike, n_t: ArrayLike) -> np.ndarray:
    """:func:`constant_arms_p` of many pairs of arm sizes at once."""
    n_c, n_t = np.asarray(n_c, dtype=np.float64), np.asarray(n_t, dtype=np.float64)
    extremes = np.where(n_c == n_t, 2.0, 1.0)  # a full swap reaches -delta only then
    log_choose = gammaln(n_c + n_t + 1.0) - gammaln(n_c + 1.0) - gammaln(n_t + 1.0)
    return np.minimum(1.0, np.exp(np.log(extremes) - log_choose))
