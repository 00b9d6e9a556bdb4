"""trec_eval's own dialect: its measure names and cutoffs, and its output, byte for byte.

``abrank metrics`` answers as trec_eval 9 does when every ``-m`` names one of trec_eval's
measures spelled as trec_eval spells them (``recip_rank``, ``ndcg_cut.10``, ``P.5,10``,
``map``, a bare family such as ``P`` for its default cutoffs...), so that a script can
switch from ``trec_eval`` to ``abrank metrics`` by renaming the command. The rules below
are trec_eval's (``trec_eval.c``, ``measures.c``, ``meas_init.c``, ``m_*.c`` of
usnistgov/trec_eval v9.0.8):

- measures print in trec_eval's table order, not in command-line order, each family's
  cutoffs ascending; per query (``-q``) all measures of a query, then the next query
  (byte order of query ids), then the ``all`` rows;
- a line is ``%-22s\\t%s\\t%6.4f`` (name padded to 22, tab, query, tab, value); counts
  (``num_ret``, ``num_rel``, ``num_rel_ret``, ``num_q``) print as integers and ``runid`` as
  the tag of the run file's last line; ``runid`` and ``num_q`` have ``all`` rows only;
- means divide by the number of queries evaluated, with ``-c`` by the number of judged
  queries (missing ones score 0); like trec_eval 9, ``-c`` adds no per-query rows for
  them; counts sum over queries, except that ``num_rel``'s ``all`` row under ``-c`` counts
  every judgment with a grade above 0 whatever ``-l`` says, as trec_eval does;
- a family named twice with different cutoffs keeps the first list given (trec_eval reads
  only that one); abrank says so on stderr rather than dropping it silently;
- no measure named means trec_eval's default set (:data:`OFFICIAL`, also ``-m official``);
  ``-m all_trec`` means every measure of trec_eval's all_trec set that abrank computes, and
  a note names the others. ``gm_map`` and ``gm_bpref`` have ``all`` rows only;
  ``iprec_at_recall`` and ``11pt_avg`` follow trec_eval 10 (``m_iprec_at_recall.c``: a
  recall level c needs round(c x R) relevant documents, where 9 took c x R + 0.9 rounded
  down), so that the output equals trec_eval 10's test outputs ``out.test`` and
  ``out.comment.test``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

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

# the measures abrank computes, in trec_eval's table order (measures.c), which is the
# order trec_eval prints them in; value: abrank's metric family (None: a count or the id)
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
    "recall": "recall",
    "gm_bpref": None,
    "11pt_avg": None,
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg",
    "map_cut": "ap",
    "success": "hit",
    "set_P": None,
    "set_recall": None,
    "num_nonrel_judged_ret": None,
}
_LONG_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# families with cutoffs and trec_eval's default cutoffs (m_P.c, m_recall.c, ...)
DEFAULT_CUTOFFS: dict[str, tuple[int, ...]] = {
    "P": _LONG_CUTOFFS,
    "recall": _LONG_CUTOFFS,
    "ndcg_cut": _LONG_CUTOFFS,
    "map_cut": _LONG_CUTOFFS,
    "success": (1, 5, 10),
}
# trec_eval's other measures and nicknames (not abrank's dcg): named in errors, not computed
_OTHER_NAMES = (
    "relstring infAP Rprec_mult utility "
    "binG G ndcg_rel Rndcg relative_P set_relative_P set_map "
    "set_F prefs_num_prefs_poss prefs_num_prefs_ful "
    "prefs_num_prefs_ful_ret prefs_simp prefs_pair prefs_avgjg prefs_avgjg_Rnonrel "
    "prefs_simp_ret prefs_pair_ret prefs_avgjg_ret prefs_avgjg_Rnonrel_ret prefs_simp_imp "
    "prefs_pair_imp prefs_avgjg_imp map_avgjg P_avgjg Rprec_mult_avgjg yaap rbp rbp_resid "
    "ideal_dcg set all_prefs prefs qrels_jg unj"
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
# trec_eval's all_trec set (trec_eval 10, -m all_trec), in its printing order
_ALL_TREC_NAMES = (
    "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall "
    "P recall infAP gm_bpref Rprec_mult utility 11pt_avg binG G ndcg ndcg_rel Rndcg ndcg_cut "
    "map_cut relative_P success set_P set_relative_P set_recall set_map set_F "
    "num_nonrel_judged_ret rbp unj"
)
#: trec_eval's measure sets and what they stand for.
SETS: dict[str, tuple[str, ...]] = {
    "official": OFFICIAL,
    "all_trec": tuple(_ALL_TREC_NAMES.split()),
}
_CUTOFF = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class TrecMeasures:
    """The measures of a trec_eval command line, in trec_eval's printing order.

    ``cutoffs`` maps each measure name to its cutoffs (ascending) or None for a measure
    without any; ``notes`` says which parameter lists were ignored, as trec_eval ignores
    them.
    """

    cutoffs: dict[str, tuple[int, ...] | None]
    notes: tuple[str, ...] = ()

    def metrics(self) -> list[tuple[str, Metric]]:
        """(printed name, abrank metric) of every value measure, in printing order."""
        from abrank.metrics import Metric

        out = []
        for name, cutoffs in self.cutoffs.items():
            family = _MEASURES[name]
            if family is None:
                continue
            if cutoffs is None:
                out.append((name, Metric(family, None)))
            else:
                out += [(f"{name}_{k}", Metric(family, k)) for k in cutoffs]
        return out


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
    named: set[str] = set()
    for token, head in zip(tokens, heads, strict=True):
        named.add(head)
        if "." not in token:
            continue
        params = token.partition(".")[2]
        if head not in DEFAULT_CUTOFFS:
            raise ConfigError(f"-m {token}: expected {head} without parameters, got {params!r}")
        cutoffs = _cutoffs(token, params)
        if head in explicit:
            first = explicit[head][0]
            if explicit[head][1] != cutoffs:
                notes.append(
                    f"-m {token} ignored: trec_eval keeps the first cutoffs given for "
                    f"{head} (-m {first})"
                )
            continue
        explicit[head] = (token, cutoffs)
    cutoffs_of: dict[str, tuple[int, ...] | None] = {}
    for name in _MEASURES:
        if name in named:
            if name in DEFAULT_CUTOFFS:
                cutoffs_of[name] = explicit[name][1] if name in explicit else DEFAULT_CUTOFFS[name]
            else:
                cutoffs_of[name] = None
    return TrecMeasures(cutoffs_of, tuple(notes))


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
    bad = [p for p in pieces if not _CUTOFF.match(p) or not 1 <= int(p) <= MAX_CUTOFF]
    if bad:
        raise ConfigError(
            f"-m {token}: cutoffs: expected whole numbers from 1 to {MAX_CUTOFF} separated by "
            f"commas, got {bad[0]!r}"
        )
    values = sorted(int(p) for p in pieces)
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
    measure (the run file's last tag).
    """
    from abrank.engines.memory import compute, scored_queries
    from abrank.metrics import Metric
    from abrank.treceval.default_set import (
        eleven_point_average,
        geometric_mean,
        interpolated_precision,
        r_precision,
    )

    nq = len(prep.ids)
    scored = scored_queries(prep, complete)
    evaluated = prep.in_run & prep.in_judgments  # the queries trec_eval prints
    threshold = float(rel_level)
    named = measures.metrics()
    values = compute(prep, [m for _, m in named], threshold, "linear") if named else {}
    counts = {
        "num_ret": prep.retrieved.astype(np.int64),
        "num_rel": np.bincount(prep.judged_code[prep.judged_grade >= threshold], minlength=nq),
        "num_rel_ret": np.bincount(prep.row_code[prep.row_grade >= threshold], minlength=nq),
        "num_nonrel_judged_ret": np.bincount(
            prep.row_code[(prep.row_grade >= 0) & (prep.row_grade < threshold)], minlength=nq
        ),
    }

    number = f"{{:6.{digits}f}}"
    value_of = {printed: values[metric.name] for printed, metric in named}
    # (name, per-query values or None, how a value prints, the all row's text)
    columns: list[tuple[str, list | None, str, str]] = []
    for name, cutoffs in measures.cutoffs.items():
        if name == "runid":
            columns.append(("runid", None, "", "" if runid is None else runid))
        elif name == "num_q":
            columns.append(("num_q", None, "", str(int(scored.sum()))))
        elif name in ("gm_map", "gm_bpref"):  # trec_eval prints them for all only
            family = {"gm_map": "map", "gm_bpref": "bpref"}[name]
            per = compute(prep, [Metric(family, None)], threshold, "linear")[family]
            total = number.format(geometric_mean(np.nan_to_num(per)[scored]))
            columns.append((name, None, "", total))
        elif name in ("Rprec", "iprec_at_recall", "11pt_avg", "set_P", "set_recall"):
            if name == "iprec_at_recall":
                levels = interpolated_precision(prep, threshold)
                derived = {f"{name}_{level:3.2f}": v for level, v in levels.items()}
            elif name == "11pt_avg":
                derived = {name: eleven_point_average(prep, threshold)}
            elif name == "Rprec":
                derived = {name: r_precision(prep, threshold)}
            else:
                found = counts["num_rel_ret"].astype(np.float64)
                base = counts["num_ret" if name == "set_P" else "num_rel"].astype(np.float64)
                with np.errstate(divide="ignore", invalid="ignore"):
                    derived = {name: np.where(base > 0, found / base, 0.0)}
            for printed, column in derived.items():
                shown = column[scored]
                mean = float(np.cumsum(shown)[-1]) / shown.size if shown.size else 0.0
                per = column[evaluated].tolist() if per_query else None
                columns.append((printed, per, number, number.format(mean)))
        elif name in counts:
            per = counts[name][evaluated]
            count = int(per.sum())
            if name == "num_rel" and complete:
                count = int(np.count_nonzero(prep.judged_grade > 0))
            columns.append((name, per.tolist() if per_query else None, "{}", str(count)))
        else:
            for printed in [name] if cutoffs is None else [f"{name}_{k}" for k in cutoffs]:
                column = np.nan_to_num(value_of[printed], nan=0.0)
                # trec_eval adds the queries' values one by one in query order, then divides
                shown = column[scored]
                mean = float(np.cumsum(shown)[-1]) / shown.size if shown.size else 0.0
                per = column[evaluated].tolist() if per_query else None
                columns.append((printed, per, number, number.format(mean)))
    text = ""
    if per_query:
        shown = [c for c in columns if c[1] is not None]
        if shown:
            # one format per query (all its lines), not one per value: quick at 100,000s
            template = "".join(
                f"{name:<22}\t{{0}}\t{style.replace('{', '{' + str(i + 1), 1)}\n"
                for i, (name, _, style, _) in enumerate(shown)
            )
            qids = prep.ids.filter(pa.array(evaluated)).to_pylist()
            text = "".join(map(template.format, qids, *(c[1] for c in shown)))
    return text + "".join(f"{name:<22}\tall\t{total}\n" for name, _, _, total in columns)
