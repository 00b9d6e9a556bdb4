"""The statistical tests and multiple-testing corrections abrank knows, in one table each.

Every list of names the user sees comes from here: the library's argument checks, the
config's validation, the CLI's choices and the report's labels. A test is one
:class:`TestSpec` (its name, aliases, the designs it applies to, how reports show it);
a correction is one :class:`CorrectionSpec` (a ``statsmodels`` ``multipletests`` method,
its aliases and display name), as in statsmodels' own multitest table. The
implementations live in the design modules (:mod:`abrank.stats.paired`,
:mod:`abrank.stats.independent`), each registering a function per test name.

This module imports nothing heavy, so the CLI and the config can read the tables fast.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from abrank.errors import ConfigError

INTERLEAVED = "interleaved"
"""The design of an interleaving test (:mod:`abrank.stats.interleaved`): one population of
users, each impression showing both rankers."""

DESIGNS = ("paired", "independent", INTERLEAVED)
"""The designs: ``paired`` (the same queries through both rankers), ``independent``
(different queries or users per arm), ``interleaved`` (one log of interleaved lists)."""
INTERLEAVED_TESTS = ("t", "bootstrap")
"""The tests of an interleaved comparison (the delta method and the unit bootstrap)."""


@dataclass(frozen=True)
class TestSpec:
    """One statistical test of a treatment against the control.

    ``name`` is the key of ``p_values`` in results and summary.json; ``aliases`` are other
    accepted spellings; ``designs`` the designs that implement it as a test a config can
    name (none for a test that only a regime rule runs); ``display`` its name in
    a sentence of a report ("p = 0.02 (Wilcoxon, Holm)"), ``label`` its short column label
    ("p (perm.)"). ``resamples``: it draws ``n_resamples`` random resamples.
    ``thread_safe``: it may run in the comparison threads (False for tests that call scipy
    under ``warnings.catch_warnings``, which is not thread-safe).
    """

    __test__ = False  # not a pytest test class

    name: str
    display: str
    label: str
    designs: tuple[str, ...]
    description: str
    aliases: tuple[str, ...] = ()
    resamples: bool = False
    thread_safe: bool = True


@dataclass(frozen=True)
class CorrectionSpec:
    """One multiple-testing correction: a ``statsmodels.stats.multitest.multipletests``
    method (``none`` leaves p-values as they are), its aliases, its short ``display`` name
    in reports ("BH") and its full ``title`` ("Benjamini-Hochberg")."""

    name: str
    display: str
    title: str
    controls: str
    aliases: tuple[str, ...] = ()


TESTS: tuple[TestSpec, ...] = (
    TestSpec(
        "t",
        display="t",
        label="t",
        designs=("paired", "independent", INTERLEAVED),
        description=(
            "paired t-test on the per-query deltas; Welch's t-test for independent arms; "
            "the delta-method t-test of the preference over units (interleaved)"
        ),
        aliases=("t-test", "ttest"),
    ),
    TestSpec(
        "permutation",
        display="permutation",
        label="perm.",
        designs=("paired", "independent"),
        description="randomization test: sign flips of the deltas (paired) or arm labels",
        aliases=("randomization",),
        resamples=True,
    ),
    TestSpec(
        "bootstrap",
        display="bootstrap",
        label="boot.",
        designs=("paired", "independent", INTERLEAVED),
        description="BCa bootstrap of the mean delta (query pairs, each arm, or units)",
        resamples=True,
    ),
    TestSpec(
        "wilcoxon",
        display="Wilcoxon",
        label="Wilcoxon",
        designs=("paired",),
        description="Wilcoxon signed-rank test (tests the median delta)",
        aliases=("signed-rank",),
        thread_safe=False,
    ),
    TestSpec(
        "mannwhitney",
        display="Mann-Whitney",
        label="M-W",
        designs=("independent",),
        description="Mann-Whitney U test (tests a shift of the distribution)",
        aliases=("mann-whitney",),
        thread_safe=False,
    ),
    TestSpec(
        "sequential",
        display="always-valid",
        label="seq.",
        designs=("paired", "independent"),
        description=(
            "asymptotic confidence sequence (Waudby-Smith et al.): an always-valid p-value "
            "and interval, valid however often a cumulative readout is looked at"
        ),
        aliases=("always-valid", "confidence-sequence"),
    ),
    TestSpec(
        "signflip",
        display="exact sign-flip",
        label="sign-flip",
        designs=("paired",),
        description=(
            "exact sign-flip test: every sign pattern of the m queries that moved (m <= 20), "
            "else the randomization test; the verdict's test on sparse or skewed deltas"
        ),
        aliases=("exact", "sign-flip"),
    ),
    TestSpec(
        "jackknife",
        display="jackknife",
        label="jack.",
        designs=(),
        description=(
            "jackknife (leave one unit out) t-test of a clustered comparison, on the units' "
            "effective number as degrees of freedom; not chosen in a config: the verdict's "
            "test where a few units hold most of an arm's impressions"
        ),
    ),
)
"""Every statistical test, in the order results list their p-values."""

CORRECTIONS: tuple[CorrectionSpec, ...] = (
    CorrectionSpec("holm", "Holm", "Holm", "familywise error"),
    CorrectionSpec("bonferroni", "Bonferroni", "Bonferroni", "familywise error"),
    CorrectionSpec("sidak", "Šidák", "Šidák", "familywise error", aliases=("šidák",)),
    CorrectionSpec("holm-sidak", "Holm-Šidák", "Holm-Šidák", "familywise error"),
    CorrectionSpec(
        "simes-hochberg", "Hochberg", "Simes-Hochberg", "familywise error", aliases=("hochberg",)
    ),
    CorrectionSpec("hommel", "Hommel", "Hommel", "familywise error"),
    CorrectionSpec(
        "fdr_bh",
        "BH",
        "Benjamini-Hochberg",
        "false discovery rate",
        aliases=("bh", "benjamini-hochberg"),
    ),
    CorrectionSpec(
        "fdr_by",
        "BY",
        "Benjamini-Yekutieli",
        "false discovery rate",
        aliases=("by", "benjamini-yekutieli"),
    ),
    CorrectionSpec("none", "none", "no correction", "nothing"),
)
"""Every multiple-testing correction, familywise ones first."""

NO_CORRECTION = "none"

_TEST_BY_NAME = {spec.name: spec for spec in TESTS}
_CORRECTION_BY_NAME = {spec.name: spec for spec in CORRECTIONS}


# --------------------------------------------------------------------------- names


def test_names(design: str | None = None) -> tuple[str, ...]:
    """The names of the tests a config can name, in table order; only those of ``design``
    when it is given (a test of no design, which only a regime rule runs, is never listed)."""
    return tuple(
        spec.name
        for spec in TESTS
        if (design is None and spec.designs) or (design is not None and design in spec.designs)
    )


def correction_names() -> tuple[str, ...]:
    """The corrections' names, in table order."""
    return tuple(spec.name for spec in CORRECTIONS)


def test_spec(name: str) -> TestSpec:
    """The spec of a test given by its name or an alias (KeyError when unknown)."""
    return _TEST_BY_NAME[_spelled(name, TESTS)]


def correction_spec(name: str) -> CorrectionSpec:
    """The spec of a correction given by its name or an alias (KeyError when unknown)."""
    return _CORRECTION_BY_NAME[_spelled(name, CORRECTIONS)]


# --------------------------------------------------------------------------- checking


def test_problem(value: Any, design: str) -> str | None:
    """Why ``value`` is not a test of ``design`` ("expected one of ..., got ..."), or None.

    The text every caller reports, after its own "where" (an argument, a config field, a
    CLI option), so that a wrong name reads the same everywhere.
    """
    specs = [spec for spec in TESTS if design in spec.designs]
    return _problem(value, specs, f" for the {design} design")


def correction_problem(value: Any) -> str | None:
    """Why ``value`` is not a correction ("expected one of ..., got ..."), or None."""
    return _problem(value, CORRECTIONS, "")


def resolve_test(value: Any, design: str, argument: str = "test") -> str:
    """The canonical name of a test of ``design``; ConfigError naming ``argument`` if none."""
    problem = test_problem(value, design)
    if problem:
        raise ConfigError(f"{argument}: {problem}")
    return _spelled(value, TESTS)


def resolve_correction(value: Any, argument: str = "correction") -> str:
    """The canonical name of a correction; ConfigError naming ``argument`` if none."""
    problem = correction_problem(value)
    if problem:
        raise ConfigError(f"{argument}: {problem}")
    return _spelled(value, CORRECTIONS)


# --------------------------------------------------------------------------- display


def test_display_names() -> dict[str, str]:
    """Test name -> its display name in reports ("wilcoxon" -> "Wilcoxon")."""
    return {spec.name: spec.display for spec in TESTS}


def test_labels() -> dict[str, str]:
    """Test name -> its short column label in reports ("permutation" -> "perm.")."""
    return {spec.name: spec.label for spec in TESTS}


def correction_display_names() -> dict[str, str]:
    """Correction name -> its display name in reports ("fdr_bh" -> "BH"); no ``none``."""
    return {spec.name: spec.display for spec in CORRECTIONS if spec.name != NO_CORRECTION}


# --------------------------------------------------------------------------- helpers


def _spellings(specs: Iterable[Any]) -> dict[str, str]:
    """Every accepted spelling (names and aliases, lower case) -> the canonical name."""
    table: dict[str, str] = {}
    for spec in specs:
        for spelling in (spec.name, *spec.aliases):
            table[spelling.lower()] = spec.name
    return table


def _spelled(value: str, specs: Iterable[Any]) -> str:
    return _spellings(specs)[value.lower()]


def _problem(value: Any, specs: Iterable[Any], extra: str) -> str | None:
    specs = list(specs)
    spellings = _spellings(specs)
    if isinstance(value, str) and value.lower() in spellings:
        return None
    listed = ", ".join(repr(spec.name) for spec in specs)
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value.lower(), list(spellings), n=1)
        if close:
            hint = f" (did you mean {close[0]!r}?)"
    return f"expected one of {listed}{extra}, got {value!r}{hint}"
