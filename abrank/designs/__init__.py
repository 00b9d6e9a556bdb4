"""Experiment designs as plugins (DESIGN.md "The spine").

A design holds everything specific to one kind of experiment: the configs it claims and
the keys it checks, its metric names, the engines that run it, how its inputs become
evidence, comparisons and a readout, and its report sections. Four are built in:

- :mod:`.offline` — offline replays: rankings and judgments, per-query metrics, paired
  (or independent) comparisons over queries;
- :mod:`.online` — online A/B tests: impression logs, per-unit sums, clustered inference;
- :mod:`.interleaving <.interleaved>` — interleaving tests: one log of interleaved lists,
  per-unit credits, the preference test;
- :mod:`.counterfactual` — counterfactual evaluation: click logs of the rankings shown,
  the predicted click metrics of rankings never shown (``analysis.design: counterfactual``).

:data:`DESIGNS` is the table of every design (:mod:`abrank.design_registry`);
:func:`register` adds one defined outside abrank, which a config selects with
``analysis.design: <its name>``. :class:`DesignBase` gives such a design the defaults
of a design over a log clustered on ``analysis.unit``.
"""

from __future__ import annotations

from abrank.design_registry import DESIGNS, Design, register
from abrank.designs.base import DesignBase

__all__ = ["DESIGNS", "Design", "DesignBase", "register"]
