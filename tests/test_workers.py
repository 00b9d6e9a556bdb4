"""abrank.workers: comparisons in threads give the sequential readout to the last digit."""

from __future__ import annotations

import json
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
