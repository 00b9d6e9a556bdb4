"""Metric names: the one parser of spellings, and the canonical names.

A metric is a small frozen value (:class:`Metric`) whose canonical name (``"ndcg@10"``)
keys columns and dicts. Every spelling a user may type goes through :func:`parse_metric`:
abrank's own names, ir_measures' (``RR@10``, ``nDCG@10``, ``P@5``, ``R@100``, ``AP``,
``Success@3``, ``Judged@10``, with parameters such as ``nDCG(dcg=exp-log2)@10`` or
``RR(rel=2)``) and trec_eval's (``recip_rank``, ``ndcg_cut.10``, ``P_5``, ``recall.100``,
``map_cut.100``, ``success.10``).

A judged-only ("condensed") variant of any metric but ``judged`` is written with
``(judged)`` after the cutoff (``ndcg@10(judged)``, ``mrr(rel=2)@10(judged)``, ``map(judged)``)
or among the parameters (``ndcg(judged)@10``); its canonical name puts it last. Unjudged
documents are removed from each ranking before it is scored, so the documents below them
move up (trec_eval ``-J``; Sakai's condensed lists).

Conventions are trec_eval 9.x's: binary metrics count a document as relevant when its grade
is >= the threshold (trec_eval ``-l``, default 1); NDCG uses the raw grades (linear gain by
default, ``2**grade - 1`` with ``gain="exp"``), grades <= 0 give no gain, and its ideal
ordering comes from *all* judgments of the query; unjudged documents are not relevant;
P@k divides by k even when fewer documents were retrieved; only the first ``depth``
documents of a query count.

The diversity metrics ``alpha_ndcg@k`` and ``err_ia@k`` (ir_measures' ``alpha_nDCG@k``,
``ERR_IA@k``; ``alpha=`` sets the redundancy penalty, 0.5 by default) read subtopic
judgments as ndeval does (:mod:`abrank.engines.diversity`); every other metric reads one
grade per (query, doc) of subtopic judgments, the highest over its subtopics
(:mod:`abrank.io.subtopics`).
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from abrank.errors import ConfigError
from abrank.metrics.registry import (
    FAMILIES,
    MAX_CUTOFF,
    MAX_REL,
    RBP_PERSISTENCE,
    binary_families,
    click_families,
    diversity_families,
    graded_families,
    join_names,
    judged_families,
    known_names,
    persistence_families,
    spellings,
)

__all__ = [
    "DEFAULT_ALPHA",
    "GAINS",
    "JUDGED_ONLY",
    "Metric",
    "as_judged_only",
    "click_metrics",
    "judged_metrics",
    "parse_metric",
    "parse_metrics",
]

# every accepted spelling (lowercase, without cutoff or parameters) -> family
_SPELLINGS: dict[str, str] = spellings()

GAINS = ("linear", "exp")
#: The diversity families' redundancy penalty α when ``alpha=`` is not given (ndeval's).
DEFAULT_ALPHA = 0.5
_GAIN_ALIASES = {
    "linear": "linear",
    "log2": "linear",
    "exp": "exp",
    "exp-log2": "exp",
    "exponential": "exp",
}

# abrank / ir_measures style: family[(params)][@k]
_NAME = re.compile(r"^(?P<family>[a-z][a-z_]*)(?:\((?P<params>[^)]*)\))?(?:@(?P<k>[^@]*))?$")
# a parenthesised suffix after a cutoff, ndcg@10(judged), P_5(judged), or after the
# parameters of a name without one, mrr(rel=2)(judged)
_SUFFIX = re.compile(
    r"^(?P<head>.*(?:@[^@()]+|[._][0-9][^@._()]*)|[a-z][a-z_]*\([^()]*\))\((?P<suffix>[^()]*)\)$"
)
_CUTOFF_RANGE = f"a whole number from 1 to {MAX_CUTOFF}"
_REL_RANGE = f"a number from {-int(MAX_REL)} to {int(MAX_REL)}"
#: The suffix (and parameter) that makes a metric judged-only.
JUDGED_ONLY = "judged"
# trec_eval style: family.k or family_k (ndcg_cut.10, P_5, recall.100, map_cut_100)
_TREC_NAME = re.compile(r"^(?P<family>[a-z][a-z_]*?)[._](?P<k>[0-9][^@]*)$")


@dataclass(frozen=True)
class Metric:
    """One ranking metric: family, cutoff and optional per-metric parameters.

    ``rel`` overrides the relevance threshold of binary metrics (mrr, recall, precision,
    hit, map, ap, bpref, rprec, infap); ``gain`` ("linear" or "exp") overrides the gain of
    ndcg and dcg; ``p`` is the persistence of rbp and rbp_residual (a number strictly
    between 0 and 1; 0.8 when not given, and always part of their names: ``rbp(p=0.8)``);
    ``alpha`` (from 0 to 1) the redundancy penalty of the diversity families (alpha_ndcg,
    err_ia), None meaning :data:`DEFAULT_ALPHA` (a given 0.5 is stored as None, so the
    canonical name leaves the default out). The canonical :attr:`name` is what columns,
    summary keys and CLI output use. With ``judged_only`` the metric scores each ranking with its unjudged documents
    removed (name ``ndcg@10(judged)``); ``judged``, which counts unjudged documents, has no
    such variant.
    """

    family: str
    k: int | None
    rel: float | None = None
    gain: str | None = None
    judged_only: bool = False
    p: float | None = None
    alpha: float | None = None

    def __post_init__(self) -> None:
        family = str(self.family).lower()
        if family not in FAMILIES:
            # the judged families, as always; the click ones are listed where click
            # metrics are expected (click_metrics) and by the parser's known_names()
            raise ConfigError(
                f"metric: family: expected one of {', '.join(judged_families())}, "
                f"got {self.family!r}"
            )
        spec = FAMILIES[family]
        # a family and its twin are one measure with and without a cutoff (map, ap@k)
        if spec.twin is not None and (
            (spec.cutoff == "required" and self.k is None)
            or (spec.cutoff == "none" and self.k is not None)
        ):
            family, spec = spec.twin, FAMILIES[spec.twin]
        object.__setattr__(self, "family", family)
        if spec.cutoff == "none" and self.k is not None:
            raise ConfigError(
                f"metric {family}: cutoff: expected {family} without a cutoff, got {self.k!r}"
            )
        if self.k is not None:
            if (
                isinstance(self.k, bool)
                or not isinstance(self.k, (int, np.integer))
                or not 1 <= self.k <= MAX_CUTOFF
            ):
                raise ConfigError(
                    f"metric {family}: cutoff: expected {_CUTOFF_RANGE}, got {self.k!r}"
                )
            object.__setattr__(self, "k", int(self.k))
        elif spec.cutoff == "required":
            raise ConfigError(
                f"metric {family}: cutoff: expected {family}@k (e.g. {family}@10), got no cutoff"
            )
        if self.k is not None and spec.cutoff == "none":
            raise ConfigError(
                f"metric {family}: cutoff: expected no cutoff ({family} takes none), got @{self.k}"
            )
        if self.rel is not None:
            _takes(family, "rel", "relevance threshold", spec.binary, binary_families())
            rel = _within(family, "rel", self.rel, -MAX_REL, MAX_REL, _REL_RANGE)
            object.__setattr__(self, "rel", rel)
        if self.gain is not None:
            if not spec.graded:
                raise ConfigError(
                    f"metric {family}: gain: expected no gain (it applies to "
                    f"{join_names(graded_families())}), got one"
                )
            gain = _GAIN_ALIASES.get(str(self.gain).lower().strip("'\""))
            if gain is None:
                raise ConfigError(
                    f"metric {family}: gain: expected linear or exp, got {self.gain!r}"
                )
            object.__setattr__(self, "gain", gain)
        self._check_persistence(family, spec.persistence)
        if self.alpha is not None:
            _takes(family, "alpha", "alpha", spec.diversity, diversity_families())
            alpha = _within(family, "alpha", self.alpha, 0.0, 1.0, "a number from 0 to 1")
            object.__setattr__(self, "alpha", None if alpha == DEFAULT_ALPHA else alpha)
        if not isinstance(self.judged_only, (bool, np.bool_)):
            raise ConfigError(
                f"metric {family}: judged_only: expected True or False, got {self.judged_only!r}"
            )
        object.__setattr__(self, "judged_only", bool(self.judged_only))
        if self.judged_only and spec.relevance == "judged":
            raise ConfigError(
                f"metric {family}: (judged): expected a metric that reads grades, got "
                f"{family}, which counts the unjudged documents a judged-only variant removes"
            )

    def _check_persistence(self, family: str, takes_it: bool) -> None:
        if self.p is not None:
            _takes(family, "p", "persistence", takes_it, persistence_families())
        if takes_it:
            value = RBP_PERSISTENCE if self.p is None else self.p
            p = _within(family, "p", value, 0.0, 1.0, "a number strictly between 0 and 1")
            if p in (0.0, 1.0):
                raise ConfigError(
                    f"metric {family}: p: expected a number strictly between 0 and 1, "
                    f"got {self.p!r}"
                )
            object.__setattr__(self, "p", p)

    @property
    def redundancy(self) -> float:
        """α of a diversity family (:data:`DEFAULT_ALPHA` when not given)."""
        return DEFAULT_ALPHA if self.alpha is None else float(self.alpha)

    @property
    def lower_is_better(self) -> bool:
        """A decrease of the metric is the improvement (abandonment)."""
        return FAMILIES[self.family].lower_is_better

    @property
    def is_click(self) -> bool:
        """A click metric: scored per impression from an impression log, not from judgments."""
        return FAMILIES[self.family].click

    @property
    def name(self) -> str:
        """Canonical lowercase name: ``mrr@10``, ``ndcg(gain=exp)@10``, ``map``."""
        return self._render(self.family)

    @property
    def label(self) -> str:
        """Display name: ``MRR@10``, ``NDCG@10``, ``P@5``, ``Recall@100``, ``MAP``."""
        return self._render(FAMILIES[self.family].label)

    def _render(self, head: str) -> str:
        params = []
        if self.p is not None:
            params.append(f"p={_number(self.p)}")
        if self.gain is not None:
            params.append(f"gain={self.gain}")
        if self.rel is not None:
            params.append(f"rel={_number(self.rel)}")
        if self.alpha is not None:
            params.append(f"alpha={_number(self.alpha)}")
        text = head + (f"({','.join(params)})" if params else "")
        text += f"@{self.k}" if self.k is not None else ""
        return text + (f"({JUDGED_ONLY})" if self.judged_only else "")

    def __str__(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: name, label, family, k, rel, gain, and for a judged-only
        metric ``judged_only: True``, for rbp its persistence ``p``, for a diversity metric
        with another α than 0.5 its ``alpha`` (each left out otherwise, so plain descriptions
        keep their keys)."""
        out: dict[str, Any] = {
            "name": self.name,
            "label": self.label,
            "family": self.family,
            "k": self.k,
            "rel": self.rel,
            "gain": self.gain,
        }
        if self.judged_only:
            out["judged_only"] = True
        if self.p is not None:
            out["p"] = self.p
        if self.alpha is not None:
            out["alpha"] = self.alpha
        return out


def _takes(family: str, key: str, what: str, takes_it: bool, families: list[str]) -> None:
    """ConfigError when ``family`` takes no ``key=`` parameter, naming those that do."""
    if not takes_it:
        raise ConfigError(
            f"metric {family}: {key}: expected no {what} (it applies to "
            f"{join_names(families)}), got one"
        )


def _within(family: str, key: str, value: object, low: float, high: float, what: str) -> float:
    """A parameter's number, refused (naming ``what`` was expected) outside [low, high], as
    NaN, or as True/False."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not low <= number <= high:  # also refuses nan
        raise ConfigError(f"metric {family}: {key}: expected {what}, got {value!r}")
    return number


def _number(value: float) -> str:
    """The shortest text that reads back as ``value``: ``2``, ``1.5``, ``0.30000000000000004``
    (``:g`` would round to 6 digits, and two thresholds would share one name)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _suggest(text: str) -> str:
    """A close known spelling for a misspelt metric name, keeping its cutoff."""
    lowered = text.strip().lower()
    match = re.match(r"^([a-z_]+)(.*)$", lowered)
    head, rest = (match.group(1), match.group(2)) if match else (lowered, "")
    close = difflib.get_close_matches(head, list(_SPELLINGS), n=1, cutoff=0.5)
    if not close:
        return ""
    suggestion = _SPELLINGS[close[0]] + rest
    return "" if suggestion == lowered else f"; did you mean {suggestion!r}?"


def parse_metric(text: str | Metric) -> Metric:
    """Parse a metric name (any accepted spelling, case-insensitive) into a :class:`Metric`.

    Raises ConfigError naming the known metrics and the closest one for an unknown name.
    """
    if isinstance(text, Metric):
        return text
    if not isinstance(text, str):
        raise ConfigError(f"metric: expected a metric name such as 'ndcg@10', got {text!r}")
    lowered = text.strip().lower()
    judged_only = False
    suffixed = _SUFFIX.match(lowered)
    head = suffixed.group("head") if suffixed is not None else ""
    if suffixed is not None and ("(" not in head.rpartition("@")[2] or "@" not in head):
        suffix = suffixed.group("suffix").strip()
        if suffix != JUDGED_ONLY:
            raise ConfigError(
                f"metric {text!r}: suffix: expected ({JUDGED_ONLY}) after the cutoff "
                f"(e.g. ndcg@10({JUDGED_ONLY})), got ({suffix})"
            )
        judged_only, lowered = True, suffixed.group("head")
    match = _NAME.match(lowered)
    if match is None or match.group("family") not in _SPELLINGS:
        match = _TREC_NAME.match(lowered) or match
    family = _SPELLINGS.get(match.group("family")) if match else None
    if match is None or family is None:
        raise ConfigError(
            f"metric: expected a known metric name ({known_names()}), got {text!r}{_suggest(text)}"
        )
    k: int | None = None
    if match.group("k") is not None:
        raw = match.group("k").strip()
        try:
            cutoff = float(raw)
        except ValueError:
            cutoff = math.nan
        if not (1 <= cutoff <= MAX_CUTOFF and cutoff == int(cutoff)):  # also refuses nan
            raise ConfigError(f"metric {text!r}: cutoff: expected {_CUTOFF_RANGE}, got {raw!r}")
        k = int(cutoff)
    rel: float | None = None
    gain: str | None = None
    p: float | None = None
    alpha: float | None = None
    params = match.groupdict().get("params")
    if params is not None and params.strip():
        for item in params.split(","):
            key, sep, value = item.partition("=")
            key, value = key.strip(), value.strip().strip("'\"")
            if key == JUDGED_ONLY and not sep:
                judged_only = True
                continue
            if not sep or not value:
                raise ConfigError(
                    f"metric {text!r}: parameters: expected name=value, got {item.strip()!r}"
                )
            if key == "rel":
                rel = _param_number(text, key, value, "a number")
            elif key in ("gain", "dcg"):
                gain = value
            elif key == "p":
                p = _param_number(text, key, value, "a number")
            elif key == "alpha":
                alpha = _param_number(text, key, value, "a number from 0 to 1")
            else:
                raise ConfigError(
                    f"metric {text!r}: parameters: expected rel=<number>, gain=linear|exp, "
                    f"p=<persistence> or alpha=<number from 0 to 1>, got {key!r}"
                )
    try:
        return Metric(
            family, k, rel=rel, gain=gain, judged_only=judged_only, p=p, alpha=alpha
        )
    except ConfigError as exc:
        message = str(exc)
        if message.startswith("metric "):
            message = message.split(": ", 1)[1]
        raise ConfigError(f"metric {text!r}: {message}") from None


def _param_number(text: str, key: str, value: str, what: str) -> float:
    """The number a ``key=value`` parameter of metric ``text`` gives (ConfigError naming
    ``what`` was expected when it is none); its range is the Metric's to check."""
    try:
        return float(value)
    except ValueError:
        raise ConfigError(f"metric {text!r}: {key}: expected {what}, got {value!r}") from None


def as_judged_only(metrics: Iterable[Metric]) -> list[Metric]:
    """Every metric of relevance as its judged-only variant (``ndcg@10`` ->
    ``ndcg@10(judged)``); judged@k, the coverage diagnostic, stays as it is."""
    return [
        m if FAMILIES[m.family].relevance == "judged" else replace(m, judged_only=True)
        for m in metrics
    ]


def parse_metrics(texts: Iterable[str | Metric] | str | Metric) -> list[Metric]:
    """Parse several metric names at once, reporting every bad one in a single ConfigError.

    Duplicates (same canonical name) are dropped; the order of first appearance is kept.
    """
    if isinstance(texts, (str, Metric)):
        texts = [texts]
    parsed: list[Metric] = []
    errors: list[str] = []
    seen: set[str] = set()
    for text in texts:
        try:
            metric = parse_metric(text)
        except ConfigError as exc:
            errors.append(str(exc))
            continue
        if metric.name not in seen:
            seen.add(metric.name)
            parsed.append(metric)
    if errors:
        raise ConfigError("\n".join(errors))
    if not parsed:
        raise ConfigError("metrics: expected at least one metric name, got none")
    return parsed


def judged_metrics(texts: Iterable[str | Metric] | str | Metric) -> list[Metric]:
    """:func:`parse_metrics` for metrics scored from rankings and judgments: a click metric
    is a ConfigError naming it (it is scored from an impression log instead)."""
    metrics = parse_metrics(texts)
    wrong = [m.name for m in metrics if m.is_click]
    if wrong:
        raise ConfigError(
            f"metric {join_names(wrong)}: expected a judged metric (scored from rankings and "
            "judgments), got a click metric (scored from an impression log by "
            "abrank.engines.clicks.score_impressions)"
        )
    return metrics


def click_metrics(texts: Iterable[str | Metric] | str | Metric) -> list[Metric]:
    """:func:`parse_metrics` for metrics scored from an impression log: a judged metric is a
    ConfigError naming it (it needs rankings and judgments instead)."""
    metrics = parse_metrics(texts)
    wrong = [m.name for m in metrics if not m.is_click]
    if wrong:
        raise ConfigError(
            f"metric {join_names(wrong)}: expected a click metric "
            f"({', '.join(click_families())}), got a judged metric (scored from rankings and "
            "judgments; abrank.engines.clicks.judged_inputs makes those of an impression log)"
        )
    return metrics
