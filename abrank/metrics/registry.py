"""The registry of metric families: one spec per family, and everything derived from it.

Each family is described once, by a frozen :class:`MetricSpec`: its canonical name, display
label, what relevance it reads, whether it takes a cutoff, the spellings other tools use for
it, and one line saying what it measures. The parser's table of spellings
(:func:`spellings`), the list of names shown in errors (:func:`known_names`), the wording of
parameter errors and the metric table of README.md (:func:`markdown_table`) all come from
:data:`FAMILIES`, so a new family is one entry here (and one kernel in an engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from abrank.metrics.numeric import NUMERIC_STATS

__all__ = [
    "FAMILIES",
    "MAX_CUTOFF",
    "MAX_REL",
    "GEOMETRIC_FLOOR",
    "MetricSpec",
    "RBP_PERSISTENCE",
    "binary_families",
    "click_families",
    "diversity_families",
    "graded_families",
    "judged_families",
    "join_names",
    "known_names",
    "markdown_table",
    "persistence_families",
    "spellings",
]

#: The largest cut-off a metric may take (``ndcg@1000000``): far beyond any ranking abrank
#: scores (trec_eval keeps 1,000 documents a query), and small enough for every engine's
#: integer columns.
MAX_CUTOFF = 1_000_000
#: The largest relevance threshold (``rel=``) in absolute value: grades are small numbers.
MAX_REL = 1_000_000.0

#: trec_eval's floor of a per-query value in a geometric mean (gm_map, gm_bpref): a query
#: scoring 0 counts as 0.00001, so that one failure does not make the mean 0.
GEOMETRIC_FLOOR = 1e-5

#: The persistence of rbp when none is named: a user goes on to the next rank with
#: probability 0.8 (Moffat & Zobel's middle value, ir_measures' and trec_eval's default).
RBP_PERSISTENCE = 0.8

Relevance = Literal["binary", "graded", "subtopic", "judged", "click"]
Cutoff = Literal["optional", "required", "none"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric family.

    ``relevance`` says what the family reads of a judgment: ``binary`` (grade >= the
    relevance threshold is relevant; takes ``rel=``), ``graded`` (the grade as a gain;
    takes ``gain=``), ``subtopic`` (a diversity family: whether the document is relevant,
    grade > 0, to each subtopic of the query; takes ``alpha=``), ``judged`` (only whether a
    judgment exists) or ``click`` (no
    judgment at all: the clicks, and dwell times, of an impression log). ``cutoff`` is
    ``optional`` (``name`` or ``name@k``), ``required`` (``name@k`` only) or ``none``; a
    family with a ``twin`` turns into it when the cutoff is given where it has none, or
    left out where it needs one (``map`` and ``ap@k``). Other tools' spellings are written
    as those tools write them, ``@k`` / ``.k`` standing for a cutoff. ``lower_is_better``
    marks a family whose decrease is the improvement (abandonment): its verdicts read
    ``win`` when it falls significantly. ``fixed_gain`` marks a graded family whose gain is
    part of its definition (ERR): it takes no ``gain=``. ``persistence`` marks a family of
    the rank-biased user model: it takes ``p=``, the chance of going on to the next rank.
    ``geometric`` marks a family whose per-query values are summarised by their geometric
    mean (each floored at :data:`GEOMETRIC_FLOOR`) instead of their mean: its comparisons
    test the difference of the mean logs (:mod:`abrank.analysis.geometric`). ``source``
    names where the definition comes from (a paper, the tool whose numbers it equals).
    """

    family: str
    label: str
    relevance: Relevance
    cutoff: Cutoff
    description: str
    aliases: tuple[str, ...] = ()
    ir_measures: tuple[str, ...] = ()
    trec_eval: tuple[str, ...] = ()
    twin: str | None = None
    lower_is_better: bool = False
    fixed_gain: bool = False
    persistence: bool = False
    geometric: bool = False
    source: str = ""

    @property
    def binary(self) -> bool:
        """The family counts a document as relevant when its grade reaches a threshold."""
        return self.relevance == "binary"

    @property
    def graded(self) -> bool:
        """The family uses grades as gains (linear or exponential, ``gain=``)."""
        return self.relevance == "graded" and not self.fixed_gain

    @property
    def diversity(self) -> bool:
        """The family reads subtopic judgments (alpha-nDCG, ERR-IA) and takes ``alpha=``."""
        return self.relevance == "subtopic"

    @property
    def click(self) -> bool:
        """The family is scored from the clicks of an impression log, not from judgments."""
        return self.relevance == "click"

    @property
    def usage(self) -> tuple[str, ...]:
        """abrank's own forms of the name: ``mrr, mrr@k``, ``precision@k``, ``map``."""
        plain, cut = self.family, f"{self.family}@k"
        return {"optional": (plain, cut), "required": (cut,), "none": (plain,)}[self.cutoff]

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every spelling of the family as written: its name, aliases, other tools' names."""
        return (self.family, *self.aliases, *self.ir_measures, *self.trec_eval)


FAMILIES: dict[str, MetricSpec] = {
    spec.family: spec
    for spec in (
        MetricSpec(
            "mrr",
            "MRR",
            "binary",
            "optional",
            "reciprocal rank of the first relevant document (0 when none is in the top k)",
            aliases=("reciprocal_rank",),
            ir_measures=("RR@k",),
            trec_eval=("recip_rank",),
            source="trec_eval recip_rank (Voorhees 1999)",
        ),
        MetricSpec(
            "ndcg",
            "NDCG",
            "graded",
            "optional",
            "DCG divided by the DCG of the ideal ordering of all judged documents",
            ir_measures=("nDCG@k",),
            trec_eval=("ndcg", "ndcg_cut.k"),
            source="Järvelin & Kekäläinen 2002; trec_eval ndcg, ndcg_cut",
        ),
        MetricSpec(
            "dcg",
            "DCG",
            "graded",
            "optional",
            "sum of gain(grade) / log2(rank + 1) over the top k",
            source="Järvelin & Kekäläinen 2002",
        ),
        MetricSpec(
            "err",
            "ERR",
            "graded",
            "optional",
            "expected reciprocal rank (Chapelle et al. 2009): the chance that a user scanning "
            "down stops at each rank, stopping at a document with probability "
            "(2^grade - 1) / 16 (gdeval's gain, grades up to 4; a higher grade counts as 4), "
            "times 1 / rank; 0 for an unjudged document",
            ir_measures=("ERR@k",),
            fixed_gain=True,
            source="Chapelle, Metzler, Zhang & Grinspan 2009; gdeval (TREC Web track)",
        ),
        MetricSpec(
            "alpha_ndcg",
            "α-nDCG",
            "subtopic",
            "required",
            "α-DCG over the α-DCG of ndeval's greedy ideal ordering (Clarke et al. 2008): the "
            "gain at rank i sums, over the subtopics the document is relevant to (grade > 0), "
            "(1 - α)^(the higher-ranked documents relevant to that subtopic), discount "
            "1 / log2(i + 1); α = 0.5 unless `alpha=` says otherwise",
            ir_measures=("alpha_nDCG@k",),
            source="Clarke, Kolla, Cormack, Vechtomova, Ashkan, Büttcher & MacKinnon 2008; "
            "ndeval (TREC Web track), pyndeval",
        ),
        MetricSpec(
            "err_ia",
            "ERR-IA",
            "subtopic",
            "required",
            "intent-aware ERR as ndeval computes it: the same gains with discount 1 / i, over "
            "the number of subtopics S times sum over i <= k of (1 - α)^(i-1) / i (the "
            "'ideal ideal' normalisation ir_measures' ERR_IA reports); α = 0.5 by default",
            ir_measures=("ERR_IA@k",),
            source="Chapelle, Ji, Liao, Velipasaoglu, Lai & Wu 2011; ndeval (TREC Web track)",
        ),
        MetricSpec(
            "recall",
            "Recall",
            "binary",
            "optional",
            "share of the relevant documents found in the top k",
            ir_measures=("R@k",),
            trec_eval=("recall.k",),
            source="trec_eval recall",
        ),
        MetricSpec(
            "precision",
            "P",
            "binary",
            "required",
            "share of the top k that is relevant (divided by k)",
            aliases=("p", "prec"),
            ir_measures=("P@k",),
            trec_eval=("P.k",),
            source="trec_eval P",
        ),
        MetricSpec(
            "hit",
            "Hit",
            "binary",
            "optional",
            "1 when a relevant document is in the top k, else 0 (success)",
            aliases=("hits", "hitrate", "hit_rate"),
            ir_measures=("Success@k",),
            trec_eval=("success.k",),
            source="trec_eval success",
        ),
        MetricSpec(
            "map",
            "MAP",
            "binary",
            "none",
            "average precision over the whole ranking (mean over queries: MAP)",
            ir_measures=("AP",),
            trec_eval=("map",),
            twin="ap",
            source="trec_eval map",
        ),
        MetricSpec(
            "ap",
            "AP",
            "binary",
            "required",
            "average precision over the top k",
            ir_measures=("AP@k",),
            trec_eval=("map_cut.k",),
            twin="map",
            source="trec_eval map_cut",
        ),
        MetricSpec(
            "gm_map",
            "GM-MAP",
            "binary",
            "none",
            "MAP's geometric mean (trec_eval's gm_map): each query scores its average precision, "
            "and an arm's summary is exp(mean(ln(max(AP, 0.00001)))), which weighs the hard "
            "queries more; comparisons test the difference of the mean logs, and the change is "
            "read as the ratio of the two geometric means",
            aliases=("gmap",),
            trec_eval=("gm_map",),
            geometric=True,
            source="trec_eval gm_map (Robertson 2006)",
        ),
        MetricSpec(
            "bpref",
            "bpref",
            "binary",
            "none",
            "share of the judged nonrelevant documents (at most R) ranked below each relevant "
            "one; unjudged documents are ignored (Buckley & Voorhees 2004)",
            trec_eval=("bpref",),
            source="Buckley & Voorhees 2004; trec_eval bpref",
        ),
        MetricSpec(
            "rprec",
            "R-Prec",
            "binary",
            "none",
            "precision at R, the number of relevant judgments of the query: the share of the "
            "top R that is relevant (R-precision)",
            aliases=("r_precision",),
            ir_measures=("Rprec",),
            trec_eval=("Rprec",),
            source="trec_eval Rprec",
        ),
        MetricSpec(
            "infap",
            "infAP",
            "binary",
            "none",
            "inferred AP (Yilmaz & Aslam 2006): AP estimated from a sampled pool, where a "
            "negative grade marks a pooled document left unjudged; equals AP when the pool "
            "is fully judged",
            ir_measures=("infAP",),
            trec_eval=("infAP",),
            source="Yilmaz & Aslam 2006; trec_eval infAP",
        ),
        MetricSpec(
            "rbp",
            "RBP",
            "binary",
            "optional",
            "rank-biased precision (Moffat & Zobel 2008): (1 - p) x the sum of p^(rank - 1) "
            "over the relevant documents of the top k, a user going on to the next rank with "
            "probability p (default 0.8); unjudged documents count as not relevant, and "
            "rbp_residual says how much they could add",
            ir_measures=("RBP",),
            persistence=True,
            source="Moffat & Zobel 2008; cwl_eval (ir_measures RBP)",
        ),
        MetricSpec(
            "rbp_residual",
            "RBP residual",
            "judged",
            "optional",
            "the most rbp could still rise: the weight (1 - p) x p^(rank - 1) of the unjudged "
            "documents of the top k and p^n of the places past the n scored (Moffat & Zobel "
            "2008); 1 minus the weight of the judged documents. Reported beside rbp",
            aliases=("rbp_resid",),
            persistence=True,
            source="Moffat & Zobel 2008",
        ),
        MetricSpec(
            "judged",
            "Judged",
            "judged",
            "optional",
            "share of the top k that has a judgment (a diagnostic)",
            ir_measures=("Judged@k",),
            source="ir_measures Judged",
        ),
        MetricSpec(
            "click_rr",
            "ClickRR",
            "click",
            "optional",
            "1 / rank of the first clicked result in the top k, else 0 (per impression)",
            aliases=("click_mrr",),
            source="impression logs (reciprocal rank of the first click)",
        ),
        MetricSpec(
            "ctr",
            "CTR",
            "click",
            "optional",
            "1 when a result in the top k was clicked, else 0 (per impression)",
            source="impression logs",
        ),
        MetricSpec(
            "clicks",
            "Clicks",
            "click",
            "optional",
            "the number of clicked results in the top k (per impression)",
            source="impression logs",
        ),
        MetricSpec(
            "abandonment",
            "Abandonment",
            "click",
            "none",
            "1 when nothing was clicked, else 0 (per impression; lower is better)",
            lower_is_better=True,
            source="impression logs",
        ),
        MetricSpec(
            "sat_ctr",
            "SatCTR",
            "click",
            "optional",
            "1 when a result in the top k was clicked with dwell >= sat_dwell, else 0",
            source="impression logs (satisfied click: dwell >= sat_dwell)",
        ),
    )
}


def _bare(spelling: str) -> str:
    """The lowercase name the parser matches: the spelling without its cutoff placeholder."""
    for placeholder in ("@k", ".k"):
        if spelling.endswith(placeholder):
            spelling = spelling[: -len(placeholder)]
    return spelling.lower()


def spellings() -> dict[str, str]:
    """Every accepted lowercase name (without cutoff or parameters) -> its family.

    A spelling shared by two families is allowed only between twins (``ap`` names both
    ``map`` and ``ap@k``, which the cutoff tells apart); any other clash is an error in the
    registry.
    """
    table: dict[str, str] = {}
    for spec in FAMILIES.values():
        for spelling in spec.spellings:
            name = _bare(spelling)
            owner = table.setdefault(name, spec.family)
            if owner != spec.family and FAMILIES[owner].twin != spec.family:
                raise RuntimeError(
                    f"metric registry: spelling {name!r} names both {owner} and {spec.family}"
                )
    return table


def join_names(names: list[str] | tuple[str, ...]) -> str:
    """``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def binary_families() -> list[str]:
    """Families that take a relevance threshold (``rel=``), in registry order."""
    return [spec.family for spec in FAMILIES.values() if spec.binary]


def graded_families() -> list[str]:
    """Families that take a gain (``gain=``), in registry order."""
    return [spec.family for spec in FAMILIES.values() if spec.graded]


def persistence_families() -> list[str]:
    """Families that take a persistence (``p=``), in registry order."""
    return [spec.family for spec in FAMILIES.values() if spec.persistence]


def diversity_families() -> list[str]:
    """Families scored from subtopic judgments (take ``alpha=``), in registry order."""
    return [spec.family for spec in FAMILIES.values() if spec.diversity]


def click_families() -> list[str]:
    """Families scored from impression logs (clicks, dwell), in registry order."""
    return [spec.family for spec in FAMILIES.values() if spec.click]


def judged_families() -> list[str]:
    """Families scored from rankings and judgments (every family but the click ones)."""
    return [spec.family for spec in FAMILIES.values() if not spec.click]


def _distinct(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def known_names() -> str:
    """The names listed when a metric name does not parse: the judged families, other
    tools' spellings of them, then the click families (scored from impression logs)."""
    judged = [FAMILIES[family] for family in judged_families()]
    own = ", ".join(form for spec in judged for form in spec.usage)
    ir = ", ".join(_distinct([s for spec in FAMILIES.values() for s in spec.ir_measures]))
    trec = ", ".join(_distinct([s for spec in FAMILIES.values() for s in spec.trec_eval]))
    clicks = [
        form
        for family in click_families()
        for form in (*FAMILIES[family].usage, *FAMILIES[family].aliases)
    ]
    listed = f"; click metrics {', '.join(clicks)}" if clicks else ""
    return (
        f"{own}; ir_measures spellings {ir}; trec_eval spellings {trec}{listed}; "
        "parameters as in mrr(rel=2)@10, ndcg(gain=exp)@10, rbp(p=0.9) or "
        "alpha_ndcg(alpha=0.7)@10"
    )


def markdown_table() -> str:
    """The metric table of README.md (a test keeps the two equal): every family, then the
    four stats of numeric metrics of log columns (:data:`abrank.metrics.numeric.NUMERIC_STATS`),
    whose names the config chooses."""
    rows = [
        "| metric | label | relevance | also accepted | what it measures | source |",
        "|---|---|---|---|---|---|",
    ]
    for spec in FAMILIES.values():
        names = ", ".join(f"`{form}`" for form in spec.usage)
        spelt = _distinct([s for s in spec.spellings if s != spec.family])
        others = ", ".join(f"`{s}`" for s in spelt) or "—"
        rows.append(
            f"| {names} | {spec.label} | {spec.relevance} | {others} | {spec.description} "
            f"| {spec.source or '—'} |"
        )
    for stat in NUMERIC_STATS.values():
        rows.append(
            f"| `{stat.usage}` | its name | numeric | `stat: {stat.stat}` | per impression: "
            f"{stat.impression}; `level: unit`: {stat.unit} | {stat.interval} |"
        )
    return "\n".join(rows)
