"""abrank: is the new ranker better? Metrics, paired statistics and readouts for ranking A/B tests.

The public API is imported lazily so that ``abrank --help`` stays fast and notebooks pay
only for what they use::

    import abrank
    per_query = abrank.evaluate(rankings, judgments, ["mrr@10", "ndcg@10"])
    result = abrank.compare(control["mrr@10"], treatment["mrr@10"], seed=7)
    readout = abrank.run_experiment("experiments/demo-reranker.yaml")
"""

from __future__ import annotations

import importlib
from typing import Any

from abrank.errors import AbrankError, ConfigError, DataError

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "abrank.engines.evaluate",
    "parse_metric": "abrank.metrics",
    "compare": "abrank.stats",
    "Comparison": "abrank.stats",
    "load_experiment": "abrank.config",
    "Experiment": "abrank.config",
    "read_rankings": "abrank.io",
    "read_judgments": "abrank.io",
    "read_impressions": "abrank.io",
    "compare_clustered": "abrank.stats",
    "UnitSums": "abrank.stats",
    "sample_ratio_mismatch": "abrank.stats",
    "run_experiment": "abrank.analysis",
    "validate_experiment": "abrank.analysis.validate",
    "ValidationResult": "abrank.analysis.validate",
    "write_readout": "abrank.analysis",
    "Readout": "abrank.readout",
    "load_readout": "abrank.readout",
    "interleave": "abrank.interleaving",
    "simulate_power": "abrank.planner",
}

__all__ = ["AbrankError", "ConfigError", "DataError", "__version__", *_LAZY]


def __dir__() -> list[str]:
    """The public API (what ``dir(abrank)`` and tab completion show), lazy names included."""
    return sorted(__all__)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'abrank' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
