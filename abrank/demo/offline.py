"""The bundled demo: a deterministic, realistic offline replay of a reranker experiment.

A production ranker (BM25-like, the control) and a cross-encoder reranker of its candidates
(the treatment) replay the same queries. The generator draws a latent graded relevance
(0-3) for a candidate pool of every query, ranks the pool with a noisy production score,
lets the reranker reorder the production top ``depth`` (plus, occasionally, a candidate from
deeper in the pool) with a sharper score, and judges a pool the way an annotation team
would: most of the production top 20 and a few other candidates of each query. The
result carries the things a real readout has to cope with:

* graded judgments 0-3, and documents in either arm's top ``depth`` that were never judged
  (more of them in the treatment, which pulls up deeper candidates);
* about 5% of queries whose judgments hold no relevant document;
* about 1% of queries missing from the treatment log (a reranker timeout);
* ``locale`` and ``device`` segment columns with skewed shares, one locale (ja-JP, 1.4%)
  too small for a segment breakdown at 30 queries, and a treatment effect that is
  smaller on ja-JP and larger on mobile.

With the defaults (2,000 queries, top 20) control MRR@10 is about 0.54 and treatment
MRR@10 about 0.78 (grade >= 1 relevant, over queries with a relevant document, missing
queries scored 0; the committed files give 0.539 and 0.785). Other sizes shift these
figures (a deeper pool holds more relevant documents). Every step is vectorized over a
(queries x pool) matrix, so the same code writes the 100,000 x 100 benchmark experiment
(about 12 s). The same seed gives identical frames and byte-identical files.
"""

from __future__ import annotations

import gzip
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from abrank.errors import ConfigError

DEFAULT_SEED = 20261130

#: Segment values and their shares of the queries (locales are allotted exactly).
LOCALES: dict[str, float] = {
    "en-US": 0.55,
    "de-DE": 0.18,
    "fr-FR": 0.14,
    "es-ES": 0.116,
    "ja-JP": 0.014,
}
DEVICES: dict[str, float] = {"mobile": 0.52, "desktop": 0.38, "tablet": 0.10}

#: Output layouts of :func:`write_demo`: layout -> file names of control, treatment, judgments.
DEMO_LAYOUTS: dict[str, tuple[str, str, str]] = {
    # the bundled demo: three formats on purpose, to exercise the loaders
    "demo": ("demo-control.csv.gz", "demo-treatment.jsonl.gz", "demo-judgments.tsv"),
    "parquet": ("control.parquet", "treatment.parquet", "judgments.parquet"),
    "trec": ("control.run", "treatment.run", "qrels.txt"),
}

# Model constants, calibrated so that the defaults hit the documented MRR@10 figures.
_HARD_SHARE = 0.018  # queries with no relevant candidate at all
_MISSING_SHARE = 0.01  # queries the reranker timed out on
_EXTRA_RELEVANT = 1.5  # relevant candidates per query beyond the first (mean, per 30)
_GRADE_GIVEN_RELEVANT = (0.50, 0.32, 0.18)  # P(grade 1, 2, 3 | relevant)
_CONTROL_WEIGHT = 0.57  # production score: weight of the grade against unit noise
_TREATMENT_WEIGHT = 1.02  # reranker score: the same, sharper
_TREATMENT_SEGMENT = {"ja-JP": 0.8, "mobile": 1.12}  # multipliers of the reranker's weight
_EXTRA_CANDIDATE = 0.10  # chance that a deeper pool candidate reaches the reranker
_JUDGED_DEPTH = 20  # annotators judge the production top 20 (or top `depth` if shorter)...
_JUDGED_TOP = 0.93  # ...each document with this chance...
_JUDGED_OTHER = 3.5  # ...plus about this many other pool candidates per query


@dataclass(frozen=True)
class DemoData:
    """One generated experiment: two ranking logs and their judgments.

    Attributes
    ----------
    control, treatment:
        Ranking logs with columns ``query_id``, ``doc_id``, ``position`` (1 = top),
        ``score`` (descending with position; ties broken by ``doc_id`` descending, as
        trec_eval does), ``locale`` and ``device``; rows sorted by query, then position.
        The treatment lacks the queries the reranker timed out on.
    judgments:
        Columns ``query_id``, ``doc_id``, ``grade`` (0-3), sorted by query and document.
    seed, n_queries, depth:
        The arguments the data was generated with.
    """

    control: pd.DataFrame
    treatment: pd.DataFrame
    judgments: pd.DataFrame
    seed: int
    n_queries: int
    depth: int

    def to_dict(self) -> dict[str, Any]:
        """Sizes and settings of the generated data (JSON-safe), e.g. for a benchmark log."""
        return {
            "seed": self.seed,
            "n_queries": self.n_queries,
            "depth": self.depth,
            "rows": {
                "control": len(self.control),
                "treatment": len(self.treatment),
                "judgments": len(self.judgments),
            },
            "queries": {
                "control": int(self.control["query_id"].nunique()),
                "treatment": int(self.treatment["query_id"].nunique()),
                "judgments": int(self.judgments["query_id"].nunique()),
            },
        }


def generate_demo(*, seed: int = DEFAULT_SEED, n_queries: int = 2000, depth: int = 20) -> DemoData:
    """Generate the demo experiment in memory (deterministic for a given seed and size).

    ``n_queries`` queries, each logged with its top ``depth`` documents per arm. Raises
    :class:`ConfigError` for sizes that make no experiment.
    """
    _check_sizes(seed, n_queries, depth)
    rng = np.random.default_rng(seed)
    n = n_queries
    pool = depth + max(depth // 2, 5)

    # Per-query attributes.
    locale_codes = rng.permutation(_allot(n, list(LOCALES.values())))
    device_codes = rng.choice(len(DEVICES), size=n, p=list(DEVICES.values()))
    locale_names = np.array(list(LOCALES))
    device_names = np.array(list(DEVICES))
    hard = rng.random(n) < _HARD_SHARE
    n_relevant = np.where(hard, 0, 1 + rng.poisson(_EXTRA_RELEVANT * pool / 30, size=n))

    # Candidate pool: latent grades and document numbers (distinct within a query).
    relevant = _ranks(rng.random((n, pool))) < n_relevant[:, None]
    cumulative = np.cumsum(_GRADE_GIVEN_RELEVANT)
    grade_draw = np.searchsorted(cumulative, rng.random((n, pool)), side="right")
    grades = np.where(relevant, np.minimum(grade_draw, 2) + 1, 0).astype(np.int8)
    base = rng.integers(0, 10**7, size=n, dtype=np.int64)
    stride = 10 * rng.integers(1, 10**5, size=n, dtype=np.int64) + rng.choice([1, 3, 7, 9], size=n)
    steps = np.arange(pool, dtype=np.int64)[None, :] * stride[:, None]
    doc_numbers = (base[:, None] + steps) % 10**7  # stride coprime to 10**7: no repeats

    # Control: a noisy production score over the whole pool.
    control_raw = _CONTROL_WEIGHT * grades + rng.standard_normal((n, pool))
    offset = rng.normal(14.0, 2.5, size=n)  # BM25-like scores vary by query
    control_score = np.round(offset[:, None] + 2.2 * control_raw, 4)
    control_order = _order(control_score, doc_numbers)
    control_rank = _ranks_of(control_order)
    in_control_top = control_rank < depth

    # Treatment: the reranker sees the production top `depth`, plus a few deeper candidates.
    weight = np.full(n, _TREATMENT_WEIGHT)
    weight[locale_names[locale_codes] == "ja-JP"] *= _TREATMENT_SEGMENT["ja-JP"]
    weight[device_names[device_codes] == "mobile"] *= _TREATMENT_SEGMENT["mobile"]
    reaches = in_control_top | (rng.random((n, pool)) < _EXTRA_CANDIDATE)
    treatment_raw = weight[:, None] * grades + rng.standard_normal((n, pool))
    treatment_score = np.where(reaches, np.round(1.6 * treatment_raw - 1.0, 4), -np.inf)
    treatment_order = _order(treatment_score, doc_numbers)

    # Judgments: most of the production top 20, and a few other candidates, at any depth
    # (the judging budget per query does not grow with the log's depth).
    judged_depth = min(depth, _JUDGED_DEPTH)
    in_judged_top = control_rank < judged_depth
    other = min(1.0, _JUDGED_OTHER / (pool - judged_depth))
    judged = rng.random((n, pool)) < np.where(in_judged_top, _JUDGED_TOP, other)
    judged[np.arange(n), control_order[:, 0]] = True  # every query has at least one judgment
    missing = np.zeros(n, dtype=bool)
    missing[rng.choice(n, size=int(round(_MISSING_SHARE * n)), replace=False)] = True

    del control_raw, treatment_raw, reaches, relevant, grade_draw, steps, control_rank

    # Text columns are built once (Arrow strings) and gathered by index into each table.
    query_ids = _ids("q", np.arange(n), max(5, len(str(n - 1))))
    doc_ids = _ids("d", doc_numbers.ravel(), 7)
    segments = {
        "locale": pa.array(list(LOCALES)).take(pa.array(locale_codes)),
        "device": pa.array(list(DEVICES)).take(pa.array(device_codes)),
    }
    control = _log(query_ids, segments, doc_ids, control_score, control_order[:, :depth])
    del control_score, control_order
    treatment = _log(
        query_ids, segments, doc_ids, treatment_score, treatment_order[:, :depth], keep=~missing
    )
    del treatment_score, treatment_order
    rows, cols = np.nonzero(judged)
    order = np.lexsort((doc_numbers[rows, cols], rows))
    rows, cols = rows[order], cols[order]
    judgments = pd.DataFrame(
        {
            "query_id": _strings(query_ids.take(pa.array(rows))),
            "doc_id": _strings(doc_ids.take(pa.array(rows * pool + cols))),
            "grade": grades[rows, cols].astype(np.int64),
        }
    )
    return DemoData(control, treatment, judgments, seed, n_queries, depth)


def write_demo(
    folder: str | Path,
    *,
    seed: int = DEFAULT_SEED,
    n_queries: int = 2000,
    depth: int = 20,
    formats: Collection[str] = ("demo",),
) -> list[Path]:
    """Generate the demo experiment and write it into ``folder``; return the files written.

    Layouts (``formats``):

    * ``demo``: ``demo-control.csv.gz`` (``query_id,doc_id,position,score,locale,device``),
      ``demo-treatment.jsonl.gz`` (keys ``qid``, ``doc``, ``pos``, ``score``, ``locale``,
      ``device``) and ``demo-judgments.tsv`` (``query_id``, ``doc_id``, ``grade``): three
      formats and two namings on purpose, so that the demo exercises the loaders and the
      config's column mapping;
    * ``parquet``: ``control.parquet``, ``treatment.parquet`` (columns ``qid``, ``docno``,
      ``rank``, ``score``, ``locale``, ``device``) and ``judgments.parquet``;
    * ``trec``: ``control.run``, ``treatment.run`` (6-column TREC runs) and ``qrels.txt``.

    Files are byte-identical for the same arguments (gzip without name or timestamp).
    """
    unknown = sorted(set(formats) - set(DEMO_LAYOUTS))
    if unknown or not formats:
        raise ConfigError(
            f"formats: expected some of {', '.join(DEMO_LAYOUTS)}, got {', '.join(unknown) or 'none'}"
        )
    data = generate_demo(seed=seed, n_queries=n_queries, depth=depth)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for layout in DEMO_LAYOUTS:  # a fixed order, whatever the caller's order
        if layout not in formats:
            continue
        names = DEMO_LAYOUTS[layout]
        paths = [folder / name for name in names]
        if layout == "demo":
            _write_gzip(paths[0], data.control.to_csv(index=False).encode())
            renames = {"query_id": "qid", "doc_id": "doc", "position": "pos"}
            treatment = data.treatment.rename(columns=renames)
            _write_gzip(paths[1], treatment.to_json(orient="records", lines=True).encode())
            paths[2].write_bytes(data.judgments.to_csv(index=False, sep="\t").encode())
        elif layout == "parquet":
            renames = {"query_id": "qid", "doc_id": "docno", "position": "rank"}
            for path, frame in zip(paths, (data.control, data.treatment), strict=False):
                frame.rename(columns=renames).to_parquet(path, index=False, compression="zstd")
            data.judgments.to_parquet(paths[2], index=False, compression="zstd")
        else:
            arms = ((data.control, "bm25"), (data.treatment, "reranker"))
            for path, (frame, tag) in zip(paths, arms, strict=False):
                _write_trec_run(path, frame, tag)
            _write_qrels(paths[2], data.judgments)
        written.extend(paths)
    return written


# --------------------------------------------------------------------------- helpers


def _check_sizes(seed: int, n_queries: int, depth: int) -> None:
    checks = [
        ("seed", seed, 0, "a non-negative integer"),
        ("n_queries", n_queries, 10, "an integer >= 10"),
        ("depth", depth, 1, "an integer >= 1"),
    ]
    for name, value, low, expected in checks:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"generate_demo: {name}: expected {expected}, got {value!r}")
    if depth > 10_000:
        raise ConfigError(f"generate_demo: depth: expected at most 10000, got {depth}")


def _allot(n: int, shares: list[float]) -> np.ndarray:
    """Codes 0..len(shares)-1 in exact proportions (largest remainders), unshuffled."""
    exact = np.asarray(shares) / np.sum(shares) * n
    counts = np.floor(exact).astype(np.int64)
    short = n - counts.sum()
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return np.repeat(np.arange(len(shares)), counts)


def _order(score: np.ndarray, doc_numbers: np.ndarray) -> np.ndarray:
    """Columns of each row by score descending, ties by document id descending (trec_eval)."""
    return np.lexsort((-doc_numbers, -score), axis=1)


def _ranks(values: np.ndarray) -> np.ndarray:
    """0-based rank of each value within its row (ascending)."""
    return _ranks_of(np.argsort(values, axis=1))


def _ranks_of(order: np.ndarray) -> np.ndarray:
    """Invert a row-wise ordering: the position of each column in it."""
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(order.shape[1])[None, :], axis=1)
    return ranks


def _ids(prefix: str, numbers: np.ndarray, width: int) -> pa.Array:
    """``prefix`` + the numbers zero-padded to ``width`` digits, as an Arrow string array."""
    digits = pc.utf8_lpad(pc.cast(pa.array(numbers, type=pa.int64()), pa.string()), width, "0")
    return pc.binary_join_element_wise(prefix, digits, "")


def _strings(values: pa.Array) -> pd.api.extensions.ExtensionArray:
    return pd.array(values, dtype="str")


def _log(
    query_ids: pa.Array,
    segments: dict[str, pa.Array],
    doc_ids: pa.Array,
    score: np.ndarray,
    top: np.ndarray,
    keep: np.ndarray | None = None,
) -> pd.DataFrame:
    """The top columns of each (kept) query as log rows, sorted by query and position."""
    n, depth = top.shape
    pool = score.shape[1]
    queries = np.arange(n) if keep is None else np.flatnonzero(keep)
    rows = np.repeat(queries, depth)
    cols = top[queries].ravel()
    row_index = pa.array(rows)
    frame = pd.DataFrame(
        {
            "query_id": _strings(query_ids.take(row_index)),
            "doc_id": _strings(doc_ids.take(pa.array(rows * pool + cols))),
            "position": np.tile(np.arange(1, depth + 1, dtype=np.int64), len(queries)),
            "score": score[rows, cols],
        }
    )
    for name, values in segments.items():
        frame[name] = _strings(values.take(row_index))
    return frame


def _write_gzip(path: Path, payload: bytes) -> None:
    """Gzip without file name or timestamp in the header, so the bytes depend on content only."""
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
    ):
        packed.write(payload)


def _write_trec_run(path: Path, frame: pd.DataFrame, tag: str) -> None:
    """A 6-column TREC run: ``query Q0 doc rank score tag``."""
    _write_space_separated(
        path,
        {
            "query": frame["query_id"],
            "q0": "Q0",
            "doc": frame["doc_id"],
            "rank": frame["position"],
            "score": frame["score"],
            "tag": tag,
        },
    )


def _write_qrels(path: Path, judgments: pd.DataFrame) -> None:
    """TREC qrels: ``query 0 doc grade``."""
    _write_space_separated(
        path,
        {
            "query": judgments["query_id"],
            "iteration": "0",
            "doc": judgments["doc_id"],
            "grade": judgments["grade"],
        },
    )


def _write_space_separated(path: Path, columns: dict[str, Any]) -> None:
    """Space-separated lines without header or quotes, by pyarrow's C writer (fast at scale)."""
    import pyarrow as pa
    import pyarrow.csv as pc

    length = next(len(c) for c in columns.values() if not isinstance(c, str))
    arrays = {
        name: pa.array(np.full(length, c)) if isinstance(c, str) else pa.array(c.to_numpy())
        for name, c in columns.items()
    }
    options = pc.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    pc.write_csv(pa.table(arrays), path, write_options=options)
