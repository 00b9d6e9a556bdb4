"""A config given as a mapping (what the YAML holds) made into an :class:`Experiment`.

The models validate each key's value; the keys they refuse (unknown keys, values of the
wrong type) are set aside and the rest is validated again, so that the checks across keys
(:mod:`abrank.config.checks`) still run and report their own problems. Every problem is
reported at once, one a line, sorted by the config's line.
"""

from __future__ import annotations

import copy
import difflib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from abrank.config.checks import check_semantics
from abrank.config.decision import split_metric_entries
from abrank.config.experiment import SOURCE_FIELDS, Experiment
from abrank.config.offline import JUDGMENT_FORMS
from abrank.config.problems import Problem, follows_from, line_of, problem_at
from abrank.errors import ConfigError

#: How many times :func:`validated` sets refused keys aside and validates again.
PASSES = 4


def build_experiment(
    data: dict[str, Any],
    *,
    source: str = "<config>",
    base_dir: Path | None = None,
    text: str = "",
    lines: dict[tuple, int] | None = None,
    problems: list[str] | None = None,
) -> Experiment:
    """Validate a config given as a mapping (what the YAML holds), e.g. built by the CLI.

    Every problem is reported at once, one a line, sorted by the config's line: the keys
    that the models refuse (unknown keys, values of the wrong type) are set aside and the
    rest is validated again, so that the cross-field checks (metric names, arm names, file
    paths, ...) still run and report their own problems; a problem that follows only from a
    key set aside is not reported twice. ``problems`` are found beforehand (by the YAML
    reader: repeated keys) and reported with the others.
    """
    base_dir = base_dir or Path.cwd()
    lines = lines or {}
    errors: list[str] = list(problems or [])
    data = dict(data)
    aside: list[tuple] = []  # the field paths set aside
    for key in sorted(SOURCE_FIELDS & set(data)):
        errors.append(problem_at(source, lines, (key,), "unknown key (reserved)"))
        del data[key]
        aside.append((key,))
    data, entries = split_metric_entries(data)
    experiment, more, pruned = validated(data, source, text, lines)
    errors.extend(more)
    aside.extend(pruned)
    if experiment is not None:
        experiment, found = check_semantics(experiment, source, lines, base_dir, entries)
        errors.extend(p for p in found if not follows_from(p, aside))
    if errors:
        errors = sorted(errors, key=line_of)
        head = f"{source}: {len(errors)} problems in the config:" if len(errors) > 1 else ""
        raise ConfigError("\n".join([head, *errors]) if head else errors[0])
    assert experiment is not None
    return experiment


def validated(
    data: dict[str, Any], source: str, text: str, lines: dict
) -> tuple[Experiment | None, list[Problem], list[tuple]]:
    """The experiment the models make of ``data``, with the keys they refuse set aside; the
    problems of those keys, and their field paths. None when what is left cannot make an
    experiment (a required key was refused): the problems found are still returned."""
    data = copy.deepcopy(data)
    problems: list[Problem] = []
    aside: list[tuple] = []
    for _ in range(PASSES):
        try:
            experiment = Experiment.model_validate({**data, "source": source, "text": text})
        except ValidationError as exc:
            found = pydantic_problems(exc, source, lines)
            new = [
                p
                for p in found
                if p not in problems and not (p.kind == "missing" and follows_from(p, aside))
            ]
            if not new:  # only what setting keys aside made missing: nothing more to learn
                return None, problems, aside
            problems.extend(new)
            removed = [set_aside(data, p.raw_loc) for p in new]
            if None in removed:
                return None, problems, aside
            aside.extend(r for r in removed if r is not None)
            continue
        return experiment, problems, aside
    return None, problems, aside


def set_aside(data: dict[str, Any], loc: tuple) -> tuple | None:
    """Delete from ``data`` the deepest mapping key along ``loc`` (a refused value; a list
    item is not deleted alone, which would renumber the items after it: its whole list is);
    its field path, or None when there is none (a refusal of the whole config)."""
    container: Any = data
    parent: dict | None = None
    key: Any = None
    path: tuple = ()
    deepest: tuple[dict, Any, tuple] | None = None
    for part in loc:
        if isinstance(container, dict) and not isinstance(part, int) and part in container:
            parent, key = container, part
            path = (*path, part)
            deepest = (parent, key, path)
            container = container[part]
        elif isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container):
            path = (*path, part)
            container = container[part]
        else:
            break  # a union's member name, or a key that is not there
    if deepest is None:
        return None
    parent, key, path = deepest
    parent.pop(key, None)
    return path


# --------------------------------------------------------------------------- the models' words


def pydantic_problems(exc: ValidationError, source: str, lines: dict) -> list[Problem]:
    """The models' refusals in the config's words: an unknown key with the keys it could
    have been, a required key missing, or what a value should be and what it is."""
    messages = []
    for error in exc.errors():
        loc = tuple(
            part
            for part in error["loc"]
            if not (
                isinstance(part, str) and (part.startswith("literal[") or part in JUDGMENT_FORMS)
            )
        )
        kind = error["type"]
        given = error.get("input")
        if kind == "extra_forbidden":
            key = str(loc[-1])
            known = known_keys(loc[:-1])
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            message = f"unknown key{hint} (known keys: {', '.join(known)})"
        elif kind == "missing":
            message = "expected this required key, got nothing"
        else:
            expected = error["msg"]
            for prefix in (
                "Input should be ",
                "Value should have ",
                "Value error, ",
                "String should ",
            ):
                if expected.startswith(prefix):
                    expected = expected[len(prefix) :]
                    break
            if kind == "string_pattern_mismatch":
                expected = "a name of letters, digits, '.', '_' or '-'"
            message = f"expected {expected}, got {short(given)}"
        messages.append(
            problem_at(source, lines, loc, message, raw_loc=tuple(error["loc"]), kind=kind)
        )
    return messages


def known_keys(loc: tuple) -> list[str]:
    """The keys allowed at a field path, found by walking the models along it."""
    model: Any = Experiment
    for part in loc:
        if isinstance(part, int):
            continue
        field = (
            model.model_fields.get(part)
            if isinstance(model, type) and issubclass(model, BaseModel)
            else None
        )
        if field is None:
            return []
        model = model_of(field.annotation)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return [name for name in model.model_fields if name not in SOURCE_FIELDS]
    return []


def model_of(annotation: Any) -> Any:
    """The model class an annotation names (inside an optional or a union), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = model_of(arg)
        if found is not None:
            return found
    return None


def short(value: Any) -> str:
    """A value as a message shows it: its repr, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
