"""trec_eval's own dialect: its measure names and cutoffs, and its output, byte for byte.

``abrank metrics`` answers as trec_eval 10 does when every ``-m`` names one of trec_eval's
measures spelled as trec_eval spells them (``recip_rank``, ``ndcg_cut.10``, ``P.5,10``,
``map``, ``Rprec_mult.0.5,1.0``, ``ndcg.1=3,2=9``, a bare family such as ``P`` for its
default cutoffs...), so that a script can switch from ``trec_eval`` to ``abrank metrics``
by renaming the command. The rules below are trec_eval's (``trec_eval.c``, ``measures.c``,
``meas_init.c``, ``m_*.c`` of usnistgov/trec_eval 10.0):

- measures print in trec_eval's table order, not in command-line order, each family's
  cutoffs ascending; per query (``-q``) all measures of a query, then the next query
  (byte order of query ids), then the ``all`` rows;
- a line is ``%-22s\\t%s\\t%6.4f`` (name padded to 22, tab, query, tab, value); counts
  (``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_q``) print as integers and ``runid`` as
  the tag of the run file's last line; ``runid``, ``num_q``, ``gm_map`` and ``gm_bpref``
  have ``all`` rows only, ``relstring`` per-query rows only (quoted);
- parameters follow trec_eval's syntax: whole-number cutoffs (``P.5,10``; a decimal one is
  cut as C's atol cuts it, ``ndcg_cut.23.4`` is 23), fractional ones printed with two
  decimals (``iprec_at_recall``, ``Rprec_mult``), lists of numbers printed as given
  (``utility.2,-1,0,0``, ``11pt_avg``, ``set_F``, ``relstring``), and ``level=gain`` pairs
  (``ndcg``, ``ndcg_rel``, ``Rndcg``, ``G``, ``rbp``, ``rbp_resid``; rbp's persistence is
  ``p=0.8``);
- means divide by the number of queries evaluated, with ``-c`` by the number of judged
  queries: missing ones score 0 and, as in trec_eval 10, ``-q`` prints their rows; counts
  sum over queries, except that ``num_rel``'s ``all`` row under ``-c`` counts every
  judgment with a grade above 0 whatever ``-l`` says, as trec_eval does;
- a measure named twice with different parameters keeps the first given (trec_eval reads
  only that one); abrank says so on stderr rather than dropping it silently;
- no measure named means trec_eval's default set (:data:`OFFICIAL`, also ``-m official``);
  ``-m all_trec`` means every measure of trec_eval 10's all_trec set (all are computed;
  the measures outside it that abrank lacks, the ``prefs_*`` family, ``yaap``, ``dcg``,
  ``ideal_dcg``, ``num_nonjudged_ret`` and the ``*_avgjg`` ones, are refused by name);
  ``iprec_at_recall`` and ``11pt_avg`` follow trec_eval 10 (a recall level c needs
  round(c x R) relevant documents, where 9 took c x R + 0.9 rounded down), so that the
  output equals trec_eval 10's test outputs byte for byte (``out.test.a``, ``.aq``,
  ``.aqc``, ``.aqcM``, ``.aql``, ``.meas_params``).

The measures without an abrank metric family of their own are computed in
:mod:`abrank.treceval.default_set` and :mod:`abrank.treceval.all_trec`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from abrank.errors import ConfigError

if TYPE_CHECKING:
    from abrank.engines.prepared import Prepared
    from abrank.metrics import Metric

__all__ = [
    "OFFICIAL",
    "SETS",
    "TrecMeasures",
    "expand_cutoff_lists",
    "format_report",
    "parse_trec_measures",
    "split_metric_lists",
]

# every measure of trec_eval's table (measures.c) that abrank computes, in that order, which
# is the order trec_eval prints them in; value: abrank's metric family when one computes it
# as trec_eval does (None: computed here, in default_set or all_trec)
_MEASURES: dict[str, str | None] = {
    "runid": None,
    "num_q": None,
    "num_ret": None,
    "num_rel": None,
    "num_rel_ret": None,
    "map": "map",
    "gm_map": None,
    "Rprec": None,
    "bpref": "bpref",
    "recip_rank": "mrr",
    "iprec_at_recall": None,
    "P": "precision",
    "relstring": None,
    "recall": "recall",
    "infAP": None,
    "gm_bpref": None,
    "Rprec_mult": None,
    "utility": None,
    "11pt_avg": None,
    "binG": None,
    "G": None,
    "ndcg": "ndcg",
    "ndcg_rel": None,
    "Rndcg": None,
    "ndcg_cut": "ndcg",
    "map_cut": "ap",
    "relative_P": None,
    "success": "hit",
    "set_P": None,
    "set_relative_P": None,
    "set_recall": None,
    "set_map": None,
    "set_F": None,
    "num_nonrel_judged_ret": None,
    "rbp": None,
    "rbp_resid": None,
    "unj": None,
}
_LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# families with whole-number cutoffs and trec_eval's default cutoffs (m_P.c, m_unjudged.c...)
DEFAULT_CUTOFFS: dict[str, tuple[int, ...]] = {
    "P": _LONG_CUTOFFS,
    "recall": _LONG_CUTOFFS,
    "ndcg_cut": _LONG_CUTOFFS,
    "map_cut": _LONG_CUTOFFS,
    "relative_P": _LONG_CUTOFFS,
    "success": (1, 5, 10),
    "unj": (5, 10, 20),
}
# families with fractional cutoffs, one value each, printed name_%3.2f (m_Rprec_mult.c...)
DOUBLE_CUTOFFS: dict[str, tuple[float, ...]] = {
    "iprec_at_recall": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "Rprec_mult": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
}
# one value with a list of numbers as parameters, printed name_<the list as given>
DOUBLE_PARAMS: dict[str, tuple[float, ...]] = {
    "relstring": (10.0,),
    "utility": (1.0, -1.0, 0.0, 0.0),
    "11pt_avg": DOUBLE_CUTOFFS["iprec_at_recall"],
    "set_F": (1.0,),
}
# one value with name=value parameters (gains per level; rbp's p), printed name_<as given>
PAIR_PARAMS = frozenset({"G", "ndcg", "ndcg_rel", "Rndcg", "rbp", "rbp_resid"})
# trec_eval's other measures and nicknames: named in errors, not computed
_OTHER_NAMES = (
    "dcg ideal_dcg num_nonjudged_ret prefs_num_prefs_poss prefs_num_prefs_ful "
    "prefs_num_prefs_ful_ret prefs_simp prefs_pair prefs_avgjg prefs_avgjg_Rnonrel "
    "prefs_simp_ret prefs_pair_ret prefs_avgjg_ret prefs_avgjg_Rnonrel_ret prefs_simp_imp "
    "prefs_pair_imp prefs_avgjg_imp map_avgjg P_avgjg Rprec_mult_avgjg yaap "
    "set all_prefs prefs qrels_jg"
)
_OTHERS = frozenset(_OTHER_NAMES.split())
#: trec_eval's default set (``official``), printed when no measure is named.
OFFICIAL = (
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
)
# trec_eval 10's all_trec set (measures.c, trec_names); printed in table order all the same
_ALL_TREC_NAMES = (
    "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall "
    "P relstring recall unj rbp rbp_resid infAP gm_bpref utility 11pt_avg ndcg relative_P "
    "Rprec_mult success map_cut ndcg_cut ndcg_rel Rndcg binG G set_P set_recall "
    "set_relative_P set_map set_F num_nonrel_judged_ret"
)
#: trec_eval's measure sets and what they stand for.
SETS: dict[str, tuple[str, ...]] = {
    "official": OFFICIAL,
    "all_trec": tuple(_ALL_TREC_NAMES.split()),
}
#: the measures computed without an abrank metric family or pandas: counts, runid, the
#: geometric means of map and bpref, and the rest of trec_eval's default set
_PLAIN = frozenset(
    [
        "runid",
        "num_q",
        "num_ret",
        "num_rel",
        "num_rel_ret",
        "num_nonrel_judged_ret",
        "gm_map",
        "gm_bpref",
        "Rprec",
        "iprec_at_recall",
        "11pt_avg",
    ]
)
_CUTOFF = re.compile(r"^[0-9]+(\.[0-9]*)?$")
_NUMBER = re.compile(r"^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$")
_LEVEL = re.compile(r"^[+-]?[0-9]+$")


@dataclass(frozen=True)
class TrecMeasures:
    """The measures of a trec_eval command line, in trec_eval's printing order.

    ``cutoffs`` maps each measure name to its whole-number cutoffs (ascending) or None for
    a measure without any; ``params`` holds the parameters given to the other measures
    that take some (``Rprec_mult``, ``utility``, ``ndcg``...), as written after the dot;
    ``notes`` says which parameter lists were ignored, as trec_eval ignores them.
    """

    cutoffs: dict[str, tuple[int, ...] | None]
    notes: tuple[str, ...] = ()
    params: dict[str, str] = field(default_factory=dict)

    def metrics(self) -> list[tuple[str, Metric]]:
        """(printed name, abrank metric) of every measure that an abrank metric family
        computes as trec_eval does, in printing order."""
        from abrank.metrics import Metric

        out = []
        for name, cutoffs in self.cutoffs.items():
            family = _MEASURES[name]
            if family is None or name in self.params:
                continue
            if cutoffs is None:
                out.append((name, Metric(family, None)))
            else:
                out += [(f"{name}_{k}", Metric(family, k)) for k in cutoffs]
        return out

    def family(self, name: str) -> str | None:
        """The abrank metric family that computes measure ``name`` as trec_eval does; None
        when trec_eval's own computation is needed (no such family, or parameters given)."""
        family = _MEASURES[name]
        return None if family is None or name in self.params else family

    def computed_without_pandas(self) -> bool:
        """Whether every measure is an abrank metric family's or one of :data:`_PLAIN`
        (the others' computations group rows with pandas, or are not checked for it)."""
        return all(name in _PLAIN or self.family(name) is not None for name in self.cutoffs)

    def printed(self, name: str) -> str:
        """The name trec_eval prints for a one-value measure: with its parameters as given
        (``utility_2,-1,0,0``, ``ndcg_1=3,2=9``), or bare with the defaults."""
        return f"{name}_{self.params[name]}" if name in self.params else name

    def fractions(self, name: str) -> tuple[float, ...]:
        """The fractional cutoffs of iprec_at_recall or Rprec_mult, ascending."""
        if name not in self.params:
            return DOUBLE_CUTOFFS[name]
        return tuple(sorted(float(p) for p in self.params[name].split(",")))

    def numbers(self, name: str) -> tuple[float, ...]:
        """The numbers given to utility, 11pt_avg, set_F or relstring, in order."""
        if name not in self.params:
            return DOUBLE_PARAMS[name]
        return tuple(float(p) for p in self.params[name].split(","))

    def pairs(self, name: str) -> tuple[dict[int, float], dict[str, float]]:
        """The ``name=value`` parameters of a gain measure: the gains of the levels named
        by whole numbers, and the others (rbp's ``p``)."""
        levels: dict[int, float] = {}
        others: dict[str, float] = {}
        for item in self.params.get(name, "").split(",") if name in self.params else ():
            key, _, value = item.partition("=")
            if _LEVEL.match(key):
                levels.setdefault(int(key), float(value))
            else:
                others[key] = float(value)
        return levels, others


def split_metric_lists(tokens: Sequence[str]) -> list[str]:
    """Metric tokens with comma lists split: ``ndcg@10,mrr@10`` is two names, while a
    trec_eval measure's parameter list stays whole (``P.5,10`` is P at 5 and 10)."""
    out: list[str] = []
    for token in tokens:
        head = token.partition(".")[0]
        if "." in token and (head in _MEASURES or head in _OTHERS):
            out.append(token)
            continue
        depth, start = 0, 0
        for i, char in enumerate(token):
            depth += (char == "(") - (char == ")")
            if char == "," and depth == 0:
                out.append(token[start:i])
                start = i + 1
        out.append(token[start:])
    return [t.strip() for t in out if t.strip()]


def expand_cutoff_lists(tokens: Sequence[str]) -> list[str]:
    """trec_eval-style cutoff lists as one name per cutoff (``P.5,10`` -> ``P.5``, ``P.10``),
    for abrank's parser, which reads one cutoff per name."""
    out = []
    for token in tokens:
        head, dot, params = token.partition(".")
        if dot and head in DEFAULT_CUTOFFS and "," in params:
            out += [f"{head}.{p}" for p in params.split(",")]
        else:
            out.append(token)
    return out


def parse_trec_measures(tokens: Sequence[str]) -> TrecMeasures | None:
    """trec_eval's measures named by ``tokens``, or None when some token is not one of them
    (then the names are abrank's own, and abrank's layout applies).

    Names are case-sensitive, as in trec_eval. Raises ConfigError for trec_eval measures
    abrank does not compute and for malformed cutoff lists.
    """
    if not tokens:
        return None
    tokens, notes = _expand_sets(tokens)
    heads = [t.partition(".")[0] for t in tokens]
    if not all(h in _MEASURES or h in _OTHERS for h in heads):
        return None
    unsupported = [t for t, h in zip(tokens, heads, strict=True) if h in _OTHERS]
    if unsupported:
        known = ", ".join(_MEASURES)
        head = unsupported[0].partition(".")[0]
        raise ConfigError(
            f"-m {unsupported[0]}: expected a trec_eval measure that abrank computes "
            f"({known}), got {head!r}, which it does not"
        )
    explicit: dict[str, tuple[str, tuple[int, ...]]] = {}
    given: dict[str, tuple[str, str]] = {}
    named: set[str] = set()
    for token, head in zip(tokens, heads, strict=True):
        named.add(head)
        if "." not in token:
            continue
        params = token.partition(".")[2]
        if head in DEFAULT_CUTOFFS:
            value: tuple[int, ...] | str = _cutoffs(token, params)
        elif head in DOUBLE_CUTOFFS or head in DOUBLE_PARAMS or head in PAIR_PARAMS:
            value = _parameters(token, head, params)
        else:
            raise ConfigError(f"-m {token}: expected {head} without parameters, got {params!r}")
        first = explicit.get(head) or given.get(head)
        if first is not None:
            if first[1] != value:
                what = "cutoffs" if head in DEFAULT_CUTOFFS else "parameters"
                notes.append(
                    f"-m {token} ignored: trec_eval keeps the first {what} given for "
                    f"{head} (-m {first[0]})"
                )
            continue
        if isinstance(value, tuple):
            explicit[head] = (token, value)
        else:
            given[head] = (token, value)
    cutoffs_of: dict[str, tuple[int, ...] | None] = {}
    for name in _MEASURES:
        if name in named:
            if name in DEFAULT_CUTOFFS:
                cutoffs_of[name] = explicit[name][1] if name in explicit else DEFAULT_CUTOFFS[name]
            else:
                cutoffs_of[name] = None
    return TrecMeasures(
        cutoffs_of, tuple(notes), {name: params for name, (_, params) in given.items()}
    )


def _parameters(token: str, head: str, params: str) -> str:
    """The parameters of a measure that takes numbers or name=value pairs, checked as
    trec_eval needs them (``meas_init.c``), and returned as written."""
    pieces = params.split(",")
    if head in PAIR_PARAMS:
        for piece in pieces:
            key, sep, value = piece.partition("=")
            if not sep or not key or not _NUMBER.match(value):
                raise ConfigError(
                    f"-m {token}: parameters: expected name=number pairs separated by commas "
                    f"(level=gain, as in {head}.1=3,2=9; rbp's p=0.8), got {piece!r}"
                )
            if _LEVEL.match(key) and int(key) < 0:
                raise ConfigError(
                    f"-m {token}: parameters: expected gains of grades 0 and above, got {piece!r}"
                )
        return params
    bad = [p for p in pieces if not _NUMBER.match(p)]
    if bad:
        raise ConfigError(
            f"-m {token}: parameters: expected numbers separated by commas, got {bad[0]!r}"
        )
    numbers = [float(p) for p in pieces]
    if head in DOUBLE_CUTOFFS:
        ordered = sorted(numbers)
        repeated = sorted({v for v, w in zip(ordered, ordered[1:]) if v == w})
        if repeated:
            raise ConfigError(f"-m {token}: cutoffs: expected each cutoff once, got {repeated[0]}")
    if head == "utility" and len(numbers) != 4:
        raise ConfigError(
            f"-m {token}: parameters: expected 4 weights (relevant retrieved, nonrelevant "
            f"retrieved, relevant missed, nonrelevant missed), got {len(numbers)}"
        )
    if head in ("set_F", "relstring") and len(numbers) != 1:
        raise ConfigError(f"-m {token}: parameters: expected one number, got {len(numbers)}")
    return params


def _expand_sets(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    """Tokens with trec_eval's set names (``official``, ``all_trec``) replaced by their
    measures; of all_trec only those abrank computes, with a note naming the others."""
    out: list[str] = []
    notes: list[str] = []
    for token in tokens:
        members = SETS.get(token)
        if members is None:
            out.append(token)
            continue
        out += [m for m in members if m in _MEASURES]
        left_out = [m for m in members if m not in _MEASURES]
        if left_out:
            notes.append(
                f"-m {token}: left out the trec_eval measures that abrank does not compute: "
                f"{', '.join(left_out)}"
            )
    return out, notes


def _cutoffs(token: str, params: str) -> tuple[int, ...]:
    from abrank.metrics.registry import MAX_CUTOFF

    pieces = params.split(",")
    bad = [
        p for p in pieces if not _CUTOFF.match(p) or not 1 <= int(p.partition(".")[0]) <= MAX_CUTOFF
    ]
    if bad:
        raise ConfigError(
            f"-m {token}: cutoffs: expected whole numbers from 1 to {MAX_CUTOFF} separated by "
            f"commas, got {bad[0]!r}"
        )
    values = sorted(int(p.partition(".")[0]) for p in pieces)  # as C's atol: 23.4 -> 23
    repeated = sorted({v for v, w in zip(values, values[1:]) if v == w})
    if repeated:
        raise ConfigError(
            f"-m {token}: cutoffs: expected each cutoff once, got {repeated[0]} twice"
        )
    return tuple(values)


def format_report(
    prep: Prepared,
    measures: TrecMeasures,
    *,
    rel_level: float = 1,
    complete: bool = False,
    per_query: bool = False,
    runid: str | None = None,
    digits: int = 4,
) -> str:
    """trec_eval's output for joined rankings and judgments (see the module docstring).

    ``prep`` comes from the metrics engine's join; ``runid`` is printed for the ``runid``
    measure (the run file's last tag). A run joined in pieces prints the same through
    :mod:`abrank.treceval.report`.
    """
    from abrank.treceval.report import report_columns, report_text

    part = report_columns(prep, measures, rel_level=rel_level, complete=complete, runid=runid)
    return report_text([part], per_query=per_query, complete=complete, digits=digits)
