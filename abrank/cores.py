"""How many cores this process may use, for the pools of threads that run comparisons."""

from __future__ import annotations

import os

#: Most threads one pool of comparisons uses, however many cores there are.
MAX_THREADS = 8


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
