"""Why did a metric move: per-query and per-document explanations (DESIGN.md
"Explanations and the explorer").

- :mod:`abrank.explain.lists`: each arm's ranked lists as the metrics read them (trec_eval's
  order, the depth cut), one row per (query, document, rank);
- :mod:`abrank.explain.rbo`: rank-biased overlap between two arms' lists, per query;
- :mod:`abrank.explain.dcg`: the exact per-document decomposition of each query's change of
  DCG@k and NDCG@k;
- :mod:`abrank.explain.contributions`: the same split for MRR, hit, recall and precision;
- :mod:`abrank.explain.moves`: what each document did (promoted, demoted, entered,
  dropped, unjudged entering), each query's tags, and the parts of the change per move;
- :mod:`abrank.explain.pairs`: joins on (query, document) pairs over integer codes;
- :mod:`abrank.explain.tables`: a readout's ``queries`` and ``rankings`` tables;
- :mod:`abrank.explain.online_tables`: the tables of online and interleaving readouts, from
  clicks (per query text or unit: impressions, means, deltas, tags; each document's
  impressions and clicks per arm or team).
"""
