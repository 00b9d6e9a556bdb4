"""Interleaving: merged result lists, simulated users and per-impression credit.

Interleaving shows each user one list merged from two rankers and credits each click to
the ranker that contributed the clicked result (Chapelle, Joachims, Radlinski & Yue, TOIS
2012). This package builds such lists (:func:`interleave`), simulates clicks on them with
click models (:mod:`abrank.interleaving.clicks`) and turns an interleaved log into one
win / tie / loss per impression (:func:`impression_outcomes`, :func:`delta_ab`).
"""

from __future__ import annotations

from abrank.config.interleaved import CREDITS
from abrank.interleaving.build import METHODS, coin_flips, grades_of_shown, interleave
from abrank.interleaving.checks import FixedLists, fixed_lists
from abrank.interleaving.clicks import (
    CLICK_PROFILES,
    Cascade,
    ClickModel,
    PositionBased,
    simulate_clicks,
)
from abrank.interleaving.credit import delta_ab, impression_outcomes

__all__ = [
    "CLICK_PROFILES",
    "CREDITS",
    "METHODS",
    "Cascade",
    "ClickModel",
    "FixedLists",
    "PositionBased",
    "coin_flips",
    "delta_ab",
    "fixed_lists",
    "grades_of_shown",
    "impression_outcomes",
    "interleave",
    "simulate_clicks",
]
