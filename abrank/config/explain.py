"""The ``explain`` section: how deep a readout's explanation tables keep each arm's lists
(DESIGN.md "Explanations and the explorer")."""

from __future__ import annotations

from pydantic import Field

from abrank.config.keys import Strict
from abrank.config.problems import Checks

#: The deepest lists ``explain.depth`` may ask for (trec_eval's usual run depth).
MAX_EXPLAIN_DEPTH = 1000


class ExplainConfig(Strict):
    """``depth``: the results per query and arm that ``rankings.parquet`` keeps (default:
    the deepest cutoff of the metrics, at most 100; the whole list where one has none)."""

    depth: int | None = Field(default=None, ge=1, le=MAX_EXPLAIN_DEPTH)


def check_explain(checks: Checks, explain: ExplainConfig, metrics: list[str]) -> None:
    """An ``explain.depth`` that reaches every metric's cutoff: the tables split each
    metric's change over the documents of its top k, so they must hold them."""
    if explain.depth is None:
        return
    cutoffs = [k for k in (_cutoff(m) for m in metrics) if k is not None]
    needed = max(cutoffs, default=0)
    if explain.depth < needed:
        checks.add(
            ("explain", "depth"),
            f"expected at least the deepest cutoff of the metrics ({needed}), got {explain.depth}",
        )


def _cutoff(name: str) -> int | None:
    from abrank.errors import ConfigError
    from abrank.metrics import parse_metric

    try:
        return parse_metric(name).k
    except ConfigError:  # a credit or a click name of another design: no cutoff
        return None
