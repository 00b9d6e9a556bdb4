"""The bundled online demo: a deterministic, user-randomized A/B test of a reranker on live traffic.

Users are randomized 50/50 (a binomial draw, so the arms are not exactly equal) to the
production ranker (``bm25``, the control) or to a cross-encoder reranker (``reranker``, the
treatment). Every impression is one served top-10 list, logged with all its ten rows, clicked
or not. The generator is vectorized over (impressions x ranks) matrices:

* **queries**: a Zipf-like popularity over ``users // 2`` queries, each with a pool of
  candidate documents of latent graded relevance (0-3); the production ranker orders the pool
  by a noisy score, the reranker by a sharper one that shares part of its noise (the same
  candidate features), both fixed per query (what a deterministic ranker serves); the
  reranker weighs relevance slightly more on mobile and less on tablets, so its lift differs
  somewhat by device;
* **users**: a device each (skewed shares), a click propensity (lognormal with mean 1, the
  same in both periods, so that a user's impressions are correlated) and an activity rate
  (Gamma), from which the number of impressions is drawn (1 + Poisson, about 6 on average);
* **clicks**: a position-based model, P(click) = examination(rank, device) x
  attractiveness(grade) x propensity, at most 0.95; the examination falls faster with the
  rank on mobile (a small screen) than on desktop;
* **dwell**: a clicked result satisfies with a chance that rises with its grade; satisfied
  clicks dwell long (lognormal around 75 s), others short (around 9 s), so a ``sat_dwell`` of
  30 s separates them;
* **latency**: each served list's latency in ms, lognormal around 180 ms: a user's own level
  (device, network) times the impression's noise; the reranker's lists take 3% longer (a
  heavier model), which the ``latency_p95`` guardrail reads;
* **a logging leak**: about 0.2% of users (with two or more impressions) have their last
  impression served by the other arm, so they appear in both arms;
* **a pre-period table** for CUPED: about 82% of the users (the others are new) with their
  pre-period impression count and mean ``click_rr@10``, ``ctr@3`` and ``abandonment`` under
  the production ranker over four weeks, drawn with the same propensity, activity and device
  as in the experiment, hence correlated with the user's behaviour during it (regressing a
  user's experiment mean on it removes about a quarter of its variance).

With the defaults (20,000 users) the log holds about 120,000 impressions (1.2 million rows);
the model's expected lift of click_rr@10 is about 7-8% relative, with a spread of about 2
points between seeds (a 20,000-user test is that noisy); the committed draw gives 0.310 ->
0.336 (+8.4%). The same seed gives identical frames and byte-identical files. The bundled log
is Parquet: as gzip text the same rows take about 7 MB (each row repeats little that gzip's
32 KB window can find), as Parquet about 2 MB.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from abrank.errors import ConfigError

DEFAULT_ONLINE_SEED = 20261201

#: The arms' names, control first, as the ``arm`` column holds them.
ONLINE_ARMS: tuple[str, str] = ("bm25", "reranker")

#: Devices and their shares of the users.
ONLINE_DEVICES: dict[str, float] = {"mobile": 0.58, "desktop": 0.33, "tablet": 0.09}

#: Columns of the log, in file order, and of the pre-period table.
LOG_COLUMNS: tuple[str, ...] = (
    "impression_id",
    "user_id",
    "rank",
    "doc_id",
    "clicked",
    "dwell",
    "timestamp",
    "query",
    "device",
    "arm",
    "latency_ms",
)
PRE_METRICS: tuple[str, ...] = ("click_rr@10", "ctr@3", "abandonment")
PRE_COLUMNS: tuple[str, ...] = ("user_id", "impressions", *PRE_METRICS)

#: Log formats of :func:`write_online_demo` -> the log's file name; and the pre table's name.
ONLINE_LOG_FILES: dict[str, str] = {
    "parquet": "demo-online-log.parquet",
    "csv.gz": "demo-online-log.csv.gz",
}
ONLINE_PRE_FILE = "demo-online-pre.csv.gz"

MIN_USERS = 100  # the smallest experiment the generator makes
TOP_K = 10  # results shown per impression
POOL = 30  # candidate documents per query
EXPERIMENT_START = 1_793_577_600  # 2026-11-02T00:00:00Z, in seconds since the epoch
EXPERIMENT_DAYS = 14

# Model constants, calibrated so that the defaults hit the documented figures.
_QUERIES_PER_USER = 0.5  # distinct queries in the traffic, per user
_ZIPF_OFFSET, _ZIPF_POWER = 30.0, 1.0  # query popularity ~ 1 / (offset + i) ** power
_HARD_SHARE = 0.05  # queries with no relevant candidate
_EXTRA_RELEVANT = 3.0  # relevant candidates per query beyond the first (Poisson mean)
_GRADE_GIVEN_RELEVANT = (0.5, 0.3, 0.2)  # P(grade 1, 2, 3 | relevant)
_CONTROL_WEIGHT = 0.55  # production score: weight of the grade against unit noise
_TREATMENT_WEIGHT = 0.62  # reranker score: the same, sharper
_SHARED_NOISE = 0.7  # correlation of the reranker's score noise with production's
_TREATMENT_DEVICE = {"mobile": 1.03, "desktop": 0.97, "tablet": 0.95}  # x the reranker's weight
_ATTRACTIVENESS = np.array([0.06, 0.36, 0.60, 0.84])  # P(click | examined) by grade
_SATISFACTION = np.array([0.10, 0.45, 0.70, 0.85])  # P(long dwell | clicked) by grade
_EXAMINATION_DECAY = {"mobile": 1.0, "desktop": 0.8, "tablet": 0.9}  # exam = rank ** -decay
_PROPENSITY_SIGMA = 1.0  # propensity = lognormal with mean 1: heterogeneous users
_ACTIVITY_SHAPE = 1.5  # activity ~ Gamma(shape, (impressions_per_user - 1) / shape)
_MAX_CLICK = 0.95
_SAT_DWELL = (np.log(75.0), 0.6)  # lognormal (mu, sigma) of a satisfied click's dwell
_SHORT_DWELL = (np.log(9.0), 0.7)  # ... and of an unsatisfied one
_LEAK_SHARE = 0.002  # users whose last impression comes from the other arm
_PRE_COVERAGE = 0.82  # users seen in the pre-period (the rest are new)
_PRE_ACTIVITY = 2.0  # the pre-period is longer (four weeks): activity x this
_LATENCY_MEDIAN_MS = 180.0  # a served list's latency: lognormal around this median
_LATENCY_USER_SIGMA = 0.35  # log-sd of a user's own latency (device, network, region)
_LATENCY_SIGMA = 0.45  # log-sd of an impression's latency around its user's
_LATENCY_SLOWDOWN = 1.03  # the reranker's lists take 3% longer at every quantile


@dataclass(frozen=True)
class OnlineDemo:
    """One generated online experiment: the impression log and the pre-period table.

    Attributes
    ----------
    log:
        One row per shown result, columns :data:`LOG_COLUMNS`: ``impression_id`` (int, in time
        order), ``user_id`` (int), ``rank`` (1..10), ``doc_id`` (int), ``clicked`` (0/1),
        ``dwell`` (seconds, NaN when not clicked), ``timestamp`` (int seconds since the
        epoch), ``query`` (int query id), ``device`` and ``arm`` (categoricals of strings).
        Rows are sorted by impression, then rank; every impression has all its ranks.
    pre:
        One row per user seen in the pre-period, columns :data:`PRE_COLUMNS`: the user's
        pre-period impression count and mean of each metric of :data:`PRE_METRICS`, sorted
        by ``user_id``.
    seed, users, impressions_per_user:
        The arguments the data was generated with.
    """

    log: pd.DataFrame
    pre: pd.DataFrame
    seed: int
    users: int
    impressions_per_user: float

    def to_dict(self) -> dict[str, Any]:
        """Sizes and settings of the generated data (JSON-safe), e.g. for a benchmark log."""
        first = self.log["rank"].to_numpy() == 1
        arms = self.log["arm"][first].astype(str).to_numpy()
        users = self.log["user_id"].to_numpy()[first]
        per_arm = {arm: len(np.unique(users[arms == arm])) for arm in ONLINE_ARMS}
        return {
            "seed": self.seed,
            "users": self.users,
            "impressions_per_user": self.impressions_per_user,
            "rows": len(self.log),
            "impressions": int(first.sum()),
            "impressions_per_arm": {arm: int((arms == arm).sum()) for arm in ONLINE_ARMS},
            "users_per_arm": per_arm,
            "pre_users": len(self.pre),
        }


def make_online_demo(
    users: int = 20_000,
    seed: int = DEFAULT_ONLINE_SEED,
    *,
    impressions_per_user: float = 6.0,
    pre_period: bool = True,
) -> OnlineDemo:
    """Generate the online demo experiment in memory (deterministic for a given seed and size).

    ``users`` users with about ``impressions_per_user`` impressions each (at least one).
    ``pre_period=False`` skips the pre-period table (its frame is then empty), which a
    benchmark that needs only the log does not pay for; the log is the same either way.
    Raises :class:`ConfigError` for sizes that make no experiment.
    """
    _check_arguments(users, seed, impressions_per_user)
    rng = np.random.default_rng(seed)

    # Users: device, click propensity, activity, arm.
    device = rng.choice(len(ONLINE_DEVICES), size=users, p=list(ONLINE_DEVICES.values()))
    propensity = rng.lognormal(-(_PROPENSITY_SIGMA**2) / 2, _PROPENSITY_SIGMA, size=users)
    scale = (impressions_per_user - 1.0) / _ACTIVITY_SHAPE
    activity = rng.gamma(_ACTIVITY_SHAPE, scale, size=users)
    arm = (rng.random(users) < 0.5).astype(np.int8)
    user_ids = rng.permutation(users).astype(np.int64) + 100_001

    # Queries: popularity and the top 10 grades (and documents) each ranker serves.
    queries = _Queries.draw(rng, max(50, int(users * _QUERIES_PER_USER)))

    # Experiment impressions, grouped by user and in time order within each user.
    counts = 1 + rng.poisson(activity)
    owner = np.repeat(np.arange(users), counts)
    time = rng.integers(0, EXPERIMENT_DAYS * 86_400, size=len(owner))
    within = np.lexsort((time, owner))
    time = time[within]
    query = queries.sample(rng, len(owner))
    served = arm[owner]
    served[_leaked_last_impressions(rng, counts)] ^= 1
    user_device = device[owner]
    treated = served[:, None] == 1
    grades = np.where(
        treated, queries.treatment_grades[user_device, query], queries.control_grades[query]
    )
    clicked, dwell = _clicks(rng, grades, user_device, propensity[owner])

    # Pre-period (production ranker only) for the users who are not new.
    covered = np.flatnonzero(rng.random(users) < _PRE_COVERAGE) if pre_period else owner[:0]
    pre_counts = 1 + rng.poisson(_PRE_ACTIVITY * activity[covered])
    pre_owner = np.repeat(covered, pre_counts)
    pre_query = queries.sample(rng, len(pre_owner))
    pre_clicked, _ = _clicks(
        rng, queries.control_grades[pre_query], device[pre_owner], propensity[pre_owner]
    )
    del grades

    # The log, in time order of impressions.
    by_time = np.argsort(time, kind="stable")
    docs = np.where(
        treated, queries.treatment_docs[user_device, query], queries.control_docs[query]
    )
    latency = _latency(seed, users, owner, served)
    log = _log_frame(
        by_time,
        user_ids[owner],
        docs,
        clicked,
        dwell,
        EXPERIMENT_START + time,
        queries.ids[query],
        user_device,
        served,
        latency,
    )
    pre = _pre_frame(user_ids, covered, pre_counts, pre_clicked)
    return OnlineDemo(log, pre, seed, users, float(impressions_per_user))


def write_online_demo(
    folder: str | Path,
    *,
    users: int = 20_000,
    seed: int = DEFAULT_ONLINE_SEED,
    impressions_per_user: float = 6.0,
    format: str = "parquet",
) -> list[Path]:
    """Generate the online demo and write its log and pre-period table into ``folder``.

    The log is written in ``format`` (see :data:`ONLINE_LOG_FILES`): ``parquet`` (the
    bundled demo: ``demo-online-log.parquet``, zstd, by pyarrow without pandas metadata,
    about 2 MB where gzip text needs about 7 MB; its footer names the pyarrow version, so its
    bytes are stable for one pyarrow version) or ``csv.gz`` (``demo-online-log.csv.gz``).
    The pre-period table is always ``demo-online-pre.csv.gz``. Gzip files carry no file name
    and no timestamp, so their bytes depend on the content only. Returns the files written,
    the log first.
    """
    if format not in ONLINE_LOG_FILES:
        raise ConfigError(
            f"write_online_demo: format: expected one of {', '.join(ONLINE_LOG_FILES)}, "
            f"got {format!r}"
        )
    data = make_online_demo(users, seed, impressions_per_user=impressions_per_user)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    log_path, pre_path = folder / ONLINE_LOG_FILES[format], folder / ONLINE_PRE_FILE
    if format == "parquet":
        write_log_parquet(log_path, data.log)
    else:
        _write_gzip_text(log_path, data.log.to_csv(index=False, lineterminator="\n"))
    _write_gzip_text(pre_path, data.pre.to_csv(index=False, lineterminator="\n"))
    return [log_path, pre_path]


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class _Queries:
    """The query population: ids, popularity, and what each ranker serves for each query."""

    ids: np.ndarray
    popularity: np.ndarray  # cumulative shares, for sampling by search
    control_grades: np.ndarray  # (queries, TOP_K) latent grades of the served documents
    treatment_grades: np.ndarray  # (devices, queries, TOP_K)
    control_docs: np.ndarray  # (queries, TOP_K) document ids
    treatment_docs: np.ndarray  # (devices, queries, TOP_K)

    @classmethod
    def draw(cls, rng: np.random.Generator, n: int) -> _Queries:
        shares = 1.0 / (_ZIPF_OFFSET + np.arange(n)) ** _ZIPF_POWER
        popularity = np.cumsum(shares / shares.sum())
        hard = rng.random(n) < _HARD_SHARE
        n_relevant = np.where(hard, 0, 1 + rng.poisson(_EXTRA_RELEVANT, size=n))
        relevant = (
            np.argsort(np.argsort(rng.random((n, POOL)), axis=1), axis=1) < n_relevant[:, None]
        )
        grade_draw = np.searchsorted(np.cumsum(_GRADE_GIVEN_RELEVANT), rng.random((n, POOL)))
        grades = np.where(relevant, np.minimum(grade_draw, 2) + 1, 0).astype(np.int8)
        # A query's candidates are a block of the catalog: compact, distinct ids.
        docs = 1_000_000 + np.arange(n, dtype=np.int64)[:, None] * 100 + np.arange(POOL)
        # The reranker shares part of the production score's noise (the same candidate
        # features), so that it changes a query's list less than an independent ranker would.
        shared = rng.standard_normal((n, POOL))
        own = _SHARED_NOISE * shared + np.sqrt(1 - _SHARED_NOISE**2) * rng.standard_normal(
            (n, POOL)
        )
        control = _top(_CONTROL_WEIGHT * grades + shared)
        # The reranker's lists differ by device: its weight of relevance does.
        weights = _TREATMENT_WEIGHT * np.array(list(_TREATMENT_DEVICE.values()))
        treatment = np.stack([_top(w * grades + own) for w in weights])
        rows = np.arange(n)[:, None]
        ids = rng.permutation(n).astype(np.int64) + 1
        return cls(
            ids=ids,
            popularity=popularity,
            control_grades=grades[rows, control],
            treatment_grades=grades[rows[None], treatment],
            control_docs=docs[rows, control],
            treatment_docs=docs[rows[None], treatment],
        )

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Query indices of ``size`` impressions, by popularity."""
        found = np.searchsorted(self.popularity, rng.random(size), side="right")
        return np.minimum(found, len(self.popularity) - 1)


def _top(score: np.ndarray) -> np.ndarray:
    """Column indices of each row's TOP_K highest scores, best first."""
    return np.argsort(-score, axis=1, kind="stable")[:, :TOP_K]


def _clicks(
    rng: np.random.Generator, grades: np.ndarray, device: np.ndarray, propensity: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Clicks (int8 0/1) and dwell (seconds, NaN where not clicked) of the shown results."""
    ranks = np.arange(1, TOP_K + 1, dtype=np.float64)
    decay = np.array(list(_EXAMINATION_DECAY.values()))[device]
    examination = ranks[None, :] ** -decay[:, None]
    chance = examination * _ATTRACTIVENESS[grades] * propensity[:, None]
    clicked = rng.random(grades.shape) < np.minimum(chance, _MAX_CLICK)
    satisfied = rng.random(grades.shape) < _SATISFACTION[grades]
    noise = rng.standard_normal(grades.shape)
    log_dwell = np.where(
        satisfied, _SAT_DWELL[0] + _SAT_DWELL[1] * noise, _SHORT_DWELL[0] + _SHORT_DWELL[1] * noise
    )
    dwell = np.where(clicked, np.round(np.exp(log_dwell), 1), np.nan)
    return clicked.astype(np.int8), dwell


def _latency(seed: int, users: int, owner: np.ndarray, served: np.ndarray) -> np.ndarray:
    """Each impression's latency in ms (one decimal): lognormal, a user's own level times
    the impression's noise, the reranker's x :data:`_LATENCY_SLOWDOWN`. Drawn from a
    generator of its own, so that every other column is the draw it was before latency
    was logged."""
    rng = np.random.default_rng([seed, 1])
    user = rng.normal(0.0, _LATENCY_USER_SIGMA, size=users)
    noise = rng.normal(0.0, _LATENCY_SIGMA, size=owner.size)
    log_latency = np.log(_LATENCY_MEDIAN_MS) + user[owner] + noise
    log_latency += np.where(served == 1, np.log(_LATENCY_SLOWDOWN), 0.0)
    return np.round(np.exp(log_latency), 1)


def _leaked_last_impressions(rng: np.random.Generator, counts: np.ndarray) -> np.ndarray:
    """Positions (in the user-grouped impressions) of the leaked users' last impressions."""
    eligible = np.flatnonzero(counts >= 2)
    n = min(len(eligible), int(round(_LEAK_SHARE * len(counts))))
    leaked = np.sort(rng.choice(eligible, size=n, replace=False))
    return np.cumsum(counts)[leaked] - 1


def _first_click_metrics(clicked: np.ndarray) -> dict[str, np.ndarray]:
    """Per impression: click_rr@10, ctr@3 and abandonment (float64)."""
    any_click = clicked.any(axis=1)
    first = np.argmax(clicked, axis=1) + 1
    return {
        "click_rr@10": np.where(any_click, 1.0 / first, 0.0),
        "ctr@3": np.asarray(clicked[:, :3].any(axis=1), dtype=np.float64),
        "abandonment": np.asarray(~any_click, dtype=np.float64),
    }


# --------------------------------------------------------------------------- frames


def _log_frame(
    order: np.ndarray,
    user: np.ndarray,
    docs: np.ndarray,
    clicked: np.ndarray,
    dwell: np.ndarray,
    timestamp: np.ndarray,
    query: np.ndarray,
    device: np.ndarray,
    served: np.ndarray,
    latency: np.ndarray,
) -> pd.DataFrame:
    """One row per shown result, impressions in ``order`` (numbered 1, 2, ... in that order)."""
    n = len(order)
    per_row = np.repeat(order, TOP_K)
    columns = {
        "impression_id": lambda: np.repeat(np.arange(1, n + 1, dtype=np.int64), TOP_K),
        "user_id": lambda: user[per_row],
        "rank": lambda: np.tile(np.arange(1, TOP_K + 1, dtype=np.int64), n),
        "doc_id": lambda: docs[order].ravel(),
        "clicked": lambda: clicked[order].ravel().astype(np.int64),
        "dwell": lambda: dwell[order].ravel(),
        "timestamp": lambda: timestamp[per_row],
        "query": lambda: query[per_row],
        "device": lambda: pd.Categorical.from_codes(
            device[per_row], pd.Index(list(ONLINE_DEVICES))
        ),
        "arm": lambda: pd.Categorical.from_codes(served[per_row], pd.Index(list(ONLINE_ARMS))),
        "latency_ms": lambda: latency[per_row],
    }
    # Column by column, so that pandas keeps one block per column instead of copying the
    # integer columns into one 2-D block (a second copy of a large log).
    frame = pd.DataFrame(index=pd.RangeIndex(n * TOP_K))
    for name, make in columns.items():
        frame[name] = make()
    return frame


def _pre_frame(
    user_ids: np.ndarray, covered: np.ndarray, counts: np.ndarray, clicked: np.ndarray
) -> pd.DataFrame:
    """Per covered user: pre-period impressions and the mean of each metric, by user id."""
    slot = np.repeat(np.arange(len(covered)), counts)
    columns: dict[str, np.ndarray] = {
        "user_id": user_ids[covered],
        "impressions": counts.astype(np.int64),
    }
    for name, values in _first_click_metrics(clicked.astype(bool)).items():
        sums = np.bincount(slot, weights=values, minlength=len(covered))
        columns[name] = np.round(sums / counts, 6)
    frame = pd.DataFrame(columns)
    return frame.sort_values("user_id", kind="stable", ignore_index=True)


# --------------------------------------------------------------------------- files


def _check_arguments(users: int, seed: int, impressions_per_user: float) -> None:
    for name, value, low, expected in (
        ("users", users, MIN_USERS, f"an integer >= {MIN_USERS}"),
        ("seed", seed, 0, "a non-negative integer"),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"make_online_demo: {name}: expected {expected}, got {value!r}")
    if (
        isinstance(impressions_per_user, bool)
        or not isinstance(impressions_per_user, (int, float, np.integer, np.floating))
        or not 1.0 <= impressions_per_user <= 1000.0
    ):
        raise ConfigError(
            "make_online_demo: impressions_per_user: expected a number from 1 to 1000, "
            f"got {impressions_per_user!r}"
        )


def _write_gzip_text(path: Path, text: str) -> None:
    """Gzip without file name or timestamp in the header, so the bytes depend on content only."""
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
    ):
        packed.write(text.encode("utf-8"))


def write_log_parquet(path: str | Path, log: pd.DataFrame, *, compression_level: int = 9) -> Path:
    """Write a log frame (columns :data:`LOG_COLUMNS`) as Parquet by pyarrow; return the path.

    Plain Parquet types (int64, double, string), no pandas or Arrow schema metadata. Long
    pages (up to 2**20 rows, one per row group) let zstd find the lists that the same query
    served before, which is most of what makes the file small; ids that grow (impression,
    time) are delta-encoded, small vocabularies dictionary-encoded, and a missing dwell is
    null. Rows are converted and written one row group at a time, so that a large log is not
    copied whole. ``compression_level`` is zstd's (the bundled demo uses 9; 1-3 write faster).
    """
    import pyarrow.parquet as pq

    path = Path(path)
    rows_per_group = 1 << 20
    writer = None
    try:
        for start in range(0, max(len(log), 1), rows_per_group):
            table = _arrow_table(log.iloc[start : start + rows_per_group])
            if writer is None:
                writer = pq.ParquetWriter(
                    path,
                    table.schema,
                    compression="zstd",
                    compression_level=compression_level,
                    use_dictionary=["rank", "clicked", "dwell", "query", "device", "arm"],
                    column_encoding={
                        "impression_id": "DELTA_BINARY_PACKED",
                        "timestamp": "DELTA_BINARY_PACKED",
                        "user_id": "PLAIN",
                        "doc_id": "PLAIN",
                    },
                    data_page_size=1 << 24,
                    max_rows_per_page=rows_per_group,
                    store_schema=False,
                )
            writer.write_table(table, row_group_size=rows_per_group)
    finally:
        if writer is not None:
            writer.close()
    return path


def _arrow_table(frame: pd.DataFrame) -> Any:
    """The frame as an Arrow table: categoricals as plain strings, NaN as null."""
    import pyarrow as pa

    arrays = {}
    for name in frame.columns:
        column = frame[name]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories = pa.array(list(column.cat.categories), type=pa.string())
            arrays[name] = categories.take(pa.array(column.cat.codes.to_numpy()))
        else:
            arrays[name] = pa.array(column.to_numpy(), from_pandas=True)
    return pa.table(arrays)
