"""The keys of an interleaving experiment (``analysis.design: interleaved``).

An interleaved log (DESIGN.md "Interleaving") holds every arm's results in one list per
impression, so the experiment reads one ``log:`` whose ``team`` column names the arm that
contributed each result; the arms' ``path``, when given, are the rankings the lists were
interleaved from (for the check of impressions where both rankings agree); the metrics
are credits (what counts as a click for a team); users, not impressions, are the
independent units. This module lists what a config gets wrong, as (field path, message)
pairs that :mod:`abrank.config` words with the file and line.
"""

from __future__ import annotations

from abrank.config.experiment import Experiment

CREDITS: tuple[str, ...] = ("clicks", "sat_clicks")
"""The credits of an interleaved comparison: every click on a team's result, or the clicks
with a dwell of at least ``analysis.sat_dwell`` seconds."""

Problem = tuple[tuple, str]


def credit_name(value: str) -> str | None:
    """The credit ``value`` names (case and spaces ignored), or None."""
    name = value.strip().lower() if isinstance(value, str) else None
    return name if name in CREDITS else None


def credit_label(credit: str, sat_dwell: float) -> str:
    """A credit's name in a report: what the preference counted."""
    if credit == "sat_clicks":
        return f"preference by satisfied clicks (dwell >= {sat_dwell:g} s)"
    return "preference by clicks"


def credit_problem(value: str) -> str:
    """Why ``value`` is no credit: the message of a wrong metric name."""
    return (
        f"expected a credit of the interleaved design ({' or '.join(CREDITS)}: which clicks "
        f"count for the team that contributed the result), got {value!r}"
    )


def interleaved_problems(exp: Experiment) -> list[Problem]:
    """What an interleaved experiment's config gets wrong besides its metric names: no log,
    no unit, and keys that only A/B tests read."""
    analysis = exp.analysis
    found: list[Problem] = []
    if exp.log is None:
        found.append(
            (
                ("log",),
                "expected the interleaved log (one `log:` whose team column names the arm "
                "that contributed each result), got none",
            )
        )
    if analysis.unit is None:
        found.append(
            (
                ("analysis", "unit"),
                "expected the unit the impressions cluster on (e.g. user_id; impression_id "
                "to treat every impression as independent), got none",
            )
        )
    if analysis.sequential:
        found.append(
            (
                ("analysis", "sequential"),
                "expected false for the interleaved design (no confidence sequence for the "
                "preference yet), got true",
            )
        )
    not_read = {
        ("analysis", "covariates"): analysis.covariates is not None,
        ("analysis", "expected_split"): analysis.expected_split is not None,
        ("segments", "attributes"): exp.segments.attributes is not None,
        ("judgments",): exp.judgments is not None,
    }
    for loc, given in not_read.items():
        if given:
            found.append(
                (
                    loc,
                    "expected nothing for the interleaved design (every impression shows "
                    "both arms), got a value",
                )
            )
    return found
