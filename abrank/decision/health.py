"""The checks that make a readout ``unhealthy``: its numbers cannot be trusted yet.

A readout is unhealthy when the split of units between the arms fails its sample-ratio
check (an interleaving experiment: the first-team check), when the arms' logs cover too
different sets of queries to be paired (an arm's log lacks more than
:data:`MAX_MISSING_SHARE` of the analysed queries), or when more than
:data:`MAX_MIXED_SHARE` of the units were logged in more than one arm. Each check reads the
diagnostics the designs write; a design without such a diagnostic passes that check.
"""

from __future__ import annotations

from abrank.readout.model import Summary

MAX_MISSING_SHARE = 0.10
"""An arm whose log lacks more of the analysed queries than this cannot be paired."""

MAX_MIXED_SHARE = 0.01
"""More units than this share, seen in several arms, is an assignment or logging failure."""


def health_problems(summary: Summary) -> list[str]:
    """Why the readout is unhealthy, one sentence each (empty when it is healthy)."""
    diagnostics = summary.diagnostics
    if diagnostics is None:
        return []
    problems = []
    srm = diagnostics.srm
    if srm is not None and srm.alarm:
        problems.append(f"sample ratio mismatch ({_p(srm.p_value)} < {srm.alpha:g})")
    checks = diagnostics.interleaving
    if checks is not None and checks.first_team.alarm:
        first = checks.first_team
        problems.append(f"first-team imbalance ({_p(first.p_value)} < {first.alpha:g})")
    analysed = diagnostics.analysed_queries
    for arm, missing in (diagnostics.missing or {}).items():
        if analysed and missing / analysed > MAX_MISSING_SHARE:
            problems.append(
                f"{arm}'s log lacks {missing:,} of the {analysed:,} analysed queries "
                f"({missing / analysed:.0%}, more than {MAX_MISSING_SHARE:.0%}): the arms "
                "cannot be paired"
            )
    mixed = diagnostics.mixed_units
    units = sum((diagnostics.units or {}).values())
    if mixed is not None and units and mixed.count / units > MAX_MIXED_SHARE:
        problems.append(
            f"{mixed.count:,} {mixed.column} values were logged in more than one arm "
            f"({mixed.count / units:.1%} of the units, more than {MAX_MIXED_SHARE:.0%})"
        )
    return problems


def _p(p: float | None) -> str:
    if p is None:
        return "p n/a"
    return "p < 1e-300" if p == 0 else f"p = {p:.2g}"
