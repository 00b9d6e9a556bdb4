"""abrank.workers: comparisons in threads give the sequential readout to the last digit."""

from __future__ import annotations

import json
import sys
import threading
import warnings
from pathlib import Path

import pytest

import abrank
from abrank import workers

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "experiments" / "demo-reranker.yaml"


def _summary(*, threads: bool) -> str:
    with pytest.MonkeyPatch.context() as patch:
        if not threads:
            patch.setattr(workers, "_comparison_pool", lambda: None)
        readout = abrank.run_experiment(CONFIG)
    return json.dumps(readout.summary, sort_keys=True)


def test_threaded_comparisons_give_the_sequential_summary(monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    sequential = _summary(threads=False)  # also imports what the run imports
    filters = list(warnings.filters)
    assert _summary(threads=True) == sequential
    assert list(warnings.filters) == filters  # no thread left a warning filter behind


def test_tests_that_touch_warning_filters_run_in_the_calling_thread(monkeypatch) -> None:
    seen = []

    def compare(**options):
        seen.append(threading.current_thread() is threading.main_thread())
        return options["design"]

    for options in (
        dict(design="independent", tests=("t",)),
        dict(design="paired", tests=("t", "wilcoxon")),
        dict(design="paired", primary_test="wilcoxon", tests=("t",)),
    ):
        future = workers.start_comparison(compare, **options)
        assert future.done() and future.result() == options["design"]
    assert seen == [True, True, True]


def test_results_keep_the_order_and_raise_the_first_failure() -> None:
    def compare(value, design):
        if value in (3, 5):
            raise ValueError(value)
        return value

    futures = [workers.start_comparison(compare, i, design="paired") for i in range(3)]
    assert workers.results(futures) == [0, 1, 2]
    futures = [workers.start_comparison(compare, i, design="paired") for i in range(8)]
    with pytest.raises(ValueError, match="3"):
        workers.results(futures)


def test_a_free_thread_takes_the_costliest_waiting_comparison_first() -> None:
    pool = workers.CostliestFirst(1, "test-costliest")
    started, gate = threading.Event(), threading.Event()
    ran: list[str] = []
    first = pool.submit(0, lambda: (started.set(), gate.wait()))  # holds the one thread
    assert started.wait(10)  # the others queue behind it
    jobs = {
        name: pool.submit(cost, ran.append, name)
        for name, cost in [("small", 1), ("large", 9), ("tie-a", 5), ("tie-b", 5), ("dropped", 7)]
    }
    assert jobs["dropped"].cancel()
    gate.set()
    workers.results([first, *(job for name, job in jobs.items() if name != "dropped")])
    assert ran == ["large", "tie-a", "tie-b", "small"]
    failing = pool.submit(1, lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        failing.result(timeout=10)


# --------------------------------------------------------------------------- charts


@pytest.fixture()
def chart_workers():
    if not sys.platform.startswith("linux"):
        pytest.skip("chart workers run on Linux")
    assert workers.start_chart_workers(2) == 2
    yield
    workers.stop_chart_workers()
    assert workers.chart_workers() == 0


def _demo_readout():
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        return abrank.run_experiment(CONFIG)


def test_chart_workers_draw_the_same_bytes_as_this_process(chart_workers) -> None:
    from abrank.render.charts import plan_charts

    readout = _demo_readout()
    there = plan_charts(readout)
    workers.render_charts(readout, there)
    assert all("png" in vars(chart) for chart in there)
    here = plan_charts(readout)
    assert [chart.png for chart in there] == [chart.png for chart in here]


def test_a_dead_chart_worker_is_replaced_by_drawing_here(chart_workers) -> None:
    from abrank.render.charts import plan_charts

    readout = _demo_readout()
    workers._chart_conns[1].send(None)  # that worker stops serving
    charts = plan_charts(readout)
    workers.render_charts(readout, charts)
    assert workers.chart_workers() == 1
    assert [chart.png for chart in charts] == [chart.png for chart in plan_charts(readout)]


def test_charts_are_shared_by_weight() -> None:
    class Item:
        def __init__(self, weight):
            self.weight = weight

    items = [Item(w) for w in (4, 3, 1.5, 1, 1, 1, 1, 1, 1)]
    shares = workers._shares(items, 2)
    loads = sorted(sum(item.weight for item in share) for share in shares)
    assert loads == [7.0, 7.5] and sum(len(share) for share in shares) == len(items)


def test_charts_a_worker_cannot_plan_are_drawn_here_and_the_worker_stays(chart_workers) -> None:
    from abrank.render.chart_style import Chart
    from abrank.render.charts import plan_charts

    readout = _demo_readout()
    reference = plan_charts(readout)
    odd = [Chart(f"odd-{c.name}", c.title, c.caption, c.draw) for c in reference[:3]]
    workers.render_charts(readout, odd)  # the workers know no such charts
    assert workers.chart_workers() == 2
    assert [c.png for c in odd] == [c.png for c in reference[:3]]


def test_a_failed_readout_s_drawing_is_discarded_and_the_next_one_gets_its_own(
    chart_workers, tmp_path, monkeypatch
) -> None:
    from abrank.analysis import write as write_module
    from abrank.analysis import write_readout
    from abrank.render.charts import plan_charts

    readout = _demo_readout()

    def fail(*args):
        raise OSError("disk full")

    with monkeypatch.context() as patch:  # fails while the workers draw its charts
        patch.setattr(write_module, "_write_csv", fail)
        with pytest.raises(OSError, match="disk full"):
            write_readout(readout, tmp_path / "failed")
    assert not (tmp_path / "failed").exists() and workers.chart_workers() == 2
    # the workers' replies for the failed readout were read: these charts are this one's
    other = plan_charts(readout)[3:]
    workers.render_charts(readout, other)
    assert [c.png for c in other] == [c.png for c in plan_charts(readout)[3:]]
