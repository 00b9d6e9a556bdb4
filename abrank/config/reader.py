"""Reading a config file: YAML text in, with the line of every field, to a validated
:class:`Experiment` (:mod:`abrank.config.build`).

The text is read with ``yaml.safe_load`` semantics, after a pass over the parser's events
that refuses what PyYAML would build only by deep recursion or endless expansion (deep
nesting, recursive aliases, alias bombs), and with a problem for every key written twice
in one mapping (YAML would keep the last one without a word).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from abrank.config.build import build_experiment
from abrank.config.experiment import Experiment
from abrank.config.problems import problem_at
from abrank.errors import ConfigError

#: Deepest YAML nesting a config may use (real configs use four or five levels).
MAX_DEPTH = 50
#: Most values (scalars and collections) a config may hold with its aliases expanded.
MAX_VALUES = 100_000


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment config; raise :class:`ConfigError` listing every problem."""
    from abrank.io.files import path_problem

    path = Path(path)
    label = str(path)
    problem = path_problem(path)  # a FIFO would block the read forever
    if problem is not None and problem not in ("no such file", "a folder"):
        raise ConfigError(f"{label}: expected an experiment config file, got {problem}")
    try:
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"{label}: expected an experiment config file, got no such file"
        ) from None
    except IsADirectoryError:
        raise ConfigError(f"{label}: expected an experiment config file, got a folder") from None
    except OSError as exc:  # permission denied, an I/O error: the user's to fix
        reason = (exc.strerror or str(exc) or type(exc).__name__).lower()
        raise ConfigError(f"{label}: expected a readable config file, got {reason}") from None
    try:
        text = raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{label}: byte {exc.start}: expected UTF-8 YAML text, got a binary or non-UTF-8 file"
        ) from None
    return parse_experiment(text, source=label, base_dir=path.resolve().parent)


def parse_experiment(
    text: str, *, source: str = "<config>", base_dir: Path | None = None
) -> Experiment:
    """Validate a config given as YAML text (the file-free core of :func:`load_experiment`)."""
    base_dir = base_dir or Path.cwd()
    try:
        check_structure(text, source)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
        lines = line_index(node)
        repeated = duplicate_keys(node, source)
    except RecursionError:  # a safety net: check_structure refuses such YAML first
        raise ConfigError(
            f"{source}: expected YAML nested at most {MAX_DEPTH} levels deep, got deeper nesting"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "YAML"
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(
            f"{source}: {where}: expected valid YAML, got a syntax error ({problem})"
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: expected valid YAML, got {exc}") from None
    if not isinstance(data, dict):
        kind = "an empty file" if data is None else f"a {type(data).__name__}"
        raise ConfigError(f"{source}: line 1: expected a mapping of config keys, got {kind}")
    return build_experiment(
        data, source=source, base_dir=base_dir, text=text, lines=lines, problems=repeated
    )


def line_index(node: yaml.Node | None) -> dict[tuple, int]:
    """Map each field path (keys and list indexes) to its 1-based line in the YAML text."""
    index: dict[tuple, int] = {}

    def walk(current: yaml.Node, path: tuple) -> None:
        index[path] = current.start_mark.line + 1
        if isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                sub = (*path, key.value)
                walk(value, sub)
                index[sub] = key.start_mark.line + 1
        elif isinstance(current, yaml.SequenceNode):
            for position, item in enumerate(current.value):
                walk(item, (*path, position))

    if node is not None:
        walk(node, ())
    return index


def duplicate_keys(node: yaml.Node | None, source: str) -> list[str]:
    """A problem for each key written twice in one mapping, at any depth, naming both lines.

    ``safe_load`` keeps the last value of a repeated key without a word, so a config whose
    ``alpha:`` is written twice runs with whichever came last. Keys are compared as YAML
    reads them (tag and text); a merge key (``<<``) may bring keys that the mapping then
    overrides, as YAML means it, so only the keys written in the mapping itself count."""
    problems: list[str] = []
    visited: set[int] = set()  # an alias names a node already walked
    pending: list[tuple[yaml.Node, tuple]] = [] if node is None else [(node, ())]
    while pending:
        current, path = pending.pop()
        if id(current) in visited:
            continue
        visited.add(id(current))
        if isinstance(current, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in current.value:
                if isinstance(key, yaml.ScalarNode):
                    sub = (*path, key.value)
                    line = key.start_mark.line + 1
                    seen = (key.tag, key.value)
                    if key.tag == "tag:yaml.org,2002:merge":
                        pass
                    elif seen in first:
                        lines = {sub: line}
                        problems.append(
                            problem_at(
                                source,
                                lines,
                                sub,
                                f"expected each key once in a mapping, got {key.value!r} again "
                                f"(first at line {first[seen]}, again at line {line}; YAML would "
                                "keep the last one)",
                            )
                        )
                    else:
                        first[seen] = line
                    pending.append((value, sub))
        elif isinstance(current, yaml.SequenceNode):
            pending.extend((item, (*path, index)) for index, item in enumerate(current.value))
    return problems


def check_structure(text: str, source: str) -> None:
    """Refuse YAML that PyYAML would build only by deep recursion or endless expansion.

    PyYAML's composer recurses once per nesting level, and a recursive alias
    (``control: &c {columns: *c}``) makes a node that contains itself, which validation
    then walks forever; both end in a RecursionError instead of a message. This reads the
    parser's event stream (no recursion) and raises :class:`ConfigError` with the line for
    nesting deeper than :data:`MAX_DEPTH`, for an alias used inside the node it names, and
    for aliases that expand to more than :data:`MAX_VALUES` values (an "alias bomb").
    """
    open_nodes: list[list[int]] = []  # per open collection: [its id, values so far]
    latest: dict[str, int] = {}  # anchor -> id of the node it names now
    sizes: dict[int, int] = {}  # id of a finished anchored node -> values it expands to
    total = 0
    for number, event in enumerate(yaml.parse(text, Loader=yaml.SafeLoader)):
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        added = 0
        if isinstance(event, yaml.CollectionStartEvent):
            if event.anchor is not None:
                latest[event.anchor] = number
            open_nodes.append([number, 1])
            if len(open_nodes) > MAX_DEPTH:
                raise ConfigError(
                    f"{source}: line {line}: expected YAML nested at most {MAX_DEPTH} levels "
                    "deep, got deeper nesting"
                )
            continue
        if isinstance(event, yaml.CollectionEndEvent):
            node, added = open_nodes.pop()
            sizes[node] = added
        elif isinstance(event, yaml.ScalarEvent):
            added = 1
            if event.anchor is not None:
                latest[event.anchor] = number
                sizes[number] = 1
        elif isinstance(event, yaml.AliasEvent):
            named = latest.get(event.anchor) if event.anchor is not None else None
            if named is not None and named not in sizes:
                raise ConfigError(
                    f"{source}: line {line}: expected an alias to a finished YAML node, got "
                    f"*{event.anchor} inside the node &{event.anchor} it names (a recursive alias)"
                )
            added = sizes.get(named, 1) if named is not None else 1  # undefined: the composer says
        else:
            continue
        if open_nodes:
            open_nodes[-1][1] += added
        else:
            total += added
        if total + sum(count for _, count in open_nodes) > MAX_VALUES:
            raise ConfigError(
                f"{source}: line {line}: expected a config of at most {MAX_VALUES:,} values "
                "with its aliases expanded, got more"
            )
