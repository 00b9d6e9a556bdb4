"""Running independent pieces of a readout side by side on several cores.

Comparisons: each derives its own generators from the seed, so they are independent,
and the resampling draws that dominate them run inside NumPy without the GIL. They run
in a pool of threads, one per usable core (up to :data:`MAX_THREADS`), and their results
are read back in the order they were started, so the readout is the same to the last
digit whatever the number of cores.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

MAX_THREADS = 8

_pool: ThreadPoolExecutor | None = None
_cores: int | None = None
_lock = threading.Lock()


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def start_comparison(compare: Callable, *args: Any, **options: Any) -> Future:
    """``compare(*args, **options)`` in the comparison threads; read it with :func:`results`.

    Only the paired design's t, permutation and bootstrap tests run in threads: the other
    tests call scipy under ``warnings.catch_warnings``, which is not thread-safe (two
    threads restoring the warning filters can leave one thread's "ignore" in place), so
    they run at once in the calling thread, as does everything on a single core.
    """
    tests = {options.get("primary_test", "t"), *options.get("tests", ())}
    threaded = options.get("design", "paired") == "paired" and "wilcoxon" not in tests
    pool = _comparison_pool() if threaded else None
    if pool is None:
        future: Future = Future()
        future.set_result(compare(*args, **options))
        return future
    return pool.submit(compare, *args, **options)


def results(futures: list[Future]) -> list:
    """The results in the order the futures were started; the first failure is raised
    (and the comparisons not yet started are dropped)."""
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _comparison_pool() -> ThreadPoolExecutor | None:
    global _pool, _cores
    with _lock:
        if _cores is None:
            _cores = min(usable_cores(), MAX_THREADS)
            if _cores > 1:
                _pool = ThreadPoolExecutor(_cores, thread_name_prefix="abrank-compare")
        return _pool
