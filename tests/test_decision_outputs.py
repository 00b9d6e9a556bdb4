"""The decision beyond summary.json: ``--fail-on no-ship`` and ``--fail-on unhealthy`` exit
3, the history store and ``abrank history`` carry each date's status, and index.html shows
it as a badge.

One dated run of the bundled demo with metric roles (module fixture: a few seconds) is a
``no-ship`` (Recall@20, a guardrail, deteriorates); the tiny experiment of test_cli with
roles is a ``keep-running``, and ``unhealthy`` once its treatment's log lacks a query.
"""

from __future__ import annotations

import contextlib
import html
import io
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_cli import run_cli, write_experiment

from abrank.analysis.alerts import ALERTS, fired_alerts, parse_alerts
from abrank.cli import main
from abrank.errors import ConfigError
from abrank.history import HISTORY_SCHEMA, history_rows, read_history

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = json.loads((ROOT / "tests" / "golden" / "demo-summary.json").read_text())
NAME = "demo-reranker"
EARLIER, DATE = "2026-11-29", "2026-11-30"
ADDED = ("role", "decision", "decision_reason")  # the columns the store's first version lacks
NO_SHIP = (
    "No-ship: Recall@20 deteriorates (-0.009, p = 0.0017) and is not shown within its -0.005 margin"
)

# the demo's readout is shared by the tests that read it: one worker runs them all (and the
# quick profile none: a full demo run)
demo_group = pytest.mark.xdist_group("decision-demo")


@dataclass(frozen=True)
class DemoRun:
    """The demo's dated run with roles: its reports root, exit code and stderr."""

    root: Path
    code: int
    err: str

    @property
    def summary(self) -> dict:
        return json.loads((self.root / NAME / DATE / "summary.json").read_text())


def _demo_config(folder: Path) -> Path:
    """The bundled demo's config (its metrics have roles), its data where it lies."""
    text = (ROOT / "experiments" / "demo-reranker.yaml").read_text()
    text = text.replace("data/", f"{ROOT}/experiments/data/")
    text = text.replace("resamples: 10000", "resamples: 500")
    assert "{name: recall@20, role: guardrail, nim: 0.005}" in text
    path = folder / "demo-reranker.yaml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoRun:
    """The demo with roles, run for DATE with ``--fail-on no-ship`` into a reports root
    whose history already holds EARLIER, a readout without roles written by the store's
    first version (its schema lacks role, decision and decision_reason)."""
    root = tmp_path_factory.mktemp("reports")
    rows = history_rows(GOLDEN, date=EARLIER, config_sha256="c" * 64)
    first = [name for name in HISTORY_SCHEMA.names if name not in ADDED]
    schema = pa.schema([HISTORY_SCHEMA.field(name) for name in first])
    table = pa.Table.from_pandas(rows[first], schema=schema, preserve_index=False)
    folder = root / "history" / NAME
    folder.mkdir(parents=True)
    pq.write_table(table.replace_schema_metadata(None), folder / f"{EARLIER}.parquet")
    config = _demo_config(root.parent)
    err = io.StringIO()
    args = ["run", str(config), "--date", DATE, "--out", str(root / NAME), "--format", "json"]
    with contextlib.redirect_stderr(err):
        code = main([*args, "-q", "--fail-on", "no-ship"])
    return DemoRun(root, code, err.getvalue())


# --------------------------------------------------------------------------- alerts


def _summary(status: str | None, reasons: list[str] | None = None) -> dict:
    summary = {"primary_metric": "m1", "comparisons": [], "diagnostics": {}}
    if status is not None:
        summary["decision"] = {"status": status, "rule": "r", "reasons": reasons or []}
    return summary


def test_no_ship_and_unhealthy_are_alerts_named_by_fail_on():
    assert parse_alerts(["srm,no-ship", "UNHEALTHY"]) == ("srm", "no-ship", "unhealthy")
    assert {"no-ship", "unhealthy"} <= set(ALERTS)
    with pytest.raises(ConfigError) as caught:
        parse_alerts(["no_ship"])
    assert str(caught.value) == (
        "--fail-on: expected alerts among srm, loss, inconclusive, stale, no-ship, unhealthy, "
        "got no_ship"
    )


@pytest.mark.parametrize("status", ["ship", "no-ship", "keep-running", "unhealthy", None])
def test_each_decision_alert_fires_on_its_status_only_with_the_first_reason(status):
    reasons = [f"{status}: first", "second"]
    summary = _summary(status, reasons)
    fired = fired_alerts(summary, ["no-ship", "unhealthy"])
    if status in ("no-ship", "unhealthy"):
        assert fired == [f"{status}: first"]  # the status word is not said twice
    else:
        assert fired == []
    assert fired_alerts(_summary("no-ship"), ["no-ship"]) == ["no-ship: No-ship"]  # no reasons


@pytest.mark.slow
@demo_group
def test_fail_on_no_ship_exits_3_after_writing_the_demos_readout(demo):
    assert demo.code == 3, demo.err
    decision = demo.summary["decision"]
    assert decision["status"] == "no-ship" and decision["reasons"][0] == NO_SHIP
    (harm,) = decision["deteriorations"]
    assert harm["metric"] == "recall@20" and harm["role"] == "guardrail"
    assert harm["delta"] == pytest.approx(-0.0086, abs=5e-5)
    assert harm["p_value"] == pytest.approx(0.0017, abs=5e-5)
    assert f"abrank: alert: {NAME}: no-ship: {NO_SHIP.removeprefix('No-ship: ')}\n" in demo.err
    assert (demo.root / NAME / DATE / "summary.json").is_file()


def _tiny(folder: Path, *, unhealthy: bool = False, roles: bool = True) -> Path:
    """The tiny experiment with roles (a keep-running: three queries cannot show a win);
    ``unhealthy``: its treatment's log lacks q4, a quarter of the queries."""
    folder.mkdir()
    config = write_experiment(folder)
    if roles:
        config.write_text(
            config.read_text().replace(
                "metrics: [mrr@10, ndcg@3]",
                "metrics:\n  - {name: mrr@10, role: success}\n"
                "  - {name: ndcg@3, role: guardrail, nim: 0.1}",
            )
        )
    if unhealthy:
        lines = (folder / "treatment.csv").read_text().splitlines(keepends=True)
        (folder / "treatment.csv").write_text("".join(x for x in lines if not x.startswith("q4")))
    return config


@pytest.mark.parametrize(
    ("variant", "fail_on", "status", "code"),
    [
        ("keep-running", "no-ship,unhealthy", "keep-running", 0),
        ("unhealthy", "unhealthy", "unhealthy", 3),
        ("unhealthy", "no-ship", "unhealthy", 0),
        ("no roles", "no-ship,unhealthy", None, 0),
    ],
)
def test_fail_on_exits_3_exactly_when_the_decision_is_the_one_named(
    tmp_path, capsys, variant, fail_on, status, code
):
    config = _tiny(tmp_path / "exp", unhealthy=variant == "unhealthy", roles=variant != "no roles")
    out = tmp_path / "tiny"
    got, _, err = run_cli(
        capsys, "run", config, "--out", out, "--format", "json", "-q", "--fail-on", fail_on
    )
    assert got == code, err
    summary = json.loads((out / "summary.json").read_text())
    assert (summary.get("decision") or {}).get("status") == status
    alerts = [line for line in err.splitlines() if line.startswith("abrank: alert:")]
    if code == 3:
        reason = summary["decision"]["reasons"][0]
        assert reason.startswith("Unhealthy: new's log lacks 1 of the 4 analysed queries (25%")
        assert alerts == [f"abrank: alert: tiny: unhealthy: {reason.removeprefix('Unhealthy: ')}"]
    else:
        assert alerts == []


# --------------------------------------------------------------------------- history


@pytest.mark.slow
@demo_group
def test_the_history_holds_the_runs_decision_and_roles_beside_the_earlier_date(demo):
    history = read_history(demo.root, NAME)
    assert sorted(history["date"].unique()) == [EARLIER, DATE]
    earlier, latest = history[history["date"] == EARLIER], history[history["date"] == DATE]
    assert earlier[["role", "decision", "decision_reason"]].isna().all().all()
    assert len(latest) == len(demo.summary["comparisons"])
    assert latest["decision"].eq("no-ship").all() and latest["decision_reason"].eq(NO_SHIP).all()
    overall = latest[latest["segment"].isna()]
    assert dict(zip(overall["metric"], overall["role"])) == {
        "mrr@10": "success",
        "ndcg@10": "secondary",
        "recall@20": "guardrail",
        "hit@3": "secondary",
    }
    assert latest.loc[latest["segment"].notna(), "role"].isna().all()
    recall = overall[overall["metric"] == "recall@20"].iloc[0]
    assert recall["delta"] == pytest.approx(-0.0086, abs=5e-5) and recall["verdict"] == "loss"


def _history_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "abrank", "history", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.slow
@demo_group
def test_abrank_history_shows_each_dates_decision(demo):
    done = _history_cli(NAME, "--root", str(demo.root))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["date", "decision", "treatment"]
    cells = [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]
    assert {c[1] for c in cells if c[0] == EARLIER} == {"-"}
    latest = [c for c in cells if c[0] == DATE]
    assert {c[1] for c in latest} == {"no-ship"}
    recall = next(c for c in latest if c[3] == "recall@20" and c[4] == "overall")
    assert recall[7] == "-0.0086" and recall[9] == "0.0017" and recall[10] == "loss"
    done = _history_cli(NAME, "--json", "--root", str(demo.root))
    rows = json.loads(done.stdout)
    assert {(r["date"], r["decision"]) for r in rows} == {(EARLIER, None), (DATE, "no-ship")}


# --------------------------------------------------------------------------- index.html


@pytest.mark.slow
@demo_group
def test_the_index_card_shows_the_no_ship_badge_and_its_reason(demo):
    page = (demo.root / "index.html").read_text(encoding="utf-8")
    card = re.search(
        rf'<article class="card ([\w-]*)" id="experiment-{NAME}">(.*?)</article>', page, re.S
    )
    assert card is not None and card.group(1) == "no-ship"
    badge = re.search(
        r'<span class="decision-badge ([\w-]+)"[^>]*>([^<]+)</span> '
        r'<span class="reason">([^<]+)</span>',
        card.group(2),
    )
    assert badge is not None
    assert (badge.group(1), badge.group(2), html.unescape(badge.group(3))) == (
        "no-ship",
        "no-ship",
        NO_SHIP,
    )
    assert f'href="{NAME}/{DATE}/summary.json"' in card.group(2)  # json only: no report
    assert "<script" not in page and not re.search(r"(src|href)=\"(https?:)?//", page)
