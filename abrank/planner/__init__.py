"""The planner: how many users an A/B test and an interleaving test need to detect an
offline difference (``abrank simulate``), from simulated users who click by a click model.

:func:`simulate_power` runs the simulation (:mod:`abrank.planner.simulate`) and returns a
:class:`PlannerResult`; :func:`write_simulation` writes its folder (simulation.json,
power.csv, power.png, simulation.md, simulation.html).
"""

from __future__ import annotations

from abrank.planner.output import write_simulation
from abrank.planner.result import DesignPower, PlannerResult, UsersNeeded
from abrank.planner.simulate import simulate_power

__all__ = ["DesignPower", "PlannerResult", "UsersNeeded", "simulate_power", "write_simulation"]
