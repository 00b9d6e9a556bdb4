"""Engines: where logs become per-query values.

An engine takes rankings (and judgments) and returns per-query metric values; everything
after that (statistics, readouts) works on those few numbers per query and does not care
where they were computed. :mod:`abrank.engines.memory` is the in-memory engine (Arrow and
NumPy, whole columns at once); its vectorized kernels (trec_eval's ordering rule, dense query codes,
64-bit document keys, the sort-based matcher of equal (query, doc) pairs) live in
:mod:`abrank.io.arrow`, below both the readers and the engines, which share them.
"""
