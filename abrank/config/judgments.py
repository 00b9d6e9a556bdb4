"""The sources of ``judgments:``: human labels, and machine labels beside them.

``judgments:`` is one mapping (human labels, as before) or a list of sources, each with
its ``kind``: exactly one ``human`` source, and at most one ``machine`` source (a model's
labels, DESIGN.md "Machine-labelled judgments"). Prediction-powered inference needs the
human sample beside the machine labels, so a machine source alone is refused (a team that
trusts its machine labels outright gives them as the human source: nothing then corrects
them). ``analysis.judgments_estimate`` chooses which estimate the comparisons report, and
needs a machine source. A treatment declared to use a model of the labelling model's
family (:func:`model_family`) gets a warning: such judges favour their own kind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from abrank.config.offline import Judgments, JudgmentsConfig
from abrank.config.problems import Checks

__all__ = [
    "check_sources",
    "family_warnings",
    "human_source",
    "machine_source",
    "model_family",
    "source_key",
    "source_keys",
]

_ORGANISATION = re.compile(r"^.*/")
_LEADING_LETTERS = re.compile(r"^[a-z]+")


def model_family(name: str) -> str:
    """A model's family: its name in lower case without an organisation prefix (``openai/``),
    cut at the first character that is not a letter: ``gpt-4o`` and ``GPT-4o-mini`` are
    ``gpt``, ``Llama-3.1-8B`` and ``llama3`` are ``llama``, ``qwen2.5`` is ``qwen``. A name
    that starts with no letter is its own family (lower case)."""
    text = _ORGANISATION.sub("", name.strip().lower())
    found = _LEADING_LETTERS.match(text)
    return found.group(0) if found else text


def human_source(judgments: Judgments | None) -> JudgmentsConfig | None:
    """The human labels: the one mapping, or the list's source of kind human."""
    if judgments is None:
        return None
    if isinstance(judgments, JudgmentsConfig):
        return judgments
    return next((source for source in judgments if source.kind == "human"), None)


def machine_source(judgments: Judgments | None) -> JudgmentsConfig | None:
    """The machine labels: the list's source of kind machine (None without one)."""
    if not isinstance(judgments, list):
        return None
    return next((source for source in judgments if source.kind == "machine"), None)


def source_keys(judgments: Judgments | None) -> list[tuple[str, JudgmentsConfig]]:
    """(config key of the path, source) of every judgments source: ``judgments.path`` for
    the one mapping, ``judgments[i].path`` for a list's sources."""
    if judgments is None:
        return []
    if isinstance(judgments, JudgmentsConfig):
        return [("judgments.path", judgments)]
    return [(f"judgments[{index}].path", source) for index, source in enumerate(judgments)]


def source_key(judgments: Judgments | None, kind: str) -> tuple[str, JudgmentsConfig] | None:
    """(config key, source) of the source of ``kind`` (human or machine), or None."""
    return next(((key, s) for key, s in source_keys(judgments) if s.kind == kind), None)


def check_sources(
    checks: Checks,
    judgments: Judgments | None,
    *,
    judgments_estimate: str | None,
    machine_labels: bool,
) -> None:
    """The kinds of the judgments sources: one human source, at most one machine source,
    a machine source only where the design reads machine labels (``machine_labels``) and
    only in a list; ``analysis.judgments_estimate`` only with a machine source."""
    machine = None
    if isinstance(judgments, JudgmentsConfig):
        if judgments.kind == "machine":
            checks.add(
                ("judgments", "kind"),
                "expected human for a single judgments source (machine labels go in a list "
                "beside a human source: [{path: ..., kind: human}, {path: ..., kind: machine}]), "
                "got 'machine'",
            )
    elif isinstance(judgments, list):
        machine = _check_list(checks, judgments)
        if machine is not None and not machine_labels:
            checks.add(
                ("judgments", machine, "kind"),
                "expected human: this experiment's design reads no machine labels (offline "
                "rankings do), got 'machine'",
            )
    if judgments_estimate is not None and machine is None:
        checks.add(
            ("analysis", "judgments_estimate"),
            "expected a judgments source of kind machine beside the human one (the estimate "
            f"chooses between human and machine labels), got {judgments_estimate!r} without one",
        )


def _check_list(checks: Checks, sources: Sequence[JudgmentsConfig]) -> int | None:
    """The problems of a list of sources; the index of its machine source (None: none)."""
    humans = [index for index, source in enumerate(sources) if source.kind == "human"]
    machines = [index for index, source in enumerate(sources) if source.kind == "machine"]
    if not humans:
        checks.add(
            ("judgments",),
            "expected one source of kind human (prediction-powered inference corrects the "
            f"machine labels with a human sample), got {len(sources)} source(s) and no human one",
        )
    for index in humans[1:]:
        checks.add(
            ("judgments", index, "kind"),
            f"expected one source of kind human, got another at judgments[{index}] "
            f"(the first is judgments[{humans[0]}]; merge them into one file)",
        )
    for index in machines[1:]:
        checks.add(
            ("judgments", index, "kind"),
            f"expected at most one source of kind machine, got another at judgments[{index}] "
            f"(the first is judgments[{machines[0]}])",
        )
    for index, source in enumerate(sources):
        if source.kind == "human" and source.model is not None:
            checks.add(
                ("judgments", index, "model"),
                f"expected no model for a human source, got {source.model!r}",
            )
    return machines[0] if machines and humans else None


def family_warnings(judgments: Judgments | None, arms: Sequence[Any]) -> list[str]:
    """A warning per treatment whose ``uses_model`` shares the family of the machine
    labels' ``model`` (:func:`model_family`): a model judge tends to favour rankers built
    on models like itself, so that treatment's machine-labelled gains are suspect."""
    machine = machine_source(judgments)
    if machine is None or machine.model is None:
        return []
    family = model_family(machine.model)
    return [
        f"{arm.name}: uses {arm.uses_model!r}, of the family {family!r} of the model that "
        f"labelled the machine judgments ({machine.model!r}): such judges favour rankers of "
        "their own kind, so its machine-labelled gains may be inflated; read the human and "
        "prediction-powered estimates"
        for arm in arms
        if getattr(arm, "uses_model", None) and model_family(arm.uses_model) == family
    ]
