"""Interleaved lists: team-draft and balanced against hand-worked lists and slow references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import abrank
from abrank.errors import ConfigError, DataError
from abrank.interleaving import coin_flips, interleave


def rankings(lists: dict[str, list[str]]) -> pd.DataFrame:
    rows = [(q, doc, i + 1) for q, docs in lists.items() for i, doc in enumerate(docs)]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "rank"])


def seed_with_flips(query: str, pattern: tuple[bool, ...]) -> int:
    """A seed whose first coin flips for ``query`` are ``pattern`` (true: control first)."""
    for seed in range(10_000):
        if tuple(coin_flips([query], seed, len(pattern))[0]) == pattern:
            return seed
    raise AssertionError("no seed found")


def shown(frame: pd.DataFrame, query: str = "q1") -> list[tuple[str, str]]:
    rows = frame[frame["query_id"] == query]
    assert rows["rank"].tolist() == list(range(1, len(rows) + 1))
    return list(zip(rows["doc_id"], rows["team"].str[0]))


A = {"q1": ["a", "b", "c", "d"]}
B = {"q1": ["b", "e", "a", "f"]}


# ------------------------------------------------------------------ team-draft by hand


def test_team_draft_control_first_every_round():
    seed = seed_with_flips("q1", (True, True, True))
    out = interleave(rankings(A), rankings(B), seed=seed, names=("A", "B"))
    # round 1: A takes a, B takes b; round 2: A's b is shown, so c; B takes e;
    # round 3: A takes d; B's a is shown, so f
    assert shown(out) == [("a", "A"), ("b", "B"), ("c", "A"), ("e", "B"), ("d", "A"), ("f", "B")]
    assert list(out.columns) == ["query_id", "rank", "doc_id", "team"]


def test_team_draft_coin_flips_decide_each_round():
    seed = seed_with_flips("q1", (False, True, False))
    out = interleave(rankings(A), rankings(B), seed=seed, names=("A", "B"))
    # round 1: B first (b), then A (a); round 2: A first (c, b is shown), B (e);
    # round 3: B first (f, a is shown), A (d)
    assert shown(out) == [("b", "B"), ("a", "A"), ("c", "A"), ("e", "B"), ("f", "B"), ("d", "A")]


def test_team_draft_the_team_with_fewer_picks_goes_next_when_one_list_is_used_up():
    a = {"q1": ["a", "b", "c", "d", "e"]}
    b = {"q1": ["c"]}
    seed = seed_with_flips("q1", (True, True, True))
    out = interleave(rankings(a), rankings(b), seed=seed, names=("A", "B"))
    assert shown(out) == [("a", "A"), ("c", "B"), ("b", "A"), ("d", "A"), ("e", "A")]
    seed = seed_with_flips("q1", (False, True, True))
    out = interleave(rankings(a), rankings(b), seed=seed, names=("A", "B"))
    assert shown(out) == [("c", "B"), ("a", "A"), ("b", "A"), ("d", "A"), ("e", "A")]


def test_team_draft_a_list_whose_documents_are_all_shown_stops_picking():
    seed = seed_with_flips("q1", (True,))
    out = interleave(rankings({"q1": ["a", "b"]}), rankings({"q1": ["a"]}), seed=seed)
    assert shown(out) == [("a", "c"), ("b", "c")]


def test_team_draft_depth_cuts_the_list():
    seed = seed_with_flips("q1", (True, True, True))
    out = interleave(rankings(A), rankings(B), seed=seed, depth=3, names=("A", "B"))
    assert shown(out) == [("a", "A"), ("b", "B"), ("c", "A")]


@pytest.mark.parametrize("method", ["team_draft", "balanced"])
def test_a_query_in_one_ranking_only_comes_from_that_team(method):
    control = rankings({"q1": ["a", "b"], "q2": ["x", "y", "z"]})
    treatment = rankings({"q1": ["b", "c"], "q3": ["u", "v"]})
    out = interleave(control, treatment, method=method, seed=3)
    assert shown(out, "q2") == [("x", "c"), ("y", "c"), ("z", "c")]
    assert shown(out, "q3") == [("u", "t"), ("v", "t")]
    assert sorted(out["query_id"].unique()) == ["q1", "q2", "q3"]


# ------------------------------------------------------------------ balanced by hand


def test_balanced_control_first():
    seed = seed_with_flips("q1", (True,))
    out = interleave(rankings(A), rankings(B), method="balanced", seed=seed, names=("A", "B"))
    # ka=kb: A adds a; kb<ka: B adds b; ka=kb: A's b is shown (skip); B adds e; A adds c;
    # B's a is shown (skip); A adds d; B adds f
    assert shown(out) == [("a", "A"), ("b", "B"), ("e", "B"), ("c", "A"), ("d", "A"), ("f", "B")]


def test_balanced_treatment_first():
    seed = seed_with_flips("q1", (False,))
    out = interleave(rankings(A), rankings(B), method="balanced", seed=seed, names=("A", "B"))
    assert shown(out) == [("b", "B"), ("a", "A"), ("e", "B"), ("c", "A"), ("f", "B"), ("d", "A")]


def test_balanced_unequal_lengths_the_longer_list_continues():
    seed = seed_with_flips("q1", (True,))
    out = interleave(
        rankings({"q1": ["a", "b", "c"]}),
        rankings({"q1": ["d"]}),
        method="balanced",
        seed=seed,
        names=("A", "B"),
    )
    assert shown(out) == [("a", "A"), ("d", "B"), ("b", "A"), ("c", "A")]


# ------------------------------------------------------------------ slow references


def reference_team_draft(a: list, b: list, flips: np.ndarray, depth: int):
    out: list[tuple[str, int]] = []
    picks = [0, 0]
    while len(out) < depth:
        seen = {d for d, _ in out}
        left = [[d for d in a if d not in seen], [d for d in b if d not in seen]]
        if not left[0] and not left[1]:
            break
        if picks[0] != picks[1]:
            team = 0 if picks[0] < picks[1] else 1
        else:
            team = 0 if flips[len(out) // 2] else 1
        if not left[team]:
            team = 1 - team
        out.append((left[team][0], team))
        picks[team] += 1
    return out


def reference_balanced(a: list, b: list, first_a: bool, depth: int):
    out: list[tuple[str, int]] = []
    ka = kb = 0
    while len(out) < depth and (ka < len(a) or kb < len(b)):
        a_moves = kb >= len(b) or (ka < len(a) and (ka < kb or (ka == kb and first_a)))
        if a_moves:
            doc, team, ka = a[ka], 0, ka + 1
        else:
            doc, team, kb = b[kb], 1, kb + 1
        if doc not in {d for d, _ in out}:
            out.append((doc, team))
    return out


def random_lists(rng: np.random.Generator, n_queries: int):
    """Overlapping rankings of unequal lengths (some empty) over a small pool per query."""
    control, treatment = {}, {}
    for q in range(n_queries):
        pool = [f"d{j}" for j in range(12)]
        n_a, n_b = rng.integers(0, 9, size=2)
        control[f"q{q}"] = list(rng.permutation(pool)[:n_a])
        treatment[f"q{q}"] = list(rng.permutation(pool)[:n_b])
    return control, treatment


@pytest.mark.parametrize("depth", [None, 5])
@pytest.mark.parametrize("method", ["team_draft", "balanced"])
def test_matches_a_slow_reference_on_300_random_queries(method, depth):
    rng = np.random.default_rng(11)
    control, treatment = random_lists(rng, 300)
    out = interleave(rankings(control), rankings(treatment), method=method, seed=5, depth=depth)
    queries = sorted(set(control) | set(treatment))
    flips = coin_flips(queries, 5, 20)
    teams = {"control": 0, "treatment": 1}
    groups = dict(tuple(out.groupby("query_id")))
    for q, row in zip(queries, flips):
        limit = depth or 100
        if method == "team_draft":
            expected = reference_team_draft(control[q], treatment[q], row, limit)
        else:
            expected = reference_balanced(control[q], treatment[q], bool(row[0]), limit)
        got = groups.get(q)
        got = [] if got is None else list(zip(got["doc_id"], got["team"].map(teams)))
        assert got == expected, q


def test_balanced_credits_the_team_that_ranks_a_document_higher():
    rng = np.random.default_rng(2)
    control, treatment = random_lists(rng, 300)
    out = interleave(rankings(control), rankings(treatment), method="balanced", seed=1)
    for q, doc, team in zip(out["query_id"], out["doc_id"], out["team"]):
        own, other = (control, treatment) if team == "control" else (treatment, control)
        other_rank = other[q].index(doc) if doc in other[q] else np.inf  # not ranked
        assert own[q].index(doc) <= other_rank


def test_the_same_seed_gives_the_same_lists_whatever_the_query_order():
    rng = np.random.default_rng(4)
    control, treatment = random_lists(rng, 200)
    first = interleave(rankings(control), rankings(treatment), seed=9)
    frame_a = rankings(control).sample(frac=1.0, random_state=1)
    frame_b = rankings(treatment).sample(frac=1.0, random_state=2)
    some = [f"q{q}" for q in range(0, 200, 3)]
    again = interleave(frame_a[frame_a["query_id"].isin(some)], frame_b, seed=9)
    for q in some:
        assert shown(again, q) == shown(first, q)
    other = interleave(rankings(control), rankings(treatment), seed=10)
    assert not first.equals(other)


def test_integer_and_text_ids_are_the_same_ids():
    control = pd.DataFrame({"query_id": [7, 7], "doc_id": [1, 2], "rank": [1, 2]})
    treatment = pd.DataFrame({"query_id": ["7", "7"], "doc_id": ["2", "3"], "rank": [1, 2]})
    out = interleave(control, treatment, seed=0)
    assert out["query_id"].tolist() == ["7"] * 3
    assert sorted(out["doc_id"]) == ["1", "2", "3"]


def test_ranks_order_each_list_whatever_the_row_order():
    control = pd.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["c", "a", "b"], "rank": [3, 1, 2]})
    out = interleave(control, rankings({}).iloc[:0], seed=0)
    assert shown(out) == [("a", "c"), ("b", "c"), ("c", "c")]


# ------------------------------------------------------------------ statistical properties


def test_identical_rankings_each_team_has_rank_one_half_the_time_and_picks_stay_balanced():
    rng = np.random.default_rng(8)
    lists = {f"q{q}": list(rng.permutation([f"d{j}" for j in range(10)])) for q in range(4000)}
    out = interleave(rankings(lists), rankings(lists), seed=21)
    top = out[out["rank"] == 1]
    control_first = int((top["team"] == "control").sum())
    assert stats.binomtest(control_first, len(top), 0.5).pvalue > 0.001
    # the shown list is the ranking itself, and after every pair of picks both teams have
    # as many results
    for q, group in list(out.groupby("query_id"))[:500]:
        assert group["doc_id"].tolist() == lists[q]
        count = (group["team"] == "control").cumsum().to_numpy()
        picks = np.arange(1, len(group) + 1)
        assert (np.abs(2 * count - picks) <= 1).all()
    ranks_two = out[out["rank"] == 2]
    assert (ranks_two["team"].to_numpy() != top["team"].to_numpy()).all()


def test_balanced_identical_rankings_first_team_is_half_the_time():
    rng = np.random.default_rng(9)
    lists = {f"q{q}": list(rng.permutation([f"d{j}" for j in range(6)])) for q in range(4000)}
    out = interleave(rankings(lists), rankings(lists), method="balanced", seed=3)
    top = out[out["rank"] == 1]
    assert stats.binomtest(int((top["team"] == "control").sum()), len(top), 0.5).pvalue > 0.001


# ------------------------------------------------------------------ bad input


def test_unknown_method_names_the_choices():
    with pytest.raises(
        ConfigError,
        match=r"method: expected one of team_draft, balanced, "
        r"got 'team_drift' \(did you mean 'team_draft'\?\)",
    ):
        interleave(rankings(A), rankings(B), method="team_drift")


def test_a_document_twice_in_a_query_is_named():
    bad = rankings({"q1": ["a", "b", "a"]})
    with pytest.raises(
        DataError,
        match=r"treatment rankings: row 3: doc_id: expected each document once per query, "
        r"got 'a' twice in query 'q1'",
    ):
        interleave(rankings(A), bad)


def test_missing_columns_are_named():
    with pytest.raises(
        DataError,
        match=r"control rankings: columns: expected query_id, "
        r"doc_id, rank, got no rank",
    ):
        interleave(rankings(A).drop(columns="rank"), rankings(B))


def test_a_rank_that_is_no_number_is_named():
    bad = rankings(A).astype({"rank": object})
    bad.loc[1, "rank"] = "two"
    with pytest.raises(
        DataError,
        match=r"control rankings: row 2: rank: expected a number, "
        r"got 'two'",
    ):
        interleave(bad, rankings(B))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"depth": 0}, r"depth: expected a whole number >= 1 or None, got 0"),
        ({"seed": 1.5}, r"seed: expected a whole number, got 1.5"),
        ({"names": ("x", "x")}, r"names: expected two different non-empty team names"),
    ],
)
def test_bad_options_are_config_errors(options, message):
    with pytest.raises(ConfigError, match=message):
        interleave(rankings(A), rankings(B), **options)


def test_exported_from_the_package():
    assert abrank.interleave is interleave
    assert "interleave" in dir(abrank)


# ------------------------------------------------------------------ the CLI verb


def write_trec_files(folder):
    qrels = folder / "judgments.qrels"
    qrels.write_text("q1 0 a 2\nq1 0 b 0\nq1 0 e 1\n")
    runs = []
    for name, docs in (("a.run", A["q1"]), ("b.run", B["q1"])):
        path = folder / name
        lines = [f"q1 Q0 {doc} {i + 1} {10 - i} {name}" for i, doc in enumerate(docs)]
        path.write_text("\n".join(lines) + "\n")
        runs.append(str(path))
    return str(qrels), runs


def run_cli(capsys, *args) -> tuple[int, str, str]:
    from abrank.cli import main

    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_writes_the_interleaved_lists_with_their_grades(tmp_path, capsys):
    qrels, (run_a, run_b) = write_trec_files(tmp_path)
    seed = seed_with_flips("q1", (True, True, True))
    out = tmp_path / "shown.csv"
    code, printed, err = run_cli(
        capsys, "interleave", qrels, run_a, run_b, "-o", out, "--seed", seed, "--names", "A,B"
    )
    assert code == 0, err
    assert printed.startswith(f"{out}: 6 shown results of 1 queries")
    table = pd.read_csv(out)
    assert list(table.columns) == ["query_id", "rank", "doc_id", "team", "relevance"]
    assert list(zip(table["doc_id"], table["team"])) == [
        ("a", "A"),
        ("b", "B"),
        ("c", "A"),
        ("e", "B"),
        ("d", "A"),
        ("f", "B"),
    ]
    assert table["relevance"].tolist()[:2] == [2.0, 0.0]
    assert table["relevance"].tolist()[3] == 1.0
    assert table["relevance"].isna().tolist() == [False, False, True, False, True, True]


@pytest.mark.parametrize("suffix", [".tsv", ".parquet", ".jsonl"])
def test_cli_output_format_follows_the_suffix_and_none_means_no_judgments(tmp_path, capsys, suffix):
    _, (run_a, run_b) = write_trec_files(tmp_path)
    out = tmp_path / f"shown{suffix}"
    code, _, err = run_cli(
        capsys,
        "interleave",
        "none",
        run_a,
        run_b,
        "-o",
        out,
        "--method",
        "balanced",
        "--depth",
        "4",
    )
    assert code == 0, err
    table = abrank.read_rankings(out)
    assert table["rank"].tolist() == [1, 2, 3, 4]
    assert "relevance" not in table.columns
    expected = interleave(rankings(A), rankings(B), method="balanced", seed=0, depth=4)
    assert table["doc_id"].tolist() == expected["doc_id"].tolist()
    assert table["team"].tolist() == expected["team"].tolist()


def test_cli_bad_method_exits_2(tmp_path, capsys):
    _, (run_a, run_b) = write_trec_files(tmp_path)
    code, _, err = run_cli(
        capsys, "interleave", "-", run_a, run_b, "-o", tmp_path / "x.csv", "--method", "tdi"
    )
    assert code == 2
    assert "--method: expected one of team_draft, balanced, got 'tdi'" in err
    assert not (tmp_path / "x.csv").exists()


def test_cli_missing_file_exits_2(tmp_path, capsys):
    _, (run_a, _) = write_trec_files(tmp_path)
    missing = tmp_path / "nope.run"
    code, _, err = run_cli(capsys, "interleave", "-", run_a, missing, "-o", tmp_path / "x.csv")
    assert code == 2
    assert f"{missing}: expected an existing file, got no such file" in err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["-o", "x.xlsx"], "--out: expected a file ending in .csv, .tsv, .parquet, .jsonl"),
        (["-o", "x.csv", "--names", "A"], "--names: expected two different team names A,B"),
        (["-o", "x.csv", "--depth", "0"], "--depth: expected a whole number >= 1, got 0"),
    ],
)
def test_cli_bad_options_exit_2(tmp_path, capsys, options, message):
    _, (run_a, run_b) = write_trec_files(tmp_path)
    code, _, err = run_cli(capsys, "interleave", "-", run_a, run_b, *options)
    assert code == 2
    assert message in err
