"""Process-wide settings for the ``abrank`` command's own process: threads and allocators.

They change how fast a short command runs, never a value it computes. Each is made only in
a process that the command owns (:func:`claim_process`, called by ``abrank`` and
``python -m abrank``), never in a Python program that calls :func:`abrank.cli.main` or the
library: such a program keeps its own allocators and thread settings.
"""

from __future__ import annotations

import contextlib
import os
import sys

# True when the process is the command's own (``abrank``, ``python -m abrank``)
_own_process = False


def claim_process() -> None:
    """Mark this process as the command's own: the process-wide settings may be made."""
    global _own_process
    _own_process = True


def owns_process() -> bool:
    """This process is the command's own (:func:`claim_process` was called)."""
    return _own_process


def one_blas_thread() -> None:
    """Keep OpenBLAS to one thread in this process, unless the user chose otherwise.

    abrank runs its comparisons in a thread per core (:mod:`abrank.workers`); OpenBLAS's
    own threads would then compete with them for the same cores, and they wait for work
    by spinning: on two cores they took a third of the comparisons' time. Its matrix
    products split the output, never a sum, so the numbers are the same with any number
    of threads. Only possible before NumPy is first imported (not when the command runs
    in a Python process that already uses NumPy).
    """
    if "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def small_buffers_pool() -> None:
    """Arrow's jemalloc pool for ``abrank history``, when pyarrow has it.

    Reading hundreds of small Parquet files makes tens of thousands of small buffers; with
    the default pool a fresh process spent more time in the kernel committing their pages
    than reading (about 1 s of system time for 100,000 rows in 500 files, 0.4 s with
    jemalloc; benchmarks/bench_history.py).
    """
    import pyarrow as pa

    with contextlib.suppress(NotImplementedError):
        pa.set_memory_pool(pa.jemalloc_memory_pool())


def reuse_freed_memory() -> None:
    """Let a short process that builds and drops large arrays reuse the memory it frees.

    ``abrank metrics`` and ``abrank run`` on an online log or offline rankings make
    temporaries of hundreds of MB, one after another. By default glibc maps each one
    afresh, NumPy advises huge pages for it, and Arrow's mimalloc commits its arenas
    eagerly, so that every page is faulted and zeroed again and, on a busy machine, the
    kernel stalls compacting memory for huge pages. Arrow's buffers from the system
    allocator, freed blocks kept in the heap for reuse (M_MMAP_MAX 0, no trimming) and the
    page size left to the kernel save one to three seconds of system time on 10 million
    run lines (benchmarks/bench_metrics.py), about half of the data path's time on a
    20-million-row click log (benchmarks/bench_online_io.py), and a fifth of an offline
    readout's at 100k queries x 100 per arm (benchmarks/bench_engine_speed.py). One heap
    for every thread (M_ARENA_MAX 1) completes it: glibc otherwise gives each thread that
    allocates (Arrow's readers, the pieces of a large run, the per-core workers) a heap of
    its own, whose pages are fresh and never those the main heap freed; ``abrank metrics``
    on 10 million run lines then took about 100,000 fewer page faults. Values are unaffected.
    Elsewhere than glibc the allocator settings do nothing.
    """
    import ctypes

    # first, before pyarrow is loaded: its allocator starts a thread as it loads, whose
    # first malloc would make a second heap that later threads are then handed in turn
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL("libc.so.6")
            libc.mallopt(-8, 1)  # M_ARENA_MAX: every thread allocates from the one heap
            libc.mallopt(-4, 0)  # M_MMAP_MAX: large blocks come from the heap, and return to it
            libc.mallopt(-1, 2**31 - 1)  # M_TRIM_THRESHOLD: keep freed heap memory
    import numpy as np
    import pyarrow as pa

    pa.set_memory_pool(pa.system_memory_pool())
    with contextlib.suppress(AttributeError):
        np._core.multiarray._set_madvise_hugepage(False)  # type: ignore[attr-defined]  # noqa: SLF001
