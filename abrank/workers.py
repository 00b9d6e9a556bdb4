"""Running independent pieces of a readout side by side on several cores.

Comparisons: each derives its own generators from the seed, so they are independent,
and the resampling draws that dominate them run inside NumPy without the GIL. They run
in a pool of threads, one per usable core (up to :data:`MAX_THREADS`), the costliest
waiting one first (:class:`CostliestFirst`), and their results are read back in the
order they were started, so the readout is the same to the last digit whatever the
number of cores and whichever runs when.

Charts: matplotlib holds the GIL, so charts are drawn in worker processes instead,
forked by :func:`start_chart_workers` (on Linux). Call it early, once NumPy and pandas
are imported but before any work starts (``abrank run`` does so right after its
imports): the workers inherit those modules, import matplotlib on the other cores while
this process loads and compares, and sit ready when the readout is written.
:func:`render_charts` shares a readout's charts among them and stores the PNG bytes in
the charts, so the reports embed exactly what the workers drew (the same bytes as drawing
here: same code, same fonts); :func:`start_charts` returns while they draw, so that this
process writes the readout's other files meanwhile. Without workers (not started, a
single core, not Linux, or a worker that died) charts are drawn in this process, as
before.
"""

from __future__ import annotations

import atexit
import contextlib
import heapq
import itertools
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from abrank.cores import MAX_THREADS, usable_cores

MAX_CHART_WORKERS = 4
_CHART_TIMEOUT = 30.0  # seconds a worker may take, per chart and once more

_pool: CostliestFirst | None = None
_cores: int | None = None
_lock = threading.Lock()


def start_comparison(compare: Callable, *args: Any, cost: float = 0.0, **options: Any) -> Future:
    """``compare(*args, **options)`` in the comparison threads; read it with :func:`results`.

    Only paired comparisons whose tests are all ``thread_safe`` in the stats registry run
    in threads: the others call scipy under ``warnings.catch_warnings``, which is not
    thread-safe (two threads restoring the warning filters can leave one thread's "ignore"
    in place), so they run at once in the calling thread, as does everything on a single
    core. ``cost`` (any measure of the work, such as the number of values compared) only
    orders the waiting comparisons: a free thread takes the costliest first.
    """
    tests = options.get("tests", ())
    tests = [options.get("primary_test", "t"), *([tests] if isinstance(tests, str) else tests)]
    threaded = options.get("design", "paired") == "paired" and _thread_safe(tests)
    pool = _comparison_pool() if threaded else None
    if pool is None:
        future: Future = Future()
        future.set_result(compare(*args, **options))
        return future
    return pool.submit(cost, compare, *args, **options)


def _thread_safe(tests: Sequence[Any]) -> bool:
    """Every test may run in a thread (False for a name the registry does not know: the
    comparison then reports it from the calling thread)."""
    from abrank.stats.registry import test_spec

    try:
        return all(test_spec(name).thread_safe for name in tests)
    except (KeyError, AttributeError):
        return False


def results(futures: list[Future]) -> list:
    """The results in the order the futures were started; the first failure is raised
    (and the comparisons not yet started are dropped)."""
    try:
        return [future.result() for future in futures]
    except BaseException:
        for future in futures:
            future.cancel()
        raise


def _comparison_pool() -> CostliestFirst | None:
    global _pool, _cores
    with _lock:
        if _cores is None:
            _cores = min(usable_cores(), MAX_THREADS)
            if _cores > 1:
                _pool = CostliestFirst(_cores, "abrank-compare")
        return _pool


def _forget_pool() -> None:
    """In a forked child: the pool's threads did not come along, so start afresh."""
    global _pool, _cores, _lock
    _pool, _cores, _lock = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


class CostliestFirst:
    """A pool of threads that runs the costliest waiting job first.

    Comparisons are started as their samples are ready, in the readout's order; run in
    that order, a large one started late (an offline run's judged-only repetition, as
    large as the overall comparison) ran last while the other threads had nothing left,
    leaving cores idle. Taking the costliest waiting job first (the longest-processing-
    time rule) keeps every thread busy until the end. Equal costs run in the order
    started. The threads are daemons that wait for work for as long as the process lives.
    """

    def __init__(self, threads: int, name: str):
        self._waiting: list[tuple[float, int, Future, Callable[[], Any]]] = []
        self._ready = threading.Condition()
        self._order = itertools.count()
        for number in range(threads):
            threading.Thread(target=self._work, name=f"{name}_{number}", daemon=True).start()

    def submit(self, cost: float, job: Callable, *args: Any, **options: Any) -> Future:
        """``job(*args, **options)``, run by the first free thread once no costlier job
        waits; its future."""
        future: Future = Future()
        with self._ready:
            entry = (-float(cost), next(self._order), future, lambda: job(*args, **options))
            heapq.heappush(self._waiting, entry)
            self._ready.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not self._waiting:
                    self._ready.wait()
                _, _, future, job = heapq.heappop(self._waiting)
            if not future.set_running_or_notify_cancel():  # cancelled while it waited
                continue
            try:
                future.set_result(job())
            except BaseException as exc:  # the caller reads it from the future
                future.set_exception(exc)


# --------------------------------------------------------------------------- charts

_chart_pid: int | None = None  # the first worker; it forks the others and reaps them
_chart_conns: list[Any] = []


def start_chart_workers(count: int | None = None) -> int:
    """Fork ``count`` chart workers (default: one per usable core, up to
    :data:`MAX_CHART_WORKERS`; none on a single core or when not on Linux).

    The first worker imports the chart code and then forks the others, so matplotlib is
    imported once, away from this process. Fork before starting threads of your own (the
    comparison threads, for instance): only the forking thread lives on in a worker.
    Returns the number of workers running. Idempotent; the workers stop when this
    process exits or :func:`stop_chart_workers` is called.
    """
    global _chart_pid
    if _chart_conns:
        return len(_chart_conns)
    count = min(usable_cores(), MAX_CHART_WORKERS) if count is None else int(count)
    if count < 1 or (count == 1 and usable_cores() < 2):
        return 0
    if not sys.platform.startswith("linux"):  # macOS system libraries are not fork-safe
        return 0
    from multiprocessing import Pipe

    pipes = [Pipe() for _ in range(count)]
    pid = os.fork()
    if pid == 0:  # the first worker
        code = 0
        try:
            for mine, _ in pipes:
                mine.close()
            for number in (signal.SIGINT, signal.SIGTERM):  # not the main process's handlers
                if signal.getsignal(number) not in (signal.SIG_IGN, signal.SIG_DFL, None):
                    signal.signal(number, signal.SIG_DFL)
            _chart_worker_main([theirs for _, theirs in pipes])
        except BaseException:  # an interrupted or failed worker leaves quietly
            code = 1
        finally:
            os._exit(code)
    for _, theirs in pipes:
        theirs.close()
    _chart_pid = pid
    _chart_conns.extend(mine for mine, _ in pipes)
    atexit.register(stop_chart_workers)
    return count


def stop_chart_workers() -> None:
    """Stop the chart workers (they also stop when this process exits)."""
    global _chart_pid
    for conn in _chart_conns:
        with contextlib.suppress(OSError):
            conn.close()
    _chart_conns.clear()
    if _chart_pid is not None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(_chart_pid, 0)
        _chart_pid = None


def chart_workers() -> int:
    """How many chart workers are running."""
    return len(_chart_conns)


def render_charts(readout: Any, charts: Sequence[Any]) -> None:
    """Draw every chart of ``charts`` not drawn yet (``readout``'s, from ``plan_charts``),
    shared among the chart workers by their weight; what no worker delivers is drawn here.
    """
    start_charts(readout, charts).wait()


class ChartDrawing:
    """Charts sent to the chart workers by :func:`start_charts`, being drawn there.

    :meth:`wait` stores what the workers drew and draws here what they did not deliver;
    :meth:`discard` only reads the workers' replies (when the readout failed meanwhile), so
    that a later readout's charts are never answered with these. Call one of them once.
    """

    def __init__(self, pending: list[Any], sent: list[tuple[Any, list[Any]]]):
        self.pending = pending
        self.sent = sent

    def wait(self) -> None:
        """Every chart drawn: by the workers, else here."""
        self.discard()
        for chart in self.pending:
            chart.png  # noqa: B018 -- draws here what the workers did not deliver

    def discard(self) -> None:
        """Read the workers' replies (their PNG bytes kept in the charts)."""
        sent, self.sent = self.sent, []
        for conn, share in sent:
            _receive(conn, share)


def start_charts(readout: Any, charts: Sequence[Any]) -> ChartDrawing:
    """:func:`render_charts`, started: the charts are sent to the chart workers at once,
    and ``.wait()`` waits for them, so that this process can write the readout's other
    files while the workers draw."""
    pending = [chart for chart in charts if "png" not in vars(chart)]
    workers = list(_chart_conns)
    sent = []
    if len(pending) > 1 and workers:
        blob = pickle.dumps(readout, protocol=pickle.HIGHEST_PROTOCOL)
        shares = _shares(pending, len(workers))
        for conn, share in zip(workers, shares, strict=True):
            if share:
                try:
                    conn.send((blob, [chart.name for chart in share]))
                    sent.append((conn, share))
                except OSError:
                    _drop(conn)
    return ChartDrawing(pending, sent)


def _receive(conn: Any, share: list[Any]) -> None:
    """Store the PNG bytes a worker drew for ``share``; a worker that dies or hangs is
    dropped (its charts are then drawn here)."""
    status: str
    payload: Any  # the worker's reply: PNG bytes per chart when the status is "ok"
    try:
        ready = conn.poll(_CHART_TIMEOUT + _CHART_TIMEOUT * len(share))
        status, payload = conn.recv() if ready else ("late", None)
    except (EOFError, OSError):
        status, payload = "lost", None
    if status == "ok":
        for chart, png in zip(share, payload, strict=True):
            vars(chart)["png"] = png  # what the cached property would hold
    elif status != "error":  # an error is drawn (and raised) here; the worker lives
        _drop(conn)


def _shares(charts: Sequence[Any], count: int) -> list[list[Any]]:
    """Charts dealt to ``count`` workers, heaviest first to the least loaded."""
    shares: list[list[Any]] = [[] for _ in range(count)]
    loads = [0.0] * count
    for chart in sorted(charts, key=lambda c: -getattr(c, "weight", 1.0)):
        least = loads.index(min(loads))
        shares[least].append(chart)
        loads[least] += getattr(chart, "weight", 1.0)
    return shares


def _drop(conn: Any) -> None:
    if conn in _chart_conns:
        _chart_conns.remove(conn)
    with contextlib.suppress(OSError):
        conn.close()


def _chart_worker_main(conns: list[Any]) -> None:
    """The first worker: import the chart code, fork the other workers, serve, reap."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"  # if NumPy is not loaded yet: no BLAS threads to fork around
    from abrank.render import charts

    charts.warm_up()
    children = []
    for conn in conns[1:]:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                for other in conns:
                    if other is not conn:
                        other.close()
                _serve_charts(conn)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
        conn.close()
    _serve_charts(conns[0])
    for pid in children:
        os.waitpid(pid, 0)


def _serve_charts(conn: Any) -> None:
    """Draw the charts asked for until the other end closes."""
    from abrank.render.charts import plan_charts

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:  # asked to stop
            return
        blob, names = message
        reply: tuple[str, list[bytes] | str]
        try:
            drawn = {chart.name: chart for chart in plan_charts(pickle.loads(blob))}
            reply = ("ok", [drawn[name].png for name in names])
        except Exception as exc:  # drawn again in the parent, which reports it
            reply = ("error", f"{type(exc).__name__}: {exc}")
        conn.send(reply)
