"""The bundled interleaving demo: a deterministic team-draft interleaving of the demo's rankers.

Every impression shows one top-10 list merged by team-draft interleaving (Radlinski, Kurup
& Joachims, CIKM 2008) from the two rankings of the bundled offline demo
(:func:`abrank.demo.generate_demo`, made in memory from its own seed: ``bm25``, the
control, and ``reranker``, the treatment), and each shown result is logged with the team
that contributed it, clicked or not. The generator is vectorized over impressions:

* **users**: a device each (the online demo's shares, a segment label only), a click
  propensity (lognormal with mean 1, so that a user's impressions are correlated) and
  1 + Poisson(3) impressions (4 on average) at uniform times over two weeks;
* **queries**: each impression searches one of the demo queries that both rankers served
  (the reranker timed out on 1% of them), by a Zipf-like popularity
  ``1 / (30 + i)`` over a random order of the queries;
* **interleaving**: :func:`abrank.interleave` over two rankings frames keyed by the
  *impression* id (each impression's rows are its query's ranking), so that the coin
  flips, a hash of (seed, impression id), are fresh for every impression even when a
  query repeats: the same query is shown in different merges, as it would be live;
* **clicks**: the position-based model :class:`abrank.interleaving.PositionBased` with
  its defaults (examination ``1 / rank``, attractiveness by judged grade, the
  "navigational" user; unjudged results take grade 0's), times the user's propensity,
  at most 0.95;
* **dwell**: a clicked result satisfies with a chance that rises with its grade; satisfied
  clicks dwell long (lognormal around 75 s), others short (around 9 s), so a ``sat_dwell``
  of 30 s separates them.

With the defaults (3,000 users) the log holds about 12,000 impressions (120,000 rows, a
Parquet file of about 400 KB). The committed draw has 12,064 impressions of 1,808 distinct
queries; by clicks the reranker wins 2,615, ties 8,235 (7,587 of them without a click) and
loses 1,214, so Δ_AB = (2,615 + 8,235 / 2) / 12,064 − 1/2 = +0.058; by satisfied clicks
(dwell >= 30 s) it wins 1,884, ties 9,403 and loses 777. 37.1% of the impressions have a
click, and the reranker's team placed the first result of 5,985 of them (49.6%). The same
arguments give identical frames and byte-identical files (for one pyarrow version: the
Parquet footer names it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from abrank.demo.offline import DEFAULT_SEED as DEFAULT_DEMO_SEED
from abrank.demo.offline import generate_demo
from abrank.demo.online import EXPERIMENT_DAYS, EXPERIMENT_START, ONLINE_DEVICES
from abrank.errors import ConfigError
from abrank.interleaving import PositionBased, interleave

DEFAULT_INTERLEAVING_SEED = 20261202

#: The teams' names, control first, as the ``team`` column holds them.
INTERLEAVING_TEAMS: tuple[str, str] = ("bm25", "reranker")

#: Columns of the log, in file order.
INTERLEAVING_LOG_COLUMNS: tuple[str, ...] = (
    "impression_id",
    "user_id",
    "query_id",
    "rank",
    "doc_id",
    "team",
    "clicked",
    "dwell",
    "timestamp",
    "device",
)

#: The log's file name in the demo folder.
INTERLEAVING_LOG_FILE = "demo-interleaving-log.parquet"

MIN_INTERLEAVING_USERS = 100  # the smallest experiment the generator makes
SHOWN = 10  # results shown per impression

# Model constants.
_EXTRA_IMPRESSIONS = 3.0  # impressions per user: 1 + Poisson(this)
_PROPENSITY_SIGMA = 1.0  # propensity = lognormal with mean 1
_ZIPF_OFFSET, _ZIPF_POWER = 30.0, 1.0  # query popularity ~ 1 / (offset + i) ** power
_MAX_CLICK = 0.95
_SATISFACTION = np.array([0.10, 0.45, 0.70, 0.85])  # P(long dwell | clicked) by grade 0-3
_SAT_DWELL = (np.log(75.0), 0.6)  # lognormal (mu, sigma) of a satisfied click's dwell
_SHORT_DWELL = (np.log(9.0), 0.7)  # ... and of an unsatisfied one


@dataclass(frozen=True)
class InterleavingDemo:
    """One generated interleaving experiment: the log of the shown results.

    Attributes
    ----------
    log:
        One row per shown result, columns :data:`INTERLEAVING_LOG_COLUMNS`:
        ``impression_id`` (text ``i000001``, ... numbered in time order), ``user_id`` (text),
        ``query_id`` (the offline demo's query, to join its rankings and judgments),
        ``rank`` (1..10), ``doc_id``, ``team`` (``bm25`` or ``reranker``: who placed the
        result), ``clicked`` (int8 0/1), ``dwell`` (seconds, NaN when not clicked),
        ``timestamp`` (int seconds since the epoch) and ``device``. Rows are sorted by
        impression, then rank.
    seed, users, demo_seed, n_queries:
        The arguments the data was generated with (``demo_seed`` and ``n_queries`` are the
        offline demo's, whose rankings are interleaved).
    """

    log: pd.DataFrame
    seed: int
    users: int
    demo_seed: int
    n_queries: int

    def to_dict(self) -> dict[str, Any]:
        """Sizes and settings of the generated data (JSON-safe), e.g. for a benchmark log."""
        first = self.log["rank"].to_numpy() == 1
        first_teams = self.log["team"].to_numpy()[first]
        return {
            "seed": self.seed,
            "users": self.users,
            "demo_seed": self.demo_seed,
            "n_queries": self.n_queries,
            "rows": len(self.log),
            "impressions": int(first.sum()),
            "queries_searched": int(self.log["query_id"].nunique()),
            "first_team": {team: int((first_teams == team).sum()) for team in INTERLEAVING_TEAMS},
        }


def make_interleaving_demo(
    *,
    seed: int = DEFAULT_INTERLEAVING_SEED,
    users: int = 3000,
    demo_seed: int = DEFAULT_DEMO_SEED,
    n_queries: int = 2000,
) -> InterleavingDemo:
    """Generate the interleaving demo in memory (deterministic for the given arguments).

    ``users`` users search the queries of the offline demo generated with ``demo_seed`` and
    ``n_queries`` (the bundled one by default); ``seed`` drives everything else, the coin
    flips of the interleaving included. Raises :class:`ConfigError` for arguments that make
    no experiment.
    """
    _check_arguments(seed, users, demo_seed, n_queries)
    demo = generate_demo(seed=demo_seed, n_queries=n_queries)
    rng = np.random.default_rng(seed)

    # Users: device, click propensity, number of impressions; impressions in time order.
    device = rng.choice(len(ONLINE_DEVICES), size=users, p=list(ONLINE_DEVICES.values()))
    propensity = rng.lognormal(-(_PROPENSITY_SIGMA**2) / 2, _PROPENSITY_SIGMA, size=users)
    user_numbers = rng.permutation(users).astype(np.int64) + 1
    counts = 1 + rng.poisson(_EXTRA_IMPRESSIONS, size=users)
    owner = np.repeat(np.arange(users), counts)
    time = rng.integers(0, EXPERIMENT_DAYS * 86_400, size=len(owner))
    by_time = np.lexsort((owner, time))
    owner, time = owner[by_time], time[by_time]

    # Queries: those both rankers served, by popularity over a random order of them.
    served = np.flatnonzero(np.isin(_distinct(demo.control), _distinct(demo.treatment)))
    popular_first = rng.permutation(served)
    shares = 1.0 / (_ZIPF_OFFSET + np.arange(len(popular_first))) ** _ZIPF_POWER
    found = np.searchsorted(np.cumsum(shares / shares.sum()), rng.random(len(owner)), "right")
    query = popular_first[np.minimum(found, len(popular_first) - 1)]

    # The interleaved list of every impression (rankings keyed by impression id).
    impression_ids = _ids("i", np.arange(1, len(owner) + 1), max(6, len(str(len(owner)))))
    query_ids = _distinct(demo.control)
    shown = interleave(
        _per_impression(demo.control, query_ids, query, impression_ids),
        _per_impression(demo.treatment, query_ids, query, impression_ids),
        method="team_draft",
        seed=seed,
        depth=SHOWN,
        names=INTERLEAVING_TEAMS,
    )
    impression = pd.Index(np.asarray(impression_ids, dtype=object)).get_indexer(
        shown["query_id"].to_numpy(dtype=object)
    )
    shown_query = query_ids[query[impression]]
    grade = _grades(demo.judgments, shown_query, shown["doc_id"].to_numpy(dtype=object))

    # Clicks and dwell of the position-based model, scaled by the user's propensity.
    model = PositionBased()
    rank = shown["rank"].to_numpy()
    attractiveness = np.array([model.attractiveness[float(g)] for g in range(4)])
    chance = model.examination_at(rank) * attractiveness[grade] * propensity[owner[impression]]
    clicked = rng.random(len(rank)) < np.minimum(chance, _MAX_CLICK)
    satisfied = rng.random(len(rank)) < _SATISFACTION[grade]
    noise = rng.standard_normal(len(rank))
    log_dwell = np.where(
        satisfied, _SAT_DWELL[0] + _SAT_DWELL[1] * noise, _SHORT_DWELL[0] + _SHORT_DWELL[1] * noise
    )

    user_ids = _ids("u", user_numbers, max(6, len(str(users))))
    devices = np.array(list(ONLINE_DEVICES), dtype=object)
    row_owner = owner[impression]
    log = pd.DataFrame(
        {
            "impression_id": shown["query_id"],
            "user_id": pd.array(user_ids.take(pa.array(row_owner)), dtype="str"),
            "query_id": pd.array(shown_query, dtype="str"),
            "rank": rank.astype(np.int64),
            "doc_id": shown["doc_id"],
            "team": pd.array(shown["team"].to_numpy(dtype=object), dtype="str"),
            "clicked": clicked.astype(np.int8),
            "dwell": np.where(clicked, np.round(np.exp(log_dwell), 1), np.nan),
            "timestamp": EXPERIMENT_START + time[impression],
            "device": pd.array(devices[device[row_owner]], dtype="str"),
        }
    )
    return InterleavingDemo(log, seed, users, demo_seed, n_queries)


def write_interleaving_demo(folder: str | Path, **options: Any) -> list[Path]:
    """Generate the interleaving demo (``options``: those of :func:`make_interleaving_demo`)
    and write its log into ``folder`` as :data:`INTERLEAVING_LOG_FILE`; return the files.

    Parquet by pyarrow, zstd, without pandas or Arrow schema metadata; text columns
    dictionary-encoded, a missing dwell null. Its bytes are stable for one pyarrow version
    (the footer names the version).
    """
    data = make_interleaving_demo(**options)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / INTERLEAVING_LOG_FILE
    write_interleaved_parquet(path, data.log)
    return [path]


def write_interleaved_parquet(path: str | Path, log: pd.DataFrame) -> Path:
    """Write an interleaved log frame as one plain Parquet row group; return the path.

    Plain Parquet types (string, int64, int8, double), no schema metadata, zstd level 9;
    ``impression_id`` and ``timestamp`` rise with the rows and are delta-encoded, every
    other column dictionary-encoded (few distinct values, or values that repeat: the same
    documents come back whenever a query does).
    """
    import pyarrow.parquet as pq

    path = Path(path)
    arrays = {name: pa.array(log[name].to_numpy(), from_pandas=True) for name in log.columns}
    table = pa.table(arrays)
    deltas = {"impression_id": "DELTA_BYTE_ARRAY", "timestamp": "DELTA_BINARY_PACKED"}
    pq.write_table(
        table,
        path,
        compression="zstd",
        compression_level=9,
        use_dictionary=[name for name in log.columns if name not in deltas],
        column_encoding={name: kind for name, kind in deltas.items() if name in log.columns},
        row_group_size=max(len(log), 1),
        data_page_size=1 << 24,
        store_schema=False,
    )
    return path


# --------------------------------------------------------------------------- helpers


def _check_arguments(seed: int, users: int, demo_seed: int, n_queries: int) -> None:
    for name, value, low, expected in (
        ("seed", seed, 0, "a non-negative integer"),
        ("users", users, MIN_INTERLEAVING_USERS, f"an integer >= {MIN_INTERLEAVING_USERS}"),
        ("demo_seed", demo_seed, 0, "a non-negative integer"),
        ("n_queries", n_queries, 10, "an integer >= 10"),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"make_interleaving_demo: {name}: expected {expected}, got {value!r}")


def _distinct(rankings: pd.DataFrame) -> np.ndarray:
    """The query ids of a demo rankings frame, in order (the frames are sorted by query)."""
    return pd.unique(rankings["query_id"].to_numpy(dtype=object))


def _per_impression(
    rankings: pd.DataFrame, query_ids: np.ndarray, query: np.ndarray, impression_ids: pa.Array
) -> pd.DataFrame:
    """A rankings frame with, for every impression, its query's ranking under its own id.

    ``query`` is each impression's index into ``query_ids``; the demo's frames are sorted by
    query and position, so a query's ranking is one block of rows.
    """
    codes = pd.Index(query_ids).get_indexer(rankings["query_id"].to_numpy(dtype=object))
    counts = np.bincount(codes, minlength=len(query_ids))
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    lengths = counts[query]
    block_starts = np.r_[0, np.cumsum(lengths)[:-1]]
    rows = np.repeat(starts[query] - block_starts, lengths) + np.arange(lengths.sum())
    owner = np.repeat(np.arange(len(query)), lengths)
    return pd.DataFrame(
        {
            "query_id": pd.array(impression_ids.take(pa.array(owner)), dtype="str"),
            "doc_id": rankings["doc_id"].to_numpy(dtype=object)[rows],
            "rank": rankings["position"].to_numpy()[rows],
        }
    )


def _grades(judgments: pd.DataFrame, query_ids: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """The judged grade (0-3) of each (query, document); 0 when unjudged."""
    index = pd.MultiIndex.from_arrays(
        [judgments["query_id"].to_numpy(dtype=object), judgments["doc_id"].to_numpy(dtype=object)]
    )
    at = index.get_indexer(pd.MultiIndex.from_arrays([query_ids, doc_ids]))
    grades = judgments["grade"].to_numpy(dtype=np.int64)
    return np.where(at >= 0, grades[np.maximum(at, 0)], 0)


def _ids(prefix: str, numbers: np.ndarray, width: int) -> pa.Array:
    """``prefix`` + the numbers zero-padded to ``width`` digits, as an Arrow string array."""
    digits = pc.utf8_lpad(pc.cast(pa.array(numbers, type=pa.int64()), pa.string()), width, "0")
    return pc.binary_join_element_wise(prefix, digits, "")
