"""Click models: simulated users who click on a shown list according to its judgments.

Two models, each a frozen dataclass with ``to_dict()``:

- :class:`PositionBased` (PBM; Richardson, Dominowska & Ragno, WWW 2007; Chuklin, Markov
  & de Rijke, "Click Models for Web Search", 2015, chapter 3): a result at rank ``r`` with
  grade ``g`` is clicked with probability ``examination[r] * attractiveness[g]``,
  independently of the other results.
- :class:`Cascade` (the cascade model of Craswell, Zoeter, Taylor & Ramsey, WSDM 2008,
  with a stop after each click as in the dependent click model of Guo, Liu & Wang, WSDM
  2009, here per grade as in the simulated users of Hofmann et al. below): the user scans
  the list top down, clicks a result with probability ``attractiveness[g]``, and after a
  click stops with probability ``stop[g]``, else goes on; without a click the user goes on.

The default probabilities per grade are the "navigational" user of Hofmann, Whiteson &
de Rijke ("Fidelity, soundness, and efficiency of interleaved comparison methods", TOIS
2013), used across the interleaving literature, for five grades 0..4
(``CLICK_PROFILES`` holds their "perfect", "navigational" and "informational" users); a
judgment scale with fewer grades uses the first ones (TREC DL's 0..3 reach 0.7). The default examination of the PBM is ``(1 / rank) ** eta`` with ``eta = 1``, the
propensity model of Joachims, Swaminathan & Schnabel (WSDM 2017).

:func:`simulate_clicks` draws the clicks of many simulated impressions at once from one
matrix of uniform numbers; the cascade's "examined" is a cumulative count of stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from abrank.errors import ConfigError, DataError
from abrank.io.subtopics import collapse_frame

CLICK_PROFILES: dict[str, dict[str, dict[float, float]]] = {
    "perfect": {
        "attractiveness": {0: 0.0, 1: 0.2, 2: 0.4, 3: 0.8, 4: 1.0},
        "stop": {0: 0.0, 1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0},
    },
    "navigational": {
        "attractiveness": {0: 0.05, 1: 0.3, 2: 0.5, 3: 0.7, 4: 0.95},
        "stop": {0: 0.2, 1: 0.3, 2: 0.5, 3: 0.7, 4: 0.9},
    },
    "informational": {
        "attractiveness": {0: 0.4, 1: 0.6, 2: 0.7, 3: 0.8, 4: 0.9},
        "stop": {0: 0.1, 1: 0.2, 2: 0.3, 3: 0.4, 4: 0.5},
    },
}
"""The simulated users of Hofmann, Whiteson & de Rijke (TOIS 2013): per grade 0..4, the
probability of a click on an examined result and of stopping after a click."""

DEFAULT_PROFILE = "navigational"


def _default_attractiveness() -> dict[float, float]:
    return dict(CLICK_PROFILES[DEFAULT_PROFILE]["attractiveness"])


def _default_stop() -> dict[float, float]:
    return dict(CLICK_PROFILES[DEFAULT_PROFILE]["stop"])


@dataclass(frozen=True)
class PositionBased:
    """The position-based model: P(click at rank r, grade g) = examination(r) * attractiveness[g].

    ``examination`` gives the probability of examining ranks 1, 2, ... in order; ranks
    past its end are not examined. ``None``: ``(1 / rank) ** eta``. ``attractiveness``
    maps each grade to the probability of clicking an examined result; an unjudged result
    takes grade 0's.
    """

    examination: tuple[float, ...] | None = None
    attractiveness: Mapping[float, float] = field(default_factory=_default_attractiveness)
    eta: float = 1.0
    name: ClassVar[str] = "pbm"

    def __post_init__(self) -> None:
        if self.examination is not None:
            values = tuple(float(p) for p in self.examination)
            _check_probabilities(values, "examination")
            object.__setattr__(self, "examination", values)
        if not np.isfinite(self.eta) or self.eta < 0:
            raise ConfigError(f"eta: expected a number >= 0, got {self.eta!r}")
        object.__setattr__(
            self, "attractiveness", _check_grades(self.attractiveness, "attractiveness")
        )

    def examination_at(self, ranks: np.ndarray) -> np.ndarray:
        """The probability of examining each rank (1 = top)."""
        ranks = np.asarray(ranks, dtype=np.int64)
        if self.examination is None:
            return (1.0 / ranks) ** float(self.eta)
        table = np.asarray(self.examination + (0.0,), dtype=float)
        return table[np.clip(ranks - 1, 0, len(table) - 1)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "model": self.name,
            "examination": None if self.examination is None else list(self.examination),
            "eta": float(self.eta),
            "attractiveness": _grades_dict(self.attractiveness),
        }


@dataclass(frozen=True)
class Cascade:
    """The cascade model with stops: scan top down, click with attractiveness[g], then
    stop with stop[g] (1 everywhere: the pure cascade model, one click at most).

    Without a click the user goes on to the next result, to the end of the list. An
    unjudged result takes grade 0's probabilities.
    """

    attractiveness: Mapping[float, float] = field(default_factory=_default_attractiveness)
    stop: Mapping[float, float] = field(default_factory=_default_stop)
    name: ClassVar[str] = "cascade"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "attractiveness", _check_grades(self.attractiveness, "attractiveness")
        )
        object.__setattr__(self, "stop", _check_grades(self.stop, "stop"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins."""
        return {
            "model": self.name,
            "attractiveness": _grades_dict(self.attractiveness),
            "stop": _grades_dict(self.stop),
        }


ClickModel = PositionBased | Cascade
"""Any click model :func:`simulate_clicks` knows."""


def simulate_clicks(
    shown: pd.DataFrame,
    judgments: pd.DataFrame | None,
    model: ClickModel,
    *,
    impressions: int = 1,
    seed: int | np.random.Generator = 0,
) -> np.ndarray:
    """Simulated clicks on every shown list: a bool array (impressions x rows of ``shown``).

    ``shown`` has one row per shown result (``query_id``, ``rank``, ``doc_id``, as
    :func:`abrank.interleave` returns it); each of the ``impressions`` simulated users sees
    every query's list once, and ``clicks[i, j]`` says whether user ``i`` clicked the
    result of row ``j``. With an ``impression_id`` column (the per-impression lists of
    :func:`abrank.interleave` with ``impressions``) each impression is one list. Grades come from ``judgments`` (``query_id``, ``doc_id``,
    ``relevance``), or from ``shown``'s own ``relevance`` column when ``judgments`` is
    None; an unjudged result has grade 0's probabilities. The draws use one uniform per
    (impression, row) for the clicks, and for the cascade one more for the stops; memory
    is a few times ``impressions * len(shown)`` bytes, so simulate large counts in batches.

    DataError for a grade that the model does not list, a rank repeated in a query, or
    missing columns; ConfigError for a bad ``impressions`` or model.
    """
    if not isinstance(model, (PositionBased, Cascade)):
        raise ConfigError(f"model: expected PositionBased or Cascade, got {type(model).__name__}")
    if isinstance(impressions, bool) or not isinstance(impressions, (int, np.integer)):
        raise ConfigError(f"impressions: expected a whole number >= 1, got {impressions!r}")
    if impressions < 1:
        raise ConfigError(f"impressions: expected a whole number >= 1, got {impressions!r}")
    _need_columns(shown, ("query_id", "rank", "doc_id"), "shown")
    grades = _grades_of(shown, judgments)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    ranks = pd.to_numeric(shown["rank"], errors="coerce").to_numpy(dtype=float)
    if np.isnan(ranks).any() or (ranks < 1).any() or (ranks != np.round(ranks)).any():
        row = int(np.flatnonzero(np.isnan(ranks) | (ranks < 1) | (ranks != np.round(ranks)))[0])
        raise DataError(
            f"shown: row {row + 1}: rank: expected a whole number >= 1, "
            f"got {_cell(shown['rank'].iloc[row])!r}"
        )
    attract = _lookup(model.attractiveness, grades, "attractiveness")
    if isinstance(model, PositionBased):
        probability = model.examination_at(ranks.astype(np.int64)) * attract
        return rng.random((impressions, len(shown))) < probability
    return _cascade(shown, ranks, attract, _lookup(model.stop, grades, "stop"), impressions, rng)


def shown_grades(shown: pd.DataFrame, judgments: pd.DataFrame) -> np.ndarray:
    """The grade of each row of ``shown`` (``query_id``, ``doc_id``) in ``judgments``
    (NaN when unjudged), as :func:`simulate_clicks` reads it; DataError for a
    (query_id, doc_id) pair judged twice or missing columns."""
    _need_columns(shown, ("query_id", "doc_id"), "shown")
    return _grades_of(shown, judgments)


def grade_probabilities(table: Mapping[float, float], grades: np.ndarray, what: str) -> np.ndarray:
    """The probability ``table`` gives each grade (grade 0's for NaN: unjudged), as
    :func:`simulate_clicks` reads a click model's per-grade tables; DataError naming
    ``what`` for a grade the table does not list."""
    return _lookup(table, np.asarray(grades, dtype=float), what)


def _cascade(
    shown: pd.DataFrame,
    ranks: np.ndarray,
    attract: np.ndarray,
    stop: np.ndarray,
    impressions: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Cascade clicks: a result is examined when no earlier result of its list was clicked
    and followed by a stop; a click is an examined result whose uniform is below its
    attractiveness."""
    lists = "impression_id" if "impression_id" in shown.columns else "query_id"
    queries = pd.factorize(shown[lists].astype(str))[0]
    order = np.lexsort((ranks, queries))
    q_sorted, r_sorted = queries[order], ranks[order]
    repeat = (q_sorted[1:] == q_sorted[:-1]) & (r_sorted[1:] == r_sorted[:-1])
    if repeat.any():
        row = int(order[np.flatnonzero(repeat)[0] + 1])
        raise DataError(
            f"shown: row {row + 1}: rank: expected each rank once per query, got rank "
            f"{_cell(shown['rank'].iloc[row])!r} twice in query {_cell(shown['query_id'].iloc[row])!r}"
        )
    n = len(order)
    starts = np.flatnonzero(np.r_[True, q_sorted[1:] != q_sorted[:-1]]) if n else np.zeros(0, int)
    first_of_row = np.repeat(starts, np.diff(np.r_[starts, n]))
    would_click = rng.random((impressions, n)) < attract[order]
    would_stop = rng.random((impressions, n)) < stop[order]
    stops = (would_click & would_stop).astype(np.int32)
    before = np.cumsum(stops, axis=1) - stops  # stops strictly before each row, in all lists
    examined = (before - before[:, first_of_row]) == 0
    clicks = np.empty_like(would_click)
    clicks[:, order] = would_click & examined
    return clicks


def _grades_of(shown: pd.DataFrame, judgments: pd.DataFrame | None) -> np.ndarray:
    """Each shown row's grade, NaN when unjudged."""
    if judgments is None:
        if "relevance" not in shown.columns:
            raise DataError(
                "shown: columns: expected relevance when no judgments are given, got "
                f"{', '.join(map(str, shown.columns))}"
            )
        return pd.to_numeric(shown["relevance"], errors="coerce").to_numpy(dtype=float)
    _need_columns(judgments, ("query_id", "doc_id", "relevance"), "judgments")
    judgments = collapse_frame(judgments)  # subtopic judgments: a document's highest grade
    keys = ["query_id", "doc_id"]
    table = judgments[keys + ["relevance"]].astype({"query_id": str, "doc_id": str})
    twice = table.duplicated(keys).to_numpy()
    if twice.any():
        row = int(np.flatnonzero(twice)[0])
        raise DataError(
            f"judgments: row {row + 1}: expected one grade per (query_id, doc_id), got "
            f"({table['query_id'].iloc[row]!r}, {table['doc_id'].iloc[row]!r}) twice"
        )
    index = pd.MultiIndex.from_arrays([table["query_id"], table["doc_id"]])
    wanted = pd.MultiIndex.from_arrays([shown["query_id"].astype(str), shown["doc_id"].astype(str)])
    at = index.get_indexer(wanted)
    grades = pd.to_numeric(table["relevance"], errors="coerce").to_numpy(dtype=float)
    return np.where(at >= 0, grades[np.maximum(at, 0)], np.nan)


def _lookup(table: Mapping[float, float], grades: np.ndarray, what: str) -> np.ndarray:
    """The table's probability for each grade (grade 0's for NaN: unjudged)."""
    keys = np.array(sorted(table), dtype=float)
    values = np.array([table[k] for k in sorted(table)], dtype=float)
    wanted = np.where(np.isnan(grades), 0.0, grades)
    at = np.clip(np.searchsorted(keys, wanted), 0, len(keys) - 1)
    missing = keys[at] != wanted
    if missing.any():
        grade = wanted[np.flatnonzero(missing)[0]]
        unjudged = np.isnan(grades[np.flatnonzero(missing)[0]])
        got = "unjudged results (grade 0)" if unjudged else f"grade {grade:g}"
        raise DataError(
            f"{what}: expected a probability for every grade shown "
            f"({', '.join(f'{k:g}' for k in keys)} are given), got {got}"
        )
    return values[at]


def _check_grades(table: Mapping[float, float], what: str) -> dict[float, float]:
    if not isinstance(table, Mapping) or not table:
        raise ConfigError(f"{what}: expected a mapping of grade to probability, got {table!r}")
    checked: dict[float, float] = {}
    for grade, probability in table.items():
        try:
            g, p = float(grade), float(probability)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{what}: expected numbers (grade: probability), got {grade!r}: {probability!r}"
            ) from None
        if not np.isfinite(g):
            raise ConfigError(f"{what}: expected a finite grade, got {grade!r}")
        _check_probabilities((p,), f"{what}[{g:g}]")
        checked[g] = p
    return checked


def _check_probabilities(values: tuple[float, ...], what: str) -> None:
    for value in values:
        if not (0.0 <= value <= 1.0):
            raise ConfigError(f"{what}: expected probabilities in [0, 1], got {value!r}")


def _grades_dict(table: Mapping[float, float]) -> dict[str, float]:
    return {f"{grade:g}": float(p) for grade, p in sorted(table.items())}


def _need_columns(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"{what}: expected a DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise DataError(
            f"{what}: columns: expected {', '.join(columns)}, got no {', '.join(missing)} "
            f"(columns: {', '.join(map(str, frame.columns))})"
        )


def _cell(value: object) -> object:
    """A cell as a plain Python value, so that messages read ``1``, not ``np.int64(1)``."""
    return value.item() if isinstance(value, np.generic) else value
