"""A simulated search world with known click behaviour, for counterfactual evaluation.

Queries (Zipf-like popularity) each have a pool of documents with a known attractiveness
alpha (Beta-distributed); rankers order each pool by alpha plus their own noise (a fixed,
deterministic list per query); users click under a known model. Because everything is
known, the expected click metrics of any ranker follow exactly from the model
(:meth:`ClickWorld.true_metric`), which is what the counterfactual estimators are checked
against (tests, ``benchmarks/bench_counterfactual.py``):

* ``pbm``: the position-based model, P(click at rank r) = p_r * alpha_d, independent ranks;
* ``cascade``: the user scans down and clicks the first attractive result, then stops (the
  examination of a rank depends on the documents above it: the PBM does not hold).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from abrank.stats.pbm import expected_metric

__all__ = ["ClickWorld", "make_world"]


@dataclass(frozen=True)
class ClickWorld:
    """Queries, documents, rankers' lists and the examination by rank.

    ``alpha`` is (queries, pool): each document's attractiveness; ``lists[name]`` is
    (queries, k): pool indices of the ranker's top k; ``popularity`` the queries' shares;
    ``examination`` p_1..p_k (p_1 = 1)."""

    alpha: np.ndarray
    lists: dict[str, np.ndarray]
    popularity: np.ndarray
    examination: np.ndarray

    @property
    def k(self) -> int:
        return int(self.examination.size)

    def doc_ids(self, docs: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Document ids (int) of pool indices ``docs`` of queries ``queries``."""
        return queries * 1000 + docs

    def true_metric(self, ranker: str, family: str, k: int | None = None) -> float:
        """The exact expected ``family@k`` of ``ranker`` per impression under the PBM,
        averaged over the queries' popularity."""
        k = k or self.k
        top = self.lists[ranker][:, :k]
        c = self.examination[None, :k] * np.take_along_axis(self.alpha, top, axis=1)
        return float(expected_metric(family, c) @ self.popularity)

    def run(self, ranker: str) -> pd.DataFrame:
        """The ranker's lists as a rankings frame (query_id, doc_id, rank; ids as text)."""
        top = self.lists[ranker]
        n, k = top.shape
        queries = np.repeat(np.arange(n), k)
        return pd.DataFrame(
            {
                "query_id": queries.astype(str),
                "doc_id": self.doc_ids(top.ravel(), queries).astype(str),
                "rank": np.tile(np.arange(1, k + 1), n),
            }
        )

    def log(
        self,
        rng: np.random.Generator,
        impressions: int,
        rankers: dict[str, float],
        *,
        model: str = "pbm",
        impressions_per_user: float = 5.0,
    ) -> pd.DataFrame:
        """A click log of ``impressions`` impressions: users (about ``impressions_per_user``
        each) are randomized to the rankers by their shares; one row per shown result."""
        names = list(rankers)
        shares = np.asarray(list(rankers.values()), dtype=np.float64)
        users = max(1, int(round(impressions / impressions_per_user)))
        owner = np.sort(rng.integers(0, users, impressions))
        arm_of_user = rng.choice(len(names), size=users, p=shares / shares.sum())
        arm = arm_of_user[owner]
        query = rng.choice(self.popularity.size, size=impressions, p=self.popularity)
        k = self.k
        top = np.empty((impressions, k), dtype=np.int64)
        for index, name in enumerate(names):  # per ranker, vectorised over its impressions
            mine = arm == index
            top[mine] = self.lists[name][query[mine]]
        alpha = np.take_along_axis(self.alpha[query], top, axis=1)
        if model == "pbm":
            clicked = rng.random((impressions, k)) < self.examination[None, :] * alpha
        elif model == "cascade":
            attractive = rng.random((impressions, k)) < alpha
            first = np.where(attractive.any(axis=1), attractive.argmax(axis=1), k)
            clicked = np.arange(k)[None, :] == first[:, None]
        else:
            raise ValueError(f"model: expected 'pbm' or 'cascade', got {model!r}")
        return pd.DataFrame(
            {
                "impression_id": np.repeat(np.arange(1, impressions + 1), k),
                "user_id": np.repeat(owner, k),
                "rank": np.tile(np.arange(1, k + 1), impressions),
                "doc_id": self.doc_ids(top, query[:, None]).ravel(),
                "clicked": clicked.ravel().astype(np.int8),
                "query": np.repeat(query, k),
                "arm": np.repeat(np.asarray(names)[arm], k),
            }
        )


def make_world(
    rng: np.random.Generator,
    *,
    queries: int = 200,
    pool: int = 20,
    k: int = 10,
    examination: np.ndarray | None = None,
    noise: dict[str, float] | None = None,
) -> ClickWorld:
    """A world of ``queries`` queries with ``pool`` documents each; rankers named in
    ``noise`` (default A, B, C) order each pool by alpha + that much Gaussian noise;
    examination defaults to 1 / rank."""
    alpha = rng.beta(1.0, 3.0, size=(queries, pool))
    noise = noise or {"A": 0.25, "B": 0.25, "C": 0.15}
    lists = {
        name: np.argsort(-(alpha + sd * rng.standard_normal(alpha.shape)), axis=1)[:, :k]
        for name, sd in noise.items()
    }
    shares = 1.0 / (5.0 + np.arange(queries))
    exam = 1.0 / np.arange(1, k + 1) if examination is None else np.asarray(examination, float)
    return ClickWorld(alpha, lists, shares / shares.sum(), exam)
