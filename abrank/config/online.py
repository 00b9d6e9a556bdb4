"""The keys of online logs: an A/B test's impression log and its randomization unit.

An online experiment reads impression logs (DESIGN.md "Online logs"): one ``log:`` whose
arm column names the arm of each row, or one log per arm; its click metrics are ratios of
per-unit sums, so the tests cluster on the randomized unit (``analysis.unit``, e.g.
``user_id``) and the design is ``independent``. The ``analysis`` keys that only impression
logs read are :class:`OnlineKeys`: the unit, the dwell of a satisfied click, CUPED's
pre-period covariates, the expected split of the units and the sample ratio check's
level, and what to do with units seen in more than one arm.
"""

from __future__ import annotations

import math
from typing import Literal, TypeVar

from pydantic import Field

from abrank.config.keys import INPUT_FORMATS, Columns, DecimalMark, Separator, Strict
from abrank.config.paths import resolved
from abrank.config.problems import Checks


class LogConfig(Strict):
    """One impression log for every arm, whose ``arm`` column names the arm of each row."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()


class CovariatesConfig(Strict):
    """A per-unit table of pre-period values for CUPED: the unit column, an optional
    ``impressions`` column (the unit's pre-period impressions, default 1) and one column per
    metric, named as the metric, holding the unit's pre-period mean of it."""

    path: str
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","


class OnlineKeys(Strict):
    """The ``analysis`` keys of impression logs (DESIGN.md "Clustered inference"), listed
    after the statistics keys (:class:`abrank.config.analysis.AnalysisConfig`)."""

    #: the column whose values are randomized (e.g. user_id): inference clusters on it
    unit: str | None = Field(default=None, min_length=1)
    #: a click with at least this dwell (seconds) is a satisfied click (sat_ctr@k)
    sat_dwell: float = Field(default=30.0, ge=0)
    covariates: CovariatesConfig | None = None
    #: each arm's expected share of the units (default: equal shares)
    expected_split: dict[str, float] | None = None
    srm_alpha: float = Field(default=0.001, gt=0, lt=1)
    #: units seen in more than one arm: counted and warned about, or also dropped
    mixed_units: Literal["warn", "drop"] = "warn"


Keys = TypeVar("Keys", bound=OnlineKeys)


def resolved_log(checks: Checks, log: LogConfig | None) -> LogConfig | None:
    """The experiment's one log with its absolute path (its problems go to ``checks``)."""
    if log is None:
        return None
    return log.model_copy(update={"path": resolved(checks, ("log", "path"), log.path)})


def checked_online(
    checks: Checks, analysis: Keys, *, design: str, online: bool, arms: list[str]
) -> Keys:
    """The online keys of an A/B test's ``analysis`` (``online``: it reads impression
    logs): a unit for impression logs and the independent design with it, a split over the
    arms' names, covariates only with a unit; returns a copy with the covariates' path
    resolved (a problem of that path comes before the others)."""
    update: dict = {}
    if analysis.covariates is not None:
        path = resolved(checks, ("analysis", "covariates", "path"), analysis.covariates.path)
        update["covariates"] = analysis.covariates.model_copy(update={"path": path})

    def problem(loc: tuple, message: str) -> None:
        checks.add(("analysis", *loc), message)

    if analysis.unit is not None and design != "independent":
        problem(
            ("design",),
            "expected independent with analysis.unit (units are randomized to arms), "
            f"got {design!r}",
        )
    elif online and analysis.unit is None:
        problem(
            ("unit",),
            "expected the randomization unit of the online log (e.g. user_id, or "
            "impression_id when impressions were randomized), got none",
        )
    elif online and design != "independent":
        problem(("design",), f"expected independent for an online log, got {design!r}")
    split = analysis.expected_split
    if split is not None:
        unknown = [name for name in split if name not in arms]
        absent = [name for name in arms if name not in split]
        if unknown or absent:
            found = ", ".join(split) or "none"
            problem(
                ("expected_split",),
                f"expected a share for each arm ({', '.join(arms)}), got {found}",
            )
        for name, share in split.items():
            if not (math.isfinite(share) and share > 0):
                problem(("expected_split", name), f"expected a share > 0, got {share!r}")
    if analysis.covariates is not None and analysis.unit is None:
        problem(("covariates",), "expected analysis.unit beside covariates, got no unit")
    return analysis.model_copy(update=update) if update else analysis
