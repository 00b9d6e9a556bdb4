"""The bundled demos' generators: deterministic data for trying abrank end to end.

- :mod:`abrank.demo.offline`: an offline replay of a reranker against BM25 (rankings in
  three formats, graded judgments), the data of ``experiments/demo-reranker.yaml``;
- :mod:`abrank.demo.online`: a user-randomized A/B test of the same reranker (impressions
  and clicks, a pre-period table for CUPED), ``experiments/demo-online.yaml``;
- :mod:`abrank.demo.interleaving`: a team-draft interleaving of the offline demo's two
  rankers, ``experiments/demo-interleaving.yaml``;
- :mod:`abrank.demo.daily`: the offline and online demos spread over dates, for scheduled
  runs and backfills.

``abrank demo-data`` writes them; the same arguments give byte-identical files.
"""

from __future__ import annotations

from abrank.demo.daily import write_daily_demo, write_online_daily_demo
from abrank.demo.interleaving import (
    InterleavingDemo,
    make_interleaving_demo,
    write_interleaving_demo,
)
from abrank.demo.offline import (
    DEFAULT_SEED,
    DEMO_LAYOUTS,
    DEVICES,
    LOCALES,
    DemoData,
    generate_demo,
    write_demo,
)
from abrank.demo.online import OnlineDemo, make_online_demo, write_online_demo

__all__ = [
    "DEFAULT_SEED",
    "DEMO_LAYOUTS",
    "DEVICES",
    "LOCALES",
    "DemoData",
    "InterleavingDemo",
    "OnlineDemo",
    "generate_demo",
    "make_interleaving_demo",
    "make_online_demo",
    "write_daily_demo",
    "write_demo",
    "write_interleaving_demo",
    "write_online_daily_demo",
    "write_online_demo",
]
