"""The arms of an experiment: the control and the treatments, each a ranker's log.

An arm's log is its own file (``path``), or the experiment's one ``log:`` holds every arm
(its arm column names the arm of each row); an interleaving test's arms read the one
interleaved log, and their ``path``, when given, are the rankings the lists were
interleaved from. Every arm gets a name (``control``, ``treatment``, ``treatment-2``, ...
unless one is given), unique in the experiment, and a label for the readout.
"""

from __future__ import annotations

from typing import Any, Literal

from abrank.config.keys import INPUT_FORMATS, Columns, DecimalMark, Separator, Slug, Strict
from abrank.config.offline import Duplicates
from abrank.config.paths import resolved
from abrank.config.problems import Checks


class ArmConfig(Strict):
    """One ranker's log: where it is, how to read it, how to call it in the readout."""

    #: given, or filled in by :func:`with_arm_names` before validation: never missing
    name: Slug
    label: str
    path: str | None = None  # required unless the experiment has one `log:` for every arm
    format: Literal[INPUT_FORMATS] | None = None  # type: ignore[valid-type]
    sep: Separator | None = None  # CSV/TSV field separator, e.g. ";"
    decimal: DecimalMark | None = None  # CSV/TSV decimal mark: "." or ","
    columns: Columns = Columns()
    duplicates: Duplicates | None = None
    #: the model the ranker is built on (e.g. ``gpt-4o``): a warning when machine labels
    #: come from a model of its family (abrank.config.judgments.model_family)
    uses_model: str | None = None


def arm_loc(index: int) -> tuple:
    """The field path of the arm at ``index`` (control first, then the treatments)."""
    return ("control",) if index == 0 else ("treatments", index - 1)


def default_arm_name(index: int, n_treatments: int) -> str:
    """The name of an arm that was given none: ``control``, ``treatment`` when there is one
    treatment, else ``treatment-1``, ``treatment-2``, ..."""
    if index == 0:
        return "control"
    return "treatment" if n_treatments == 1 else f"treatment-{index}"


def with_arm_names(data: Any) -> Any:
    """A config mapping whose arms are all named and labelled: an arm given no name (or
    null) gets its default name (:func:`default_arm_name`), one given no label (or null, or
    "") its name. Run on the config before it is validated, so that a validated arm always
    has both; a value given (even a wrong one) is left for validation to judge, and a
    config whose arms are not mappings is returned as it is."""
    if not isinstance(data, dict):
        return data
    treatments = data.get("treatments")
    n_treatments = len(treatments) if isinstance(treatments, list) else 0
    named = dict(data)
    if isinstance(data.get("control"), dict):
        named["control"] = _named_arm(data["control"], default_arm_name(0, n_treatments))
    if isinstance(treatments, list):
        named["treatments"] = [
            _named_arm(arm, default_arm_name(index, n_treatments)) if isinstance(arm, dict) else arm
            for index, arm in enumerate(treatments, start=1)
        ]
    return named


def _named_arm(arm: dict[str, Any], default: str) -> dict[str, Any]:
    """One arm's mapping with its name and label filled in where missing."""
    name = arm.get("name")
    if name is None:
        name = default
    label = arm.get("label")
    if label is None or label == "":
        # a name that is not text is refused on its own; its default stands in meanwhile
        label = name if isinstance(name, str) else default
    return {**arm, "name": name, "label": label}


def named_arms(
    checks: Checks, arms: list[ArmConfig], *, one_log: bool, optional_paths: bool
) -> list[ArmConfig]:
    """The arms (control first) with their absolute paths; a repeated name, and a path
    where the experiment's one log (``one_log``) holds every arm or none where it does not,
    are problems (unless the arms' paths are ``optional_paths``, as an interleaving test's,
    whose arms' files are not logs)."""
    named: list[ArmConfig] = []
    seen: dict[str, tuple] = {}
    for index, arm in enumerate(arms):
        loc = arm_loc(index)
        name = arm.name
        if name in seen:
            checks.add((*loc, "name"), f"expected a unique arm name, got {name!r} again")
        seen[name] = loc
        path = arm.path
        if path is not None and one_log and not optional_paths:
            checks.add(
                (*loc, "path"),
                "expected no path: the experiment's `log` holds every arm (its arm column "
                f"names the arm), got {path!r}",
            )
        elif path is None and not one_log and not optional_paths:
            checks.add(
                loc,
                "path: expected the arm's log file (or one `log:` for every arm), got nothing",
                about=(*loc, "path"),
            )
        elif path is not None:
            path = resolved(checks, (*loc, "path"), path)
        named.append(arm.model_copy(update={"path": path}))
    return named
