"""The bundled demo generator: determinism, shape, the committed files, and its headline figures.

The headline figures are recomputed here by deliberately plain reference code (Python loops
over the committed files, read with the standard library), independent of the generator.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from abrank.demo import DEFAULT_SEED, DemoData, generate_demo, write_demo
from abrank.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "experiments" / "data"
DEMO_FILES = ("demo-control.csv.gz", "demo-treatment.jsonl.gz", "demo-judgments.tsv")
LOG_COLUMNS = ["query_id", "doc_id", "position", "score", "locale", "device"]


@pytest.fixture(scope="module")
def small() -> DemoData:
    return generate_demo(n_queries=300, seed=11)


# --------------------------------------------------------------------------- plain readers


def _read_log(path: Path, names: tuple[str, str, str]) -> dict[str, list[tuple[int, str, float]]]:
    """query -> [(position, doc, score)] in file order, from CSV or JSON Lines."""
    qid, doc, pos = names
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        if path.name.endswith(".csv.gz"):
            records = list(csv.DictReader(handle))
        else:
            records = [json.loads(line) for line in handle]
    log: dict[str, list[tuple[int, str, float]]] = defaultdict(list)
    for record in records:
        log[record[qid]].append((int(record[pos]), record[doc], float(record["score"])))
    return log


def _read_judgments(path: Path) -> dict[str, dict[str, int]]:
    judgments: dict[str, dict[str, int]] = defaultdict(dict)
    with open(path, encoding="utf-8") as handle:
        for record in csv.DictReader(handle, delimiter="\t"):
            judgments[record["query_id"]][record["doc_id"]] = int(record["grade"])
    return judgments


def _segments(path: Path) -> dict[str, tuple[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return {r["query_id"]: (r["locale"], r["device"]) for r in csv.DictReader(handle)}


def _reciprocal_rank_at_10(ranked: list[tuple[int, str, float]], grades: dict[str, int]) -> float:
    for position, doc, _score in sorted(ranked):
        if position > 10:
            break
        if grades.get(doc, 0) >= 1:
            return 1.0 / position
    return 0.0


def _ndcg_at_10(ranked: list[tuple[int, str, float]], grades: dict[str, int]) -> float:
    dcg = 0.0
    for position, doc, _score in sorted(ranked):
        if position <= 10:
            dcg += max(grades.get(doc, 0), 0) / math.log2(position + 1)
    ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


@pytest.fixture(scope="module")
def committed() -> dict:
    return {
        "control": _read_log(DATA / DEMO_FILES[0], ("query_id", "doc_id", "position")),
        "treatment": _read_log(DATA / DEMO_FILES[1], ("qid", "doc", "pos")),
        "judgments": _read_judgments(DATA / DEMO_FILES[2]),
        "segments": _segments(DATA / DEMO_FILES[0]),
    }


def _per_query(committed: dict, metric) -> dict[str, dict[str, float]]:
    """arm -> query -> value, over queries with a relevant judgment; missing queries score 0."""
    judgments = committed["judgments"]
    queries = [
        q for q in committed["control"] if any(g >= 1 for g in judgments.get(q, {}).values())
    ]
    values: dict[str, dict[str, float]] = {}
    for arm in ("control", "treatment"):
        log = committed[arm]
        values[arm] = {q: metric(log[q], judgments[q]) if q in log else 0.0 for q in queries}
    return values


# --------------------------------------------------------------------------- determinism


def test_same_seed_gives_identical_frames_and_other_seed_differs(small: DemoData) -> None:
    again = generate_demo(n_queries=300, seed=11)
    for name in ("control", "treatment", "judgments"):
        pd.testing.assert_frame_equal(getattr(small, name), getattr(again, name))
    other = generate_demo(n_queries=300, seed=12)
    assert not small.control["doc_id"].equals(other.control["doc_id"])
    assert not small.judgments.equals(other.judgments)


def test_same_seed_gives_identical_bytes(tmp_path: Path) -> None:
    formats = ("demo", "parquet", "trec")
    first = write_demo(tmp_path / "a", n_queries=120, seed=5, formats=formats)
    second = write_demo(tmp_path / "b", n_queries=120, seed=5, formats=formats)
    third = write_demo(tmp_path / "c", n_queries=120, seed=6, formats=formats)
    assert [p.name for p in first] == [
        "demo-control.csv.gz",
        "demo-treatment.jsonl.gz",
        "demo-judgments.tsv",
        "control.parquet",
        "treatment.parquet",
        "judgments.parquet",
        "control.run",
        "treatment.run",
        "qrels.txt",
    ]
    for a, b, c in zip(first, second, third, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
        assert a.read_bytes() != c.read_bytes(), a.name


def test_gzip_headers_carry_no_name_and_no_timestamp() -> None:
    for name in DEMO_FILES[:2]:
        header = (DATA / name).read_bytes()[:10]
        assert header[:3] == b"\x1f\x8b\x08"
        assert header[3] & 0x08 == 0  # FNAME flag unset: no file name stored
        assert header[4:8] == b"\x00\x00\x00\x00"  # MTIME = 0


def test_committed_files_equal_a_fresh_generation(tmp_path: Path) -> None:
    fresh = write_demo(tmp_path)
    assert [p.name for p in fresh] == list(DEMO_FILES)
    for path in fresh:
        assert (DATA / path.name).read_bytes() == path.read_bytes(), (
            f"{path.name} drifted from the generator; regenerate with `abrank demo-data`"
        )


def test_committed_data_is_small() -> None:
    total = sum((DATA / name).stat().st_size for name in DEMO_FILES)
    assert total < 5 * 1024 * 1024


# --------------------------------------------------------------------------- shape


def test_frames_have_the_documented_columns_and_sizes(small: DemoData) -> None:
    assert list(small.control.columns) == LOG_COLUMNS
    assert list(small.treatment.columns) == LOG_COLUMNS
    assert list(small.judgments.columns) == ["query_id", "doc_id", "grade"]
    assert len(small.control) == 300 * 20
    assert small.control["query_id"].nunique() == 300
    assert small.treatment["query_id"].nunique() == 297  # 1% timed out
    assert len(small.treatment) == 297 * 20
    assert set(small.treatment["query_id"]) < set(small.control["query_id"])
    assert small.to_dict() == {
        "seed": 11,
        "n_queries": 300,
        "depth": 20,
        "rows": {"control": 6000, "treatment": 5940, "judgments": len(small.judgments)},
        "queries": {"control": 300, "treatment": 297, "judgments": 300},
    }
    json.dumps(small.to_dict())


def test_ids_look_like_production_ids(small: DemoData) -> None:
    for frame in (small.control, small.treatment, small.judgments):
        assert frame["query_id"].str.fullmatch(r"q\d{5}").all()
        assert frame["doc_id"].str.fullmatch(r"d\d{7}").all()
    assert small.control["query_id"].iat[0] == "q00000"
    assert small.control["query_id"].iat[-1] == "q00299"
    wide = generate_demo(n_queries=100_001, depth=1)  # ids widen past q99999
    assert wide.control["query_id"].iat[0] == "q000000"
    assert wide.control["query_id"].iat[-1] == "q100000"


def test_positions_run_1_to_depth_and_scores_follow_trec_eval_order(small: DemoData) -> None:
    for frame in (small.control, small.treatment):
        assert not frame.duplicated(["query_id", "doc_id"]).any()
        expected = np.tile(np.arange(1, 21), len(frame) // 20)
        assert (frame["position"].to_numpy() == expected).all()
        # Sorting by score descending, ties by doc_id descending, reproduces the positions.
        resorted = frame.sort_values(
            ["query_id", "score", "doc_id"], ascending=[True, False, False]
        )
        assert (resorted["position"].to_numpy() == expected).all()


def test_judgments_are_graded_0_to_3_and_unique(small: DemoData) -> None:
    grades = small.judgments["grade"]
    assert pd.api.types.is_integer_dtype(grades)
    assert set(grades.unique()) == {0, 1, 2, 3}
    assert not small.judgments.duplicated(["query_id", "doc_id"]).any()
    assert small.judgments["query_id"].nunique() == 300  # every query has judgments


def test_segments_are_constant_per_query_with_skewed_shares() -> None:
    data = generate_demo(n_queries=2000)
    per_query = data.control.drop_duplicates("query_id")
    assert (data.control.groupby("query_id")[["locale", "device"]].nunique() == 1).all().all()
    locales = per_query["locale"].value_counts().to_dict()
    assert locales == {"en-US": 1100, "de-DE": 360, "fr-FR": 280, "es-ES": 232, "ja-JP": 28}
    devices = per_query["device"].value_counts(normalize=True)
    assert set(devices.index) == {"mobile", "desktop", "tablet"}
    assert devices["mobile"] > devices["desktop"] > devices["tablet"] > 0.05


def test_other_depths_scale() -> None:
    data = generate_demo(n_queries=50, depth=100, seed=3)
    assert len(data.control) == 50 * 100
    assert data.control["position"].max() == 100
    assert not data.control.duplicated(["query_id", "doc_id"]).any()
    # The judging budget stays about 0.93 x 20 + 3.5 = 22.1 documents per query at any depth.
    per_query = data.judgments.groupby("query_id").size()
    assert 19 < per_query.mean() < 25


def test_parquet_and_trec_layouts_hold_the_same_rows(tmp_path: Path) -> None:
    paths = write_demo(tmp_path, n_queries=60, seed=9, formats=("trec", "parquet"))
    data = generate_demo(n_queries=60, seed=9)
    control = pd.read_parquet(tmp_path / "control.parquet")
    assert list(control.columns) == ["qid", "docno", "rank", "score", "locale", "device"]
    assert control["docno"].tolist() == data.control["doc_id"].tolist()
    lines = (tmp_path / "treatment.run").read_text().splitlines()
    assert len(lines) == len(data.treatment)
    first = data.treatment.iloc[0]
    assert lines[0].split() == [
        first["query_id"],
        "Q0",
        first["doc_id"],
        "1",
        repr(float(first["score"])),
        "reranker",
    ]
    qrels = (tmp_path / "qrels.txt").read_text().splitlines()
    row = data.judgments.iloc[-1]
    assert qrels[-1] == f"{row['query_id']} 0 {row['doc_id']} {row['grade']}"
    assert [p.name for p in paths] == [
        "control.parquet",
        "treatment.parquet",
        "judgments.parquet",
        "control.run",
        "treatment.run",
        "qrels.txt",
    ]


def test_bad_arguments_are_rejected_with_clear_messages(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=re.escape("generate_demo: n_queries: expected an integer >= 10, got 5")
    ):
        generate_demo(n_queries=5)
    with pytest.raises(
        ConfigError, match=re.escape("generate_demo: depth: expected an integer >= 1, got 0")
    ):
        generate_demo(depth=0)
    with pytest.raises(
        ConfigError, match=re.escape("generate_demo: seed: expected a non-negative integer, got -1")
    ):
        generate_demo(seed=-1)
    with pytest.raises(
        ConfigError, match=re.escape("formats: expected some of demo, parquet, trec, got xml")
    ):
        write_demo(tmp_path, formats=("demo", "xml"))


# --------------------------------------------------------------------------- headline figures


def test_default_seed_is_the_documented_one() -> None:
    assert DEFAULT_SEED == 20261130


def test_mrr_at_10_moves_from_about_054_to_about_078(committed: dict) -> None:
    values = _per_query(committed, _reciprocal_rank_at_10)
    control = sum(values["control"].values()) / len(values["control"])
    treatment = sum(values["treatment"].values()) / len(values["treatment"])
    assert control == pytest.approx(0.54, abs=0.02)
    assert treatment == pytest.approx(0.78, abs=0.02)
    # Also when the timed-out queries are left out instead of scored 0.
    logged = [q for q in values["treatment"] if q in committed["treatment"]]
    logged_mean = sum(values["treatment"][q] for q in logged) / len(logged)
    assert logged_mean == pytest.approx(0.78, abs=0.02)


def test_ndcg_at_10_rises_too(committed: dict) -> None:
    values = _per_query(committed, _ndcg_at_10)
    control = sum(values["control"].values()) / len(values["control"])
    treatment = sum(values["treatment"].values()) / len(values["treatment"])
    assert 0.3 < control < treatment - 0.1


def test_diagnostics_the_readout_must_handle(committed: dict) -> None:
    judgments = committed["judgments"]
    control, treatment = committed["control"], committed["treatment"]
    assert len(control) == 2000
    assert len(set(control) - set(treatment)) == 20  # 1% missing from the treatment log
    assert set(judgments) == set(control)
    without_relevant = [q for q in control if not any(g >= 1 for g in judgments[q].values())]
    assert 0.035 <= len(without_relevant) / 2000 <= 0.065  # about 5%

    def judged_at_10(log: dict) -> float:
        cells = [
            doc in judgments[q] for q, ranked in log.items() for pos, doc, _ in ranked if pos <= 10
        ]
        return sum(cells) / len(cells)

    assert 0.9 < judged_at_10(control) < 0.97
    assert judged_at_10(control) - 0.05 < judged_at_10(treatment) < judged_at_10(control) - 0.01

    # The reranker reorders mostly the same candidates, occasionally a deeper one.
    pools = {q: {doc for _, doc, _ in ranked} for q, ranked in control.items()}
    kept = [doc in pools[q] for q, ranked in treatment.items() for _, doc, _ in ranked]
    assert 0.9 < sum(kept) / len(kept) < 0.99


def test_segments_differ_in_effect_and_one_locale_is_too_small(committed: dict) -> None:
    segments = committed["segments"]
    values = _per_query(committed, _reciprocal_rank_at_10)
    delta: dict[str, list[float]] = defaultdict(list)
    for query, control in values["control"].items():
        locale, device = segments[query]
        change = values["treatment"][query] - control
        delta[locale].append(change)
        delta[device].append(change)
        delta["all"].append(change)
    mean = {key: sum(v) / len(v) for key, v in delta.items()}
    assert len(delta["ja-JP"]) < 30  # "too small" at the default 30 queries
    assert mean["ja-JP"] < mean["all"] - 0.03
    assert mean["mobile"] > mean["desktop"] + 0.03


def test_segment_effects_hold_beyond_the_sample() -> None:
    """On a larger draw, where noise is small: smaller lift on ja-JP, larger on mobile."""
    data = generate_demo(n_queries=20_000, seed=1)
    relevant = data.judgments.loc[data.judgments["grade"] >= 1]
    rel = defaultdict(set)
    for query, doc in zip(relevant["query_id"], relevant["doc_id"], strict=True):
        rel[query].add(doc)

    def rr(frame: pd.DataFrame) -> dict[str, float]:
        out: dict[str, float] = {}
        rows = zip(frame["query_id"], frame["doc_id"], frame["position"], strict=True)
        for query, doc, position in rows:
            if position <= 10 and query not in out and doc in rel[query]:
                out[query] = 1.0 / position
        return out

    control, treatment = rr(data.control), rr(data.treatment)
    lift: dict[str, list[float]] = defaultdict(list)
    queries = data.control.drop_duplicates("query_id")
    rows = zip(queries["query_id"], queries["locale"], queries["device"], strict=True)
    for query, locale, device in rows:
        if rel[query]:
            change = treatment.get(query, 0.0) - control.get(query, 0.0)
            lift[locale].append(change)
            lift[device].append(change)
            lift["en-US+de-DE+fr-FR+es-ES" if locale != "ja-JP" else "ja"].append(change)
    mean = {key: sum(v) / len(v) for key, v in lift.items()}
    assert mean["ja-JP"] < mean["en-US+de-DE+fr-FR+es-ES"] - 0.03
    assert mean["mobile"] > mean["desktop"] + 0.02
    assert mean["mobile"] > mean["tablet"] + 0.02


def test_csv_reader_of_this_test_agrees_with_pandas() -> None:
    """Guard the plain readers above: they see the same rows pandas sees."""
    frame = pd.read_csv(DATA / DEMO_FILES[0], dtype={"query_id": str, "doc_id": str})
    with gzip.open(DATA / DEMO_FILES[0], "rt", encoding="utf-8") as handle:
        rows = list(csv.reader(io.StringIO(handle.read())))
    assert rows[0] == LOG_COLUMNS
    assert len(rows) - 1 == len(frame) == 40_000
