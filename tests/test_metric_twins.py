"""Every metric name the registry accepts has a judged-only twin that parses and names the
same metric; absurd cut-offs and thresholds are refused with the allowed range."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from abrank.analysis.unjudged import judged_only_names
from abrank.cli import main
from abrank.errors import ConfigError
from abrank.metrics import FAMILIES, Metric, parse_metric
from abrank.metrics.registry import MAX_CUTOFF, MAX_REL, spellings

# families that read grades: the ones with a judged-only variant
READ_GRADES = [spec for spec in FAMILIES.values() if spec.relevance in ("binary", "graded")]
GAIN_SPELLINGS = {"linear": "linear", "log2": "linear", "exp": "exp", "exp-log2": "exp"}


@st.composite
def named_metrics(draw) -> tuple[str, Metric]:
    """(a spelling of a metric as a user may type it, the metric it means), over every
    spelling of every family in the registry, with cut-offs and parameters."""
    spec = draw(st.sampled_from(READ_GRADES))
    spelling = draw(st.sampled_from(spec.spellings))
    k = draw(st.one_of(st.integers(1, 20), st.integers(1, MAX_CUTOFF)))
    family = spellings()[spelling.lower().removesuffix("@k").removesuffix(".k")]
    if spelling.endswith(".k"):  # trec_eval's form: family.k or family_k, no parameters
        sep = draw(st.sampled_from([".", "_"]))
        return f"{spelling[:-2]}{sep}{k}", Metric(family, k)
    base = spelling.removesuffix("@k")
    cut = {"required": True, "none": False}.get(spec.cutoff)
    if cut is None:  # optional
        cut = draw(st.booleans())
    rel = gain = None
    params = ""
    if spec.binary and draw(st.booleans()):
        rel = draw(
            st.one_of(
                st.integers(-3, 5).map(float),
                st.floats(-MAX_REL, MAX_REL, allow_nan=False, allow_infinity=False),
            )
        )
        params = f"(rel={rel!r})"
    if spec.graded and draw(st.booleans()):
        typed = draw(st.sampled_from(sorted(GAIN_SPELLINGS)))
        gain = GAIN_SPELLINGS[typed]
        params = f"({draw(st.sampled_from(['gain', 'dcg']))}={typed})"
    text = base + params + (f"@{k}" if cut else "")
    return text, Metric(family, k if cut else None, rel=rel, gain=gain)


@settings(max_examples=400, deadline=None)
@given(named_metrics())
def test_every_name_has_a_judged_only_twin_naming_the_same_metric(case):
    text, expected = case
    metric = parse_metric(text)
    assert metric == expected
    twin = replace(expected, judged_only=True)
    # the suffix on what the user typed, and on the canonical name (as the unjudged check
    # builds it), both parse to the same metric with its unjudged documents removed
    assert parse_metric(f"{text}(judged)") == twin
    assert parse_metric(f"{metric.name}(judged)") == twin
    assert parse_metric(f"{text.upper()}(JUDGED)") == twin
    # the canonical names round-trip
    assert parse_metric(metric.name) == metric
    assert parse_metric(twin.name) == twin
    assert (twin.family, twin.k, twin.rel, twin.gain) == (
        metric.family,
        metric.k,
        metric.rel,
        metric.gain,
    )
    assert judged_only_names([text]) == {text: twin.name}


@pytest.mark.parametrize(
    "text, twin",
    [
        ("mrr(rel=2)", "mrr(rel=2)(judged)"),
        ("ndcg(gain=exp)", "ndcg(gain=exp)(judged)"),
        ("RR(rel=2)", "mrr(rel=2)(judged)"),
        ("map(rel=3)", "map(rel=3)(judged)"),
        ("bpref(rel=2)", "bpref(rel=2)(judged)"),
        ("mrr(rel=2)@10", "mrr(rel=2)@10(judged)"),
        ("mrr(rel=1.5)", "mrr(rel=1.5)(judged)"),
    ],
)
def test_parameters_without_a_cutoff_keep_their_twin(text, twin):
    assert judged_only_names([text]) == {text: twin}
    assert parse_metric(twin).judged_only


def test_compare_with_a_threshold_survives_the_unjudged_check(shared_data, capsys):
    # DL19 BM25 -> RankVicuna triggers the unjudged-document check (RankVicuna brings up
    # passages the pool never saw); mrr(rel=2) then has the twin mrr(rel=2)(judged).
    # trec_eval -l 2 -m recip_rank: 0.7036 (BM25) and 0.8503 (RankVicuna), from
    # ../shared/data/trec-dl-passage/expected/*.l2.trec_eval.txt
    folder = shared_data / "trec-dl-passage"
    args = [
        "compare",
        str(folder / "qrels.dl19-passage.txt"),
        str(folder / "runs" / "dl19.bm25-flat.top100.txt"),
        str(folder / "runs" / "dl19.bm25-flat.top100+rankvicuna-7b.txt"),
        "-m",
        "mrr(rel=2)",
        "--resamples",
        "200",
        "--json",
    ]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    (comparison,) = json.loads(out)
    assert comparison["metric"] == "mrr(rel=2)"
    assert round(comparison["control_mean"], 4) == 0.7036
    assert round(comparison["treatment_mean"], 4) == 0.8503


@pytest.mark.parametrize(
    "text",
    [
        "ndcg@99999999999999999999999",
        "ndcg_cut.99999999999999999999999",
        "P_99999999999999999999",
        "mrr@1000001",
        "recall@1e400",
    ],
)
def test_absurd_cutoffs_name_the_metric_and_the_allowed_range(text):
    with pytest.raises(ConfigError) as caught:
        parse_metric(text)
    message = str(caught.value)
    assert repr(text) in message
    assert "from 1 to 1000000" in message


def test_the_largest_cutoff_is_allowed():
    assert parse_metric(f"ndcg@{MAX_CUTOFF}").k == 1_000_000
    with pytest.raises(ConfigError, match="cutoff"):
        Metric("ndcg", MAX_CUTOFF + 1)


@pytest.mark.parametrize("rel", ["1e300", "-1e7", "1e400", "nan"])
def test_absurd_thresholds_name_the_metric_and_the_allowed_range(rel):
    text = f"mrr(rel={rel})@10"
    with pytest.raises(ConfigError) as caught:
        parse_metric(text)
    assert repr(text) in str(caught.value)
    assert "from -1000000 to 1000000" in str(caught.value)


@pytest.mark.parametrize(
    "args",
    [
        ["-m", "ndcg@99999999999999999999999"],
        ["-m", "ndcg_cut.99999999999999999999999"],
        ["-m", "P.5,99999999999999999999"],
        ["-m", "ndcg@10", "--digits", "99999999999"],
        ["-m", "ndcg@10", "-l", "1e300"],
    ],
)
def test_metrics_verb_refuses_absurd_numbers_with_exit_2(args, shared_data, capsys):
    folder = shared_data / "trec-dl-passage"
    qrels = folder / "qrels.dl19-passage.txt"
    run = folder / "runs" / "dl19.bm25-flat.top100.txt"
    code = main(["metrics", str(qrels), str(run), *args])
    out, err = capsys.readouterr()
    assert code == 2, err
    assert out == ""
    assert err.startswith("abrank: error: ") and "Traceback" not in err
    assert "from" in err and " to " in err  # the allowed range is named
