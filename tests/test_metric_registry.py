"""The registry of metric families: the parser, the error text, README's table and the
engine's kernels all follow it, so none of them can drift from the others."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from abrank.engines.evaluate import evaluate
from abrank.engines.memory import KERNELS, missing_kernels
from abrank.errors import ConfigError
from abrank.metrics import FAMILIES, Metric, MetricSpec, parse_metric
from abrank.metrics.registry import judged_families, known_names, markdown_table, spellings

README = Path(__file__).resolve().parent.parent / "README.md"


def _readme_table() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(
        r"<!-- metric table: begin -->\n(.*?)\n<!-- metric table: end -->", text, re.DOTALL
    )
    assert match is not None, "README.md: the metric table markers are missing"
    return match.group(1)


def test_readme_metric_table_is_the_registry_rendered():
    assert _readme_table() == markdown_table()


def test_readme_table_has_one_row_per_family():
    rows = _readme_table().splitlines()[2:]
    # 18 judged families and 5 click ones, then the 4 stats of numeric metrics
    assert len(rows) == len(FAMILIES) + 4 == 27
    assert [row.split("`stat: ")[1].split("`")[0] for row in rows[23:]] == [
        "mean",
        "sum",
        "ratio",
        "quantile",
    ]
    assert rows[0].startswith("| `mrr`, `mrr@k` | MRR | binary |")
    assert rows[3].startswith("| `err`, `err@k` | ERR | graded |")
    assert rows[4].startswith("| `alpha_ndcg@k` | α-nDCG | subtopic |")
    assert rows[5].startswith("| `err_ia@k` | ERR-IA | subtopic |")
    assert rows[7].startswith("| `precision@k` | P | binary |")


def _sample(spelling: str, spec: MetricSpec) -> tuple[str, int | None]:
    """A name to parse for a spelling, and the cutoff it carries."""
    for placeholder, sep in (("@k", "@"), (".k", ".")):
        if spelling.endswith(placeholder):
            return spelling[: -len(placeholder)] + sep + "10", 10
    if spec.cutoff == "required":
        return spelling + "@10", 10
    return spelling, None


CASES = [(spec.family, spelling) for spec in FAMILIES.values() for spelling in spec.spellings]


@pytest.mark.parametrize(("family", "spelling"), CASES)
def test_every_spelling_parses_to_its_family(family, spelling):
    spec = FAMILIES[family]
    text, k = _sample(spelling, spec)
    for variant in (text, text.upper(), text.lower()):
        metric = parse_metric(variant)
        assert (metric.family, metric.k) == (family, k), variant
    if spec.cutoff == "optional" and k is None:
        assert parse_metric(text + "@5") == Metric(family, 5)


def test_spellings_cover_the_ones_of_other_tools():
    table = spellings()
    # independently listed: ir_measures' and trec_eval's names for abrank's families
    expected = {
        "rr": "mrr",
        "recip_rank": "mrr",
        "ndcg_cut": "ndcg",
        "r": "recall",
        "p": "precision",
        "success": "hit",
        "map_cut": "ap",
        "ap": "map",
        "judged": "judged",
        "rprec": "rprec",
        "infap": "infap",
    }
    assert {name: table[name] for name in expected} == expected


def test_a_spelling_claimed_by_two_families_is_refused(monkeypatch):
    clash = MetricSpec("newrank", "NR", "binary", "optional", "a clash", aliases=("rr",))
    monkeypatch.setitem(FAMILIES, "newrank", clash)
    with pytest.raises(RuntimeError, match="spelling 'rr' names both mrr and newrank"):
        spellings()


def test_known_names_list_every_family_in_registry_order():
    assert known_names().startswith(
        "mrr, mrr@k, ndcg, ndcg@k, dcg, dcg@k, err, err@k, alpha_ndcg@k, err_ia@k, recall, "
        "recall@k, precision@k, hit, hit@k, map, ap@k, gm_map, bpref, rprec, infap, rbp, rbp@k, "
        "rbp_residual, rbp_residual@k, judged, judged@k; ir_measures spellings RR@k, nDCG@k,"
    )
    with pytest.raises(ConfigError) as info:
        parse_metric("ndgc@10")
    assert f"({known_names()})" in str(info.value)


def test_a_new_family_shows_in_the_known_names(monkeypatch):
    monkeypatch.setitem(
        FAMILIES, "newrank", MetricSpec("newrank", "NR", "binary", "required", "a new one")
    )
    assert "judged@k, newrank@k;" in known_names()
    assert Metric("newrank", 3).label == "NR@3"


def test_the_memory_engine_has_a_kernel_for_every_family():
    assert missing_kernels() == []
    assert set(KERNELS) == set(judged_families())
    assert set(FAMILIES) - set(KERNELS) == {"click_rr", "ctr", "clicks", "abandonment", "sat_ctr"}


def test_a_family_without_a_kernel_fails_loudly(monkeypatch):
    monkeypatch.setitem(
        FAMILIES, "newrank", MetricSpec("newrank", "NR", "binary", "optional", "no kernel")
    )
    assert missing_kernels() == ["newrank"]
    rankings = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "rank": [1]})
    judgments = pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1.0]})
    with pytest.raises(NotImplementedError, match="'newrank' is in the registry but has no kernel"):
        evaluate(rankings, judgments, [Metric("newrank", None)])


def test_trec_eval_measures_name_the_family_the_registry_gives_them():
    from abrank.treceval import parse_trec_measures

    tokens = ["map", "recip_rank", "P.5", "recall.10", "ndcg", "ndcg_cut.10", "map_cut.100"]
    named = parse_trec_measures([*tokens, "success.1"]).metrics()
    assert [printed for printed, _ in named] == [
        "map",
        "recip_rank",
        "P_5",
        "recall_10",
        "ndcg",
        "ndcg_cut_10",
        "map_cut_100",
        "success_1",
    ]
    for printed, metric in named:
        assert parse_metric(printed) == metric, printed


def test_every_family_names_its_source():
    """The README's table says where each definition comes from."""
    missing = [spec.family for spec in FAMILIES.values() if not spec.source.strip()]
    assert missing == []
