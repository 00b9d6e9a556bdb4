"""Options that several verbs share (-m, -J, --engine), and the reading of -m's values.

``abrank metrics`` and ``abrank compare`` take metric names both as trec_eval does (one
per ``-m``, the files anywhere) and as abrank does (several names after one ``-m``):
:func:`regroup_metric_values` puts each name after its own ``-m`` before argparse reads
the arguments.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def judged_only_option(parser: argparse.ArgumentParser) -> None:
    """``--judged-only`` / ``-J`` (trec_eval's -J)."""
    parser.add_argument(
        "--judged-only",
        "-J",
        action="store_true",
        help="score every metric on the judged documents only: unjudged ones are removed "
        "from each ranking first (trec_eval -J; ndcg@10 becomes ndcg@10(judged))",
    )


def engine_option(parser: argparse.ArgumentParser) -> None:
    """``--engine`` of the verbs that score runs without a config."""
    parser.add_argument(
        "--engine",
        metavar="NAME",
        help="where the runs are scored: memory (default), duckdb or spark (files read and "
        "scored in the engine; abrank metric names only)",
    )


def metric_option(parser: argparse.ArgumentParser, required: bool = True) -> None:
    """``-m`` / ``--metric``, repeatable, each taking one or more names
    (:func:`regroup_metric_values`)."""
    parser.add_argument(
        "-m",
        "--metric",
        dest="metrics",
        action="append",
        required=required,
        metavar="METRIC",
        help="metric names: one per -m (-m ndcg@10 -m mrr@10), a comma list (-m P.5,10), "
        "or several after one -m (-m ndcg@10 mrr@10 map)",
    )


def regroup_metric_values(
    tokens: Sequence[str], sub: argparse.ArgumentParser, files: int
) -> list[str]:
    """A verb's arguments with every metric name after its own -m and the files last.

    Two conventions meet here. trec_eval's: each -m takes one value and the files may come
    anywhere (``-q -m ndcg_cut.10 -m P.5 qrels run``). abrank's: one -m may be followed by
    several names (``qrels run -m ndcg@10 mrr@10 --per-query``). Bare words that follow an
    -m value are metric names, except the last ones when fewer than ``files`` bare words
    stand elsewhere: those are the files. Options keep their values; anything unknown is
    left for argparse to report.
    """
    actions = sub._option_string_actions  # noqa: SLF001 - argparse keeps no public table
    kept: list[str] = []
    metrics: list[tuple[int, str]] = []
    bare: list[tuple[int, str, bool]] = []  # (position, token, follows a metric)
    follows = False
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token == "--":
            bare += [(j, t, False) for j, t in enumerate(tokens[i + 1 :], start=i + 1)]
            break
        if not token.startswith("-") or token == "-" or _is_number(token):
            bare.append((i, token, follows))
            i += 1
            continue
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            action = _long_option(actions, name)
            takes = action is not None and action.nargs != 0
            if takes and not eq and i + 1 < len(tokens):
                i += 1
                value, eq = tokens[i], "="
            follows = takes and action is not None and action.dest == "metrics" and bool(eq)
            if follows:
                metrics.append((i, value))
            else:  # one token: argparse then reads a value such as "-5" as a value
                kept.append(f"{name}={value}" if takes and eq else token)
            i += 1
            continue
        # short options, possibly grouped (-qc) or with an attached value (-l2, -mP.5)
        j, consumed = 1, [token]
        metric = None
        while j < len(token):
            action = actions.get("-" + token[j])
            if action is None or action.nargs == 0:
                j += 1
                continue
            value = token[j + 1 :]
            if not value and i + 1 < len(tokens):
                i += 1
                value = tokens[i]
                consumed = [token + value]  # attached: argparse reads "-5" as a value
            if action.dest == "metrics":
                metric = value
                consumed = [token[:j]] if j > 1 else []
            break
        kept += consumed
        if metric is not None:
            metrics.append((i, metric))
        follows = metric is not None
        i += 1
    fixed = [(p, t) for p, t, after in bare if not after]
    trailing = [(p, t) for p, t, after in bare if after]
    cut = max(len(trailing) - max(files - len(fixed), 0), 0)
    paths = fixed + trailing[cut:]
    metrics += trailing[:cut]
    out = kept + [f"--metric={name}" for _, name in sorted(metrics)]
    return out + ["--"] + [t for _, t in sorted(paths)]


def _long_option(actions: dict, name: str) -> argparse.Action | None:
    """The action of a long option, or of the one long option it abbreviates."""
    if name in actions:
        return actions[name]
    matches = {a for option, a in actions.items() if option.startswith(name) and name != "--"}
    return matches.pop() if len(matches) == 1 else None


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True
