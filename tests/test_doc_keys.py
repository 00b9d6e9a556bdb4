"""Document keys and the (query, doc) matcher: equal strings match, whatever the chunking.

The join of a ranking with its judgments and the duplicate searches compare doc ids through
keys computed straight from Arrow's buffers. These tests check that contract against a slow,
obvious join (Python dicts), on ids that mix lengths (1 to 40 bytes), Unicode and ids that
are prefixes of one another, spread over several Arrow chunks.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from abrank.cli import main
from abrank.engines.evaluate import evaluate
from abrank.io.arrow import equal_pairs, take_rows
from abrank.io.doc_keys import doc_keys
from abrank.io.trec import repeated_pairs

# --------------------------------------------------------------------------- the regression


# "D1" is 2 bytes; the other judged id is longer than 8 bytes, which used to switch every key
# to a hash whose number of rounds came from each Arrow chunk's longest id: the run's chunk
# ("D1" alone, one round) and the qrels' chunk (two or more rounds) gave "D1" two keys.
LONG_IDS = ["LONGDOCID123", "A_MUCH_LONGER_DOCUMENT_ID_0000000001"]


@pytest.mark.parametrize("long_id", LONG_IDS)
def test_short_id_matches_beside_a_long_judged_id_cli(tmp_path: Path, capsys, long_id):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(f"qb 0 D1 1\nqb 0 {long_id} 1\n")
    run = tmp_path / "run.txt"
    run.write_text("qb Q0 D1 1 2.0 x\n")
    code = main(["metrics", str(qrels), str(run), "-m", "mrr"])
    out, err = capsys.readouterr()
    assert code == 0, err
    # trec_eval: the only retrieved document is relevant -> reciprocal rank 1
    assert out == "mrr\tall\t1.0\n"


@pytest.mark.parametrize("long_id", LONG_IDS)
def test_short_id_matches_beside_a_long_judged_id_evaluate(long_id):
    rankings = pd.DataFrame({"query_id": ["qb"], "doc_id": ["D1"], "rank": [1]})
    judgments = pd.DataFrame(
        {"query_id": ["qb", "qb"], "doc_id": ["D1", long_id], "relevance": [1, 1]}
    )
    table = evaluate(rankings, judgments, ["mrr", "recall@10", "ndcg@10"])
    assert table.at["qb", "mrr"] == 1.0
    assert table.at["qb", "recall@10"] == 0.5  # one of the two relevant documents
    # DCG 1 (rank 1); ideal 1 + 1/log2(3)
    assert table.at["qb", "ndcg@10"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=1e-15)


# --------------------------------------------------------------------------- id strategies

# prefixes of one another, lengths around the 8- and 16-byte word boundaries, Unicode
# (multi-byte UTF-8), a NUL byte, and up to 40 bytes
_STEMS = [
    "d",
    "D1",
    "D12",
    "doc",
    "abcdefg",
    "abcdefgh",
    "abcdefghi",
    "abcdefghijklmno",
    "abcdefghijklmnop",
    "abcdefghijklmnopq",
    "abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "é",
    "ééé",
    "naïve-文档-7",
    "𝔡𝔬𝔠",
    "a\x00",
    "msmarco_v2.1_doc_29_677149#3_",
]
ids = st.one_of(
    st.sampled_from(_STEMS),
    st.builds(lambda stem, n: (stem + str(n))[:40], st.sampled_from(_STEMS), st.integers(0, 99)),
    st.text(min_size=1, max_size=12).filter(lambda s: len(s.encode()) <= 40),
)


def chunked(values: list[str], cuts: list[int]) -> pa.ChunkedArray:
    """``values`` as a large_string ChunkedArray cut at the given positions."""
    edges = sorted({0, len(values), *(c for c in cuts if 0 < c < len(values))})
    pieces = [values[a:b] for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return pa.chunked_array(
        [pa.array(p, type=pa.large_string()) for p in pieces] or [[]], type=pa.large_string()
    )


@st.composite
def columns(draw, min_size: int = 0):
    values = draw(st.lists(ids, min_size=min_size, max_size=40))
    cuts = draw(st.lists(st.integers(0, max(len(values), 1)), max_size=5))
    return values, cuts


# --------------------------------------------------------------------------- doc_keys


@settings(max_examples=300, deadline=None)
@given(columns(min_size=1))
def test_keys_do_not_depend_on_the_chunking(case):
    values, cuts = case
    keys = doc_keys(chunked(values, cuts))
    whole = doc_keys(chunked(values, []))
    assert keys.exact == whole.exact and len(keys.words) == len(whole.words)
    for part, one in zip(keys.words, whole.words, strict=True):
        np.testing.assert_array_equal(part, one)
    # equal strings -> equal keys; exact keys: distinct strings -> distinct keys
    first_key: dict[str, tuple] = {}
    for i, value in enumerate(values):
        key = tuple(int(w[i]) for w in keys.words)
        assert first_key.setdefault(value, key) == key, value
    if keys.exact:
        assert len(set(first_key.values())) == len(first_key)


@settings(max_examples=200, deadline=None)
@given(st.lists(ids, min_size=1, max_size=20), st.lists(ids, min_size=1, max_size=20))
def test_hashed_keys_are_a_function_of_the_string_alone(left, right):
    """In the hashed encoding, a string's key does not depend on the other strings."""
    long = "an-id-longer-than-sixteen-bytes-forces-hashing"
    a = doc_keys(chunked([*left, long], []))
    b = doc_keys(chunked([long, *right], [1]))
    assert not a.exact and not b.exact
    key_of = dict(zip([*left, long], a.words[0].tolist(), strict=True))
    for value, key in zip([long, *right], b.words[0].tolist(), strict=True):
        if value in key_of:
            assert key_of[value] == key, value


@pytest.mark.parametrize(
    ("values", "words", "exact"),
    [
        (["d", "1234567"], 1, True),  # bytes + length in one word
        (["12345678", "d"], 1, True),  # 8 bytes, no NUL: the zero padding tells lengths
        (["1234567\x00", "1234567"], 2, True),  # a NUL at 8 bytes: the length needs a word
        (["d12345678", "d1"], 2, True),  # 9-byte pooled-collection ids: exact, two words
        (["abcdefghijklmnop", "x"], 2, True),
        (["abcdefghijklmnop", "a\x00"], 1, False),  # 16 bytes and a NUL: hashed
        (["clueweb09-en0000-00-00000"], 1, False),
    ],
)
def test_key_encoding_by_longest_id(values, words, exact):
    keys = doc_keys(chunked(values, []))
    assert (len(keys.words), keys.exact) == (words, exact)
    if words == 2:  # the second word as narrow as the longest id allows
        longest = max(len(v.encode()) for v in values)
        room = longest - 8 + ("\x00" in "".join(values) or longest < 16)
        expected = np.uint16 if room <= 2 else np.uint32 if room <= 4 else np.uint64
        assert keys.words[1].dtype == expected


@pytest.mark.parametrize("width", [1, 7, 8, 9, 15, 16, 17, 25, 40])
def test_fixed_width_chunks_key_like_mixed_ones(width):
    """A chunk whose ids all have one length is read by a strided path; its keys must be
    those the general path gives the same ids beside ids of other lengths."""
    same = [(chr(ord("a") + i) * width)[:width] for i in range(5)]
    mixed = [same[2], "x", same[4], "yy" * 20]  # the 40-byte id forces hashing
    for other in (mixed, mixed[:2]):
        keys = doc_keys(chunked([*same, *other], [len(same)]))
        key_of = {}
        for i, value in enumerate([*same, *other]):
            key = tuple(int(w[i]) for w in keys.words)
            assert key_of.setdefault(value, key) == key, (width, value)


# --------------------------------------------------------------------------- equal_pairs


def reference_pairs(codes: list[int], values: list[str]) -> set[tuple[int, int]]:
    """(first item, later item) of every repeated (code, string), by a dict."""
    first: dict[tuple[int, str], int] = {}
    pairs = set()
    for i, pair in enumerate(zip(codes, values, strict=True)):
        if pair in first:
            pairs.add((first[pair], i))
        else:
            first[pair] = i
    return pairs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(columns(), st.data())
def test_equal_pairs_matches_a_dict(case, data):
    values, cuts = case
    codes = data.draw(st.lists(st.integers(0, 3), min_size=len(values), max_size=len(values)))
    column = chunked(values, cuts)
    code_array = np.array(codes, dtype=np.int32)
    first, later = equal_pairs(code_array, doc_keys(column), column)
    assert set(zip(first.tolist(), later.tolist(), strict=True)) == reference_pairs(codes, values)
    expected_later = sorted(i for _, i in reference_pairs(codes, values))
    assert repeated_pairs(code_array, column).tolist() == expected_later


# --------------------------------------------------------------------------- evaluate


def slow_metrics(run_rows: list[tuple[str, str, int]], judged: dict[tuple[str, str], int]):
    """mrr, ndcg@5 and recall@5 per query from the definitions, through a dict join."""
    by_query: dict[str, list[tuple[int, str]]] = {}
    for q, d, rank in run_rows:
        by_query.setdefault(q, []).append((rank, d))
    judged_queries = {q for q, _ in judged}
    out = {}
    for q in sorted(set(by_query) & judged_queries):
        docs = [d for _, d in sorted(by_query[q])]
        grades = {d: g for (qq, d), g in judged.items() if qq == q}
        relevant = [grades.get(d, 0) >= 1 for d in docs]
        num_rel = sum(g >= 1 for g in grades.values())
        first = next((i for i, r in enumerate(relevant) if r), None)
        mrr = math.nan if num_rel == 0 else (0.0 if first is None else 1 / (first + 1))
        dcg = sum(max(grades.get(d, 0), 0) / math.log2(i + 2) for i, d in enumerate(docs[:5]))
        ideal = sorted((g for g in grades.values() if g > 0), reverse=True)[:5]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        ndcg = dcg / idcg if idcg > 0 else math.nan
        recall = sum(relevant[:5]) / num_rel if num_rel else math.nan
        out[q] = {"mrr": mrr, "ndcg@5": ndcg, "recall@5": recall}
    return out


def arrow_series(values: list, cuts: list[int]) -> pd.Series:
    """A pandas Series backed by a several-chunk Arrow array."""
    return pd.Series(pd.arrays.ArrowExtensionArray(chunked(values, cuts)))


@st.composite
def joined(draw):
    pool = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    queries = ["q1", "q2", "q10"]
    run_rows = []
    for q in draw(st.lists(st.sampled_from(queries), unique=True, min_size=1, max_size=3)):
        docs = draw(st.lists(st.sampled_from(pool), unique=True, min_size=1, max_size=8))
        run_rows += [(q, d, rank) for rank, d in enumerate(docs, start=1)]
    judged = {}
    for q in draw(st.lists(st.sampled_from(queries), unique=True, min_size=1, max_size=3)):
        for d in draw(st.lists(st.sampled_from(pool), unique=True, max_size=8)):
            judged[(q, d)] = draw(st.integers(0, 3))
    draw(st.randoms()).shuffle(run_rows)
    run_cuts = draw(st.lists(st.integers(0, len(run_rows)), max_size=4))
    judged_cuts = draw(st.lists(st.integers(0, max(len(judged), 1)), max_size=4))
    return run_rows, judged, run_cuts, judged_cuts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(joined())
def test_evaluate_matches_a_dict_join_over_chunked_ids(case):
    run_rows, judged, run_cuts, judged_cuts = case
    if not judged:
        return
    rankings = pd.DataFrame(
        {
            "query_id": [q for q, _, _ in run_rows],
            "doc_id": arrow_series([d for _, d, _ in run_rows], run_cuts),
            "rank": [r for _, _, r in run_rows],
        }
    )
    judgments = pd.DataFrame(
        {
            "query_id": [q for q, _ in judged],
            "doc_id": arrow_series([d for _, d in judged], judged_cuts),
            "relevance": list(judged.values()),
        }
    )
    expected = slow_metrics(run_rows, judged)
    table = evaluate(rankings, judgments, ["mrr", "ndcg@5", "recall@5"])
    assert table.index.tolist() == list(expected)
    for q, values in expected.items():
        for name, value in values.items():
            got = table.at[q, name]
            if math.isnan(value):
                assert math.isnan(got), (q, name)
            else:
                assert got == pytest.approx(value, abs=1e-12), (q, name, got, value)


@settings(max_examples=200, deadline=None)
@given(columns(min_size=1), st.data())
def test_take_rows_is_arrows_take_without_the_concatenation(case, data):
    values, cuts = case
    column = chunked(values, cuts)
    rows = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=30))
    taken = take_rows(column, np.array(rows, dtype=np.int64))
    assert taken.to_pylist() == [values[r] for r in rows]
