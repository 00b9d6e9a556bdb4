"""The ``simulation:`` section of an experiment config: how ``abrank simulate`` plans an
online test from an offline experiment.

Every option has a default taken from the literature, so an offline config needs no
``simulation:`` section at all:

- ``click_model``: ``pbm`` (position-based model) or ``cascade``
  (:mod:`abrank.interleaving.clicks`).
- ``profile``: the simulated user of Hofmann, Whiteson & de Rijke (TOIS 2013) whose
  per-grade click (``attractiveness``) and stop probabilities are used: ``perfect``,
  ``navigational`` (default, as :data:`abrank.interleaving.clicks.DEFAULT_PROFILE`) or
  ``informational``. ``attractiveness`` and ``stop`` override them per grade.
- ``eta``: the PBM's examination (1 / rank) ** eta (Joachims, Swaminathan & Schnabel,
  WSDM 2017; default 1); ``examination`` a list of probabilities per rank instead.
- ``users``: the traffic sizes (users per experiment, both arms together); None: an
  automatic grid of six sizes around a pilot's estimates for both designs.
- ``impressions_per_user``: the mean impressions of a user, 1 + Poisson(mean - 1)
  (default 5); ``propensity_sd``: the standard deviation of each user's click
  propensity, a lognormal with mean 1 that multiplies every click probability (capped at
  1; default 0.5), so that users differ and clustering on them matters.
- ``simulations`` per traffic size (default 200), ``depth`` results shown (default 10),
  ``power`` the target (default 0.8), ``ctr_k`` the cutoff of the A/B test's ``ctr@k``
  (default 3; an option here, since a click metric among the config's ``metrics`` would
  make it an online experiment), ``treatment`` the treatment
  arm (default the first), ``seed`` (default ``analysis.seed``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

CLICK_MODEL_NAMES: tuple[str, ...] = ("pbm", "cascade")
"""The click models ``abrank simulate`` knows."""

PROFILE_NAMES: tuple[str, ...] = ("perfect", "navigational", "informational")
"""The simulated users of Hofmann et al. (TOIS 2013)."""

DEFAULT_SIMULATIONS = 200
DEFAULT_IMPRESSIONS_PER_USER = 5.0
DEFAULT_PROPENSITY_SD = 0.5
DEFAULT_CTR_K = 3
GRID_SIZES = 6
"""How many traffic sizes the automatic grid has."""


def _probabilities_per_grade(table: dict[float, float] | None) -> dict[float, float] | None:
    if table is None:
        return None
    if not table:
        raise ValueError("a mapping of grade to probability with at least one grade")
    for probability in table.values():
        if not 0.0 <= probability <= 1.0:
            raise ValueError("a probability in [0, 1] for every grade")
    return table


class SimulationConfig(BaseModel):
    """The planner's options (module text: their meaning and defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    click_model: Literal["pbm", "cascade"] = "pbm"
    profile: Literal["perfect", "navigational", "informational"] = "navigational"
    eta: float = Field(1.0, ge=0, le=10)
    examination: list[float] | None = Field(None, min_length=1)
    attractiveness: dict[float, float] | None = None
    stop: dict[float, float] | None = None
    users: list[int] | None = Field(None, min_length=1, max_length=20)
    impressions_per_user: float = Field(DEFAULT_IMPRESSIONS_PER_USER, ge=1, le=100)
    propensity_sd: float = Field(DEFAULT_PROPENSITY_SD, ge=0, le=5)
    simulations: int = Field(DEFAULT_SIMULATIONS, ge=20, le=100_000)
    depth: int = Field(10, ge=1, le=100)
    power: float = Field(0.8, gt=0, lt=1)
    ctr_k: int | None = Field(None, ge=1)
    treatment: str | None = None
    seed: int | None = Field(None, ge=0)

    @field_validator("examination")
    @classmethod
    def _examination_probabilities(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and not all(0.0 <= p <= 1.0 for p in value):
            raise ValueError("a list of probabilities in [0, 1], one per rank")
        return value

    @field_validator("attractiveness", "stop")
    @classmethod
    def _grade_tables(cls, value: dict[float, float] | None) -> dict[float, float] | None:
        return _probabilities_per_grade(value)

    @field_validator("users")
    @classmethod
    def _traffic_sizes(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        return check_users(value)


MIN_USERS = 20
MAX_USERS = 2_000_000


def check_users(sizes: list[int]) -> list[int]:
    """The traffic sizes, sorted; ValueError unless each is a whole number of users in
    [MIN_USERS, MAX_USERS] and none repeats (the CLI's ``--users`` goes through it too)."""
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int):
            raise ValueError(f"whole numbers of users, {MIN_USERS:,} to {MAX_USERS:,}")
        if not MIN_USERS <= size <= MAX_USERS:
            raise ValueError(f"numbers of users from {MIN_USERS:,} to {MAX_USERS:,}")
    if len(set(sizes)) != len(sizes):
        raise ValueError("different numbers of users (one appears twice)")
    return sorted(sizes)
