"""The one check of :func:`abrank.stats.compare`'s arguments and values.

Every argument is checked up front, in one place, and a bad one raises
:class:`~abrank.errors.ConfigError` naming the argument, what it must be and what it was
(with "did you mean" for a misspelled choice). Test names come from
:mod:`abrank.stats.registry`, aliases resolved to the canonical names.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import ConfigError
from abrank.stats import registry

MISSING = ("zero", "drop", "error")
"""What a query missing from one arm of a paired comparison becomes: 0, dropped, an error."""


OWN_INTERVAL = ("t", "sequential")
"""The tests whose interval is their own (the t-interval, the confidence sequence)."""


def with_primary_interval(run: tuple[str, ...]) -> tuple[str, ...]:
    """The tests to run, with the bootstrap added when the primary test has no interval
    of its own (see :data:`OWN_INTERVAL`): its primary interval is then the BCa one."""
    if run[0] not in OWN_INTERVAL and "bootstrap" not in run:
        return (*run, "bootstrap")
    return run


#: the designs that compare two sets of per-query (or per-impression) values
TWO_ARM_DESIGNS = ("paired", "independent")


def choice(argument: str, value: Any, choices: Sequence[str], extra: str = "") -> str:
    """``value`` when it is one of ``choices``; else ConfigError listing them."""
    if isinstance(value, str) and value in choices:
        return value
    listed = ", ".join(repr(c) for c in choices)
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value, list(choices), n=1)
        if close:
            hint = f" (did you mean {close[0]!r}?)"
    raise ConfigError(f"{argument}: expected one of {listed}{extra}, got {value!r}{hint}")


def probability(argument: str, value: Any) -> float:
    """``value`` as a float strictly between 0 and 1; else ConfigError."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise ConfigError(f"{argument}: expected a number between 0 and 1, got {value!r}")
    if not 0.0 < float(value) < 1.0:
        raise ConfigError(f"{argument}: expected a number between 0 and 1, got {value!r}")
    return float(value)


def test_list(tests: Any) -> Sequence[Any]:
    """``tests`` as a sequence of names (one name alone is a list of one); ConfigError else."""
    if isinstance(tests, str):
        return (tests,)
    if not isinstance(tests, Sequence):
        raise ConfigError(f"tests: expected a list of test names, got {tests!r}")
    return tests


def resample_count(n_resamples: Any) -> int:
    """``n_resamples`` as a positive integer; else ConfigError."""
    if (
        isinstance(n_resamples, bool)
        or not isinstance(n_resamples, (int, np.integer))
        or n_resamples < 1
    ):
        raise ConfigError(f"n_resamples: expected a positive integer, got {n_resamples!r}")
    return int(n_resamples)


def seed_value(seed: Any) -> int | None:
    """``seed`` as a non-negative integer or None; else ConfigError."""
    if seed is not None and (
        isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0
    ):
        raise ConfigError(f"seed: expected a non-negative integer or None, got {seed!r}")
    return None if seed is None else int(seed)


def validate(
    design: Any,
    primary_test: Any,
    tests: Any,
    alpha: Any,
    confidence_level: Any,
    n_resamples: Any,
    missing: Any,
    seed: Any,
    metric: Any,
    treatment_name: Any,
    segment: Any,
) -> tuple[str, ...]:
    """Check every argument of a comparison; return the tests to run, primary first,
    then the others in the registry's order (canonical names)."""
    if design == registry.INTERLEAVED:
        raise ConfigError(
            "design: expected paired or independent for two sets of per-query values, got "
            "'interleaved' (an interleaving log: abrank.stats.compare_interleaved)"
        )
    choice("design", design, TWO_ARM_DESIGNS)
    primary = registry.resolve_test(primary_test, design, "primary_test")
    wanted = {registry.resolve_test(test, design, "tests") for test in test_list(tests)}
    probability("alpha", alpha)
    probability("confidence_level", confidence_level)
    resample_count(n_resamples)
    choice("missing", missing, MISSING)
    seed_value(seed)
    for argument, value in (("metric", metric), ("treatment_name", treatment_name)):
        if not isinstance(value, str):
            raise ConfigError(f"{argument}: expected a string, got {value!r}")
    if segment is not None and not isinstance(segment, str):
        raise ConfigError(
            f"segment: expected a string such as 'device=mobile' or None, got {segment!r}"
        )
    others = [t for t in registry.test_names(design) if t in wanted and t != primary]
    return (primary, *others)


def values(argument: str, data: Any) -> np.ndarray:
    """``data`` (a Series, array or sequence) as a 1-D float array of finite numbers or NaN."""
    try:
        if isinstance(data, pd.Series):
            array = data.to_numpy(dtype=np.float64, na_value=np.nan)
        else:
            array = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError):
        kind = getattr(data, "dtype", type(data).__name__)
        raise ConfigError(f"{argument}: expected numbers, got values of type {kind}") from None
    if array.ndim != 1:
        raise ConfigError(
            f"{argument}: expected a one-dimensional sequence, got shape {array.shape}"
        )
    bad = np.isinf(array)
    if bad.any():
        position = int(np.flatnonzero(bad)[0])
        raise ConfigError(
            f"{argument}: position {position}: expected a finite number, got {array[position]}"
        )
    return array


def _first_ids(index: pd.Index, limit: int = 5) -> str:
    shown = ", ".join(repr(v) for v in index[:limit].tolist())
    more = f" and {len(index) - limit} more" if len(index) > limit else ""
    return shown + more


def paired_values(
    control: Any, treatment: Any, missing: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Aligned (control, treatment) arrays plus masks of observed values, NaN pairs dropped.

    Series are aligned on their index (query ids), a query absent from one side handled by
    ``missing``; plain sequences must have equal lengths.
    """
    if isinstance(control, pd.Series) and isinstance(treatment, pd.Series):
        for argument, series in (("control", control), ("treatment", treatment)):
            if not series.index.is_unique:
                dupes = series.index[series.index.duplicated()].unique()
                raise ConfigError(
                    f"{argument}: index: expected unique query ids, "
                    f"got duplicates {_first_ids(dupes)}"
                )
        c_values = values("control", control)
        t_values = values("treatment", treatment)
        c_series = pd.Series(c_values, index=control.index)
        t_series = pd.Series(t_values, index=treatment.index)
        if not c_series.index.equals(t_series.index):
            only_c = c_series.index.difference(t_series.index)
            only_t = t_series.index.difference(c_series.index)
            if missing == "error" and (len(only_c) or len(only_t)):
                parts = []
                if len(only_t):
                    parts.append(f"{len(only_t)} missing from control ({_first_ids(only_t)})")
                if len(only_c):
                    parts.append(f"{len(only_c)} missing from treatment ({_first_ids(only_c)})")
                raise ConfigError(
                    "missing: expected every query in both arms (missing='error'), got "
                    + "; ".join(parts)
                )
            if missing == "drop":
                index = c_series.index.intersection(t_series.index)
            else:
                index = c_series.index.union(t_series.index)
            at_c = c_series.index.get_indexer(index)
            at_t = t_series.index.get_indexer(index)
            in_c, in_t = at_c >= 0, at_t >= 0
            c, t = np.zeros(index.size), np.zeros(index.size)
            c[in_c] = c_values[at_c[in_c]]
            t[in_t] = t_values[at_t[in_t]]
        else:
            c, t = c_values.astype(np.float64), t_values.astype(np.float64)
            in_c = in_t = np.ones(c.size, dtype=bool)
    else:
        c = values("control", control)
        t = values("treatment", treatment)
        if c.shape != t.shape:
            raise ConfigError(
                f"treatment: expected {c.size} values (as many as control, paired design), "
                f"got {t.size}"
            )
        in_c = np.ones(c.size, dtype=bool)
        in_t = in_c
    keep = ~(np.isnan(c) | np.isnan(t))
    return c[keep], t[keep], in_c[keep], in_t[keep]
