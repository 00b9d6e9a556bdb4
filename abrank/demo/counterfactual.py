"""The bundled counterfactual demo's third ranking: a fusion of the online demo's two arms.

The online demo (:mod:`abrank.demo.online`) logged BM25 and a cross-encoder reranker. The
third ranking, never shown, fuses them: each query's documents that either arm showed,
ordered by their mean rank over the two arms (a document an arm did not show counts as
rank 11 there; ties by doc id), top 10. Every one of its documents was logged for its
query, so the counterfactual estimate has full support. Written as a gzip TREC run keyed by
the log's ``query`` column (``experiments/data/demo-counterfactual-fusion.run.gz``).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd

from abrank.demo.online import ONLINE_ARMS, TOP_K

FUSION_FILE = "demo-counterfactual-fusion.run.gz"

__all__ = ["FUSION_FILE", "fusion_run", "write_counterfactual_demo"]


def fusion_run(log: pd.DataFrame) -> pd.DataFrame:
    """The fused top 10 per query (query_id, doc_id, rank, score) from the online log."""
    frame = log[["query", "doc_id", "rank", "arm"]].astype(
        {"query": np.int64, "doc_id": np.int64, "rank": np.float64, "arm": str}
    )
    mean = frame.groupby(["query", "doc_id", "arm"], observed=True)["rank"].mean().unstack("arm")
    mean = mean.reindex(columns=list(ONLINE_ARMS)).fillna(float(TOP_K + 1))
    score = -mean.mean(axis=1)
    fused = score.rename("score").reset_index()
    fused = fused.sort_values(["query", "score", "doc_id"], ascending=[True, False, False])
    fused["rank"] = fused.groupby("query").cumcount() + 1
    fused = fused[fused["rank"] <= TOP_K]
    return fused.rename(columns={"query": "query_id"})[["query_id", "doc_id", "rank", "score"]]


def write_counterfactual_demo(folder: str | Path) -> Path:
    """Write the fused run next to the online demo's log in ``folder``; its path."""
    folder = Path(folder)
    log = pd.read_parquet(
        folder / "demo-online-log.parquet", columns=["query", "doc_id", "rank", "arm"]
    )
    run = fusion_run(log)
    lines = (
        run["query_id"].astype(str)
        + " Q0 "
        + run["doc_id"].astype(str)
        + " "
        + run["rank"].astype(str)
        + " "
        + run["score"].map(lambda v: f"{v:.4f}")
        + " fusion\n"
    )
    path = folder / FUSION_FILE
    with gzip.GzipFile(path, "wb", mtime=0) as out:
        out.write("".join(lines).encode())
    return path
