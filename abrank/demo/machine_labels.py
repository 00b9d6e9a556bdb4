"""Synthetic machine labels for the demo: a labeller of known confusion, and a human sample.

abrank never calls a model; to try machine-labelled judgments (DESIGN.md "Machine-labelled
judgments") on known ground, :func:`machine_labels` plays an LLM assessor over a qrels
frame: each grade is off by one with probability ``off_by_one`` (up or down with equal
chance; a grade at either end of the scale moves inward), and with ``bias`` > 0 each
``favoured`` (query, document) pair that the noise left alone is graded one higher with
probability ``bias`` (at most the top grade): a judge that favours one arm's documents.
:func:`favoured_documents` names the treatment's documents that the control does not show
in its top k. :func:`human_sample` keeps the human judgments of a uniform random share of
the queries (the sample prediction-powered inference assumes).
:func:`write_machine_label_demo` writes the files of
``experiments/demo-machine-labels.yaml``; the same seed gives the same files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from abrank.demo.offline import DEFAULT_SEED, generate_demo

__all__ = [
    "MACHINE_LABEL_FILES",
    "favoured_documents",
    "human_sample",
    "machine_labels",
    "write_machine_label_demo",
]

#: The files :func:`write_machine_label_demo` writes: the human sample, the machine labels.
MACHINE_LABEL_FILES = ("demo-human-sample.tsv", "demo-machine-labels.tsv")
KEY = ["query_id", "doc_id"]


def machine_labels(
    judgments: pd.DataFrame,
    *,
    seed: int,
    off_by_one: float = 0.3,
    favoured: pd.DataFrame | None = None,
    bias: float = 0.0,
    grade: str = "grade",
) -> pd.DataFrame:
    """The labeller's grades of every (query, document) pair of ``judgments`` (columns
    ``query_id``, ``doc_id`` and ``grade``), in the same order and columns (module text)."""
    rng = np.random.default_rng(seed)
    true = judgments[grade].to_numpy(dtype=np.int64)
    low, high = int(true.min()), int(true.max())
    noisy = rng.random(true.size) < off_by_one
    step = np.where(rng.random(true.size) < 0.5, -1, 1)
    step = np.where(true == low, 1, np.where(true == high, -1, step))
    labels = np.where(noisy, true + step, true)
    if favoured is not None and bias > 0:
        marked = pd.MultiIndex.from_frame(judgments[KEY]).isin(
            pd.MultiIndex.from_frame(favoured[KEY])
        )
        raised = marked & ~noisy & (rng.random(true.size) < bias)
        labels = np.where(raised, np.minimum(labels + 1, high), labels)
    out = judgments[KEY].copy()
    out[grade] = labels.astype(np.int64)
    return out.reset_index(drop=True)


def favoured_documents(
    control: pd.DataFrame, treatment: pd.DataFrame, *, k: int = 10, rank: str = "position"
) -> pd.DataFrame:
    """The (query, document) pairs in the treatment's top ``k`` but not the control's."""
    top_t = treatment.loc[treatment[rank] <= k, KEY]
    top_c = control.loc[control[rank] <= k, KEY]
    only = ~pd.MultiIndex.from_frame(top_t).isin(pd.MultiIndex.from_frame(top_c))
    return top_t.loc[only].reset_index(drop=True)


def human_sample(judgments: pd.DataFrame, *, share: float, seed: int) -> pd.DataFrame:
    """The judgments of a uniform random ``share`` of the judged queries (at least one)."""
    rng = np.random.default_rng(seed)
    queries = np.asarray(pd.unique(judgments["query_id"]))
    size = max(1, int(round(share * queries.size)))
    kept = rng.choice(queries, size=size, replace=False)
    return judgments.loc[judgments["query_id"].isin(kept)].reset_index(drop=True)


def write_machine_label_demo(
    folder: str | Path,
    *,
    seed: int = DEFAULT_SEED,
    n_queries: int = 2000,
    share: float = 0.1,
    bias: float = 0.3,
) -> list[Path]:
    """Write the human sample (``share`` of the demo's queries) and the biased labeller's
    machine labels of every demo judgment into ``folder``; return the files written."""
    data = generate_demo(seed=seed, n_queries=n_queries)
    favoured = favoured_documents(data.control, data.treatment)
    labels = machine_labels(data.judgments, seed=seed + 1, favoured=favoured, bias=bias)
    sample = human_sample(data.judgments, share=share, seed=seed + 2)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in MACHINE_LABEL_FILES]
    for path, frame in zip(paths, (sample, labels), strict=True):
        path.write_bytes(frame.to_csv(index=False, sep="\t").encode())
    return paths
