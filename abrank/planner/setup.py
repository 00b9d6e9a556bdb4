"""What the planner's simulated users see: each arm's top results and every team-draft
interleaving of them, as per-position click probabilities.

The offline experiment gives two rankings and judgments. For the queries in both rankings
that have judgments, each arm shows its top ``depth`` results; per position the
probability of a click before the user's own propensity is applied is
``examination(rank) * attractiveness[grade]`` for the position-based model and
``attractiveness[grade]`` for the cascade (whose examination depends on earlier clicks).

Team-draft interleaving (:func:`abrank.interleaving.build.team_draft_codes`) is random
only through its coin flips, one per round of two picks, so a list of ``depth`` results
has ``2 ** ceil(depth / 2)`` equally likely flip patterns. Each is built once per query
(32 variants for ``depth`` 10), and an impression draws one uniformly: the same
distribution as a fresh interleaving per impression, exactly. Past
:data:`MAX_EXACT_ROUNDS` rounds a pool of :data:`POOL_VARIANTS` random patterns stands in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from abrank.errors import DataError
from abrank.interleaving.build import team_draft_codes
from abrank.interleaving.clicks import (
    Cascade,
    ClickModel,
    PositionBased,
    grade_probabilities,
    shown_grades,
)

MAX_EXACT_ROUNDS = 10
"""Up to this many coin-flip rounds every flip pattern is built (1,024 variants)."""
POOL_VARIANTS = 1024
"""Past :data:`MAX_EXACT_ROUNDS`, how many random flip patterns a query's pool holds."""

CONTROL_TEAM, TREATMENT_TEAM, NO_TEAM = 0, 1, -1


@dataclass(frozen=True)
class ClickSetup:
    """Per-position click probabilities of the two arms' lists and of the interleavings.

    ``arm_probability``: (2, queries, depth), the control's (0) and the treatment's (1)
    top results; ``variant_probability`` and ``variant_stop``: (queries * variants,
    depth), row ``q * variants + v`` the ``v``-th interleaving of query ``q``;
    ``variant_team``: the team of each shown result (0 control, 1 treatment, -1 no
    result). Probabilities are 0 past the end of a list. ``cascade``: the examination
    stops after a click with probability ``variant_stop`` (else every result is
    examined by its PBM probability, already in the probabilities).
    """

    query_ids: tuple[str, ...]
    arm_probability: np.ndarray
    variant_probability: np.ndarray
    variant_stop: np.ndarray
    variant_team: np.ndarray
    variants: int
    depth: int
    cascade: bool

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)


def top_results(rankings: pd.DataFrame, queries: pd.Index, depth: int) -> pd.DataFrame:
    """The top ``depth`` results of each of ``queries`` (by rank, ties in row order)."""
    frame = rankings[["query_id", "doc_id", "rank"]].astype({"query_id": str, "doc_id": str})
    frame = frame[frame["query_id"].isin(queries)]
    frame = frame.sort_values(["query_id", "rank"], kind="stable")
    frame = frame[frame.groupby("query_id", sort=False).cumcount() < depth]
    return frame.reset_index(drop=True)


def shared_queries(
    control: pd.DataFrame, treatment: pd.DataFrame, judgments: pd.DataFrame
) -> pd.Index:
    """The queries of both rankings that have judgments, sorted; DataError when none."""
    ids = [
        pd.Index(pd.unique(frame["query_id"].astype(str).to_numpy(dtype=object)))
        for frame in (control, treatment, judgments)
    ]
    shared = ids[0].intersection(ids[1]).intersection(ids[2]).sort_values()
    if shared.empty:
        raise DataError(
            "rankings, judgments: expected queries in both rankings that have judgments, got "
            f"none ({len(ids[0]):,} control, {len(ids[1]):,} treatment and {len(ids[2]):,} "
            "judged queries)"
        )
    return shared


def click_setup(
    control: pd.DataFrame,
    treatment: pd.DataFrame,
    judgments: pd.DataFrame,
    model: ClickModel,
    *,
    depth: int = 10,
    seed: int = 0,
) -> ClickSetup:
    """The per-position click probabilities of both arms and of every team-draft
    interleaving of them, over the queries both rankings hold and the judgments cover
    (module text). ``seed`` draws the flip patterns only when they are too many to build
    them all. DataError for a grade the click model does not list."""
    queries = shared_queries(control, treatment, judgments)
    tops = [top_results(frame, queries, depth) for frame in (control, treatment)]
    both = pd.concat(tops, ignore_index=True)
    doc_codes, _ = pd.factorize(both["doc_id"])
    n_docs = max(int(doc_codes.max(initial=-1)) + 1, 1)
    grades = shown_grades(both, judgments)
    key_of = queries.get_indexer(pd.Index(both["query_id"])).astype(np.int64) * n_docs + doc_codes
    keys, first = np.unique(key_of, return_index=True)
    key_grades = grades[first]

    matrices = []
    split = len(tops[0])
    for part in (slice(0, split), slice(split, None)):
        frame = both.iloc[part]
        rows = queries.get_indexer(pd.Index(frame["query_id"]))
        columns = frame.groupby("query_id", sort=False).cumcount().to_numpy()
        matrix = np.full((len(queries), depth), -1, dtype=np.int64)
        matrix[rows, columns] = doc_codes[part]
        matrices.append(matrix)

    def probabilities(codes: np.ndarray, query_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        shown = codes >= 0
        at = np.searchsorted(keys, query_rows[:, None] * n_docs + np.maximum(codes, 0))
        grade = key_grades[np.minimum(at, len(keys) - 1)]
        grade = np.where(shown, grade, np.nan)
        attract = grade_probabilities(model.attractiveness, grade.ravel(), "attractiveness")
        attract = np.where(shown.ravel(), attract, 0.0).reshape(codes.shape)
        if isinstance(model, Cascade):
            stop = grade_probabilities(model.stop, grade.ravel(), "stop").reshape(codes.shape)
            return attract, np.where(shown, stop, 0.0)
        assert isinstance(model, PositionBased)
        ranks = np.arange(1, depth + 1)
        return attract * model.examination_at(ranks)[None, :], np.zeros(codes.shape)

    query_rows = np.arange(len(queries), dtype=np.int64)
    arm_probability = np.stack([probabilities(m, query_rows)[0] for m in matrices])

    flips = flip_patterns((depth + 1) // 2, seed)
    variants = flips.shape[0]
    rows = np.repeat(query_rows, variants)
    shown, team = team_draft_codes(
        matrices[0][rows], matrices[1][rows], np.tile(flips, (len(queries), 1)), depth
    )
    variant_probability, variant_stop = probabilities(shown, rows)
    return ClickSetup(
        query_ids=tuple(queries),
        arm_probability=arm_probability,
        variant_probability=variant_probability,
        variant_stop=variant_stop,
        variant_team=team.astype(np.int8),
        variants=variants,
        depth=depth,
        cascade=isinstance(model, Cascade),
    )


def flip_patterns(rounds: int, seed: int = 0) -> np.ndarray:
    """The coin flips of the interleavings built per query: every pattern of ``rounds``
    flips while there are at most :data:`MAX_EXACT_ROUNDS`, else :data:`POOL_VARIANTS`
    patterns drawn from ``seed``; a bool matrix (variant x round), true: control first."""
    rounds = max(int(rounds), 1)
    if rounds <= MAX_EXACT_ROUNDS:
        patterns = np.arange(2**rounds, dtype=np.int64)
        return ((patterns[:, None] >> np.arange(rounds)) & 1).astype(bool)
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), rounds]))
    return rng.random((POOL_VARIANTS, rounds)) < 0.5
