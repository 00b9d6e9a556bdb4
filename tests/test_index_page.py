"""The reports root's index page: experiments, latest verdicts, alarm badges, links.

Histories are built by test_trends.history_frame (the store's columns and types); every
expected text is written out here from the frame's numbers with plain f-strings.
"""

from __future__ import annotations

import html
import os
import re
from datetime import date

import pandas as pd
import pytest
from test_report import build_readout
from test_trends import dates_from, golden_summary, history_frame

from abrank.errors import ConfigError, DataError
from abrank.render.index_page import GENERATOR, render_index, write_index

TODAY = date(2026, 12, 1)


def _two_experiments() -> pd.DataFrame:
    demo = history_frame(golden_summary(), dates_from("2026-11-25", 6), seed=1)  # to Nov 30
    small = build_readout(n=200, treatments=("reranker", "boost")).summary
    other = history_frame(small, dates_from("2026-11-20", 5), experiment="alpha-test", seed=2)
    return pd.concat([demo, other], ignore_index=True)


def _cards(page: str) -> dict[str, str]:
    found = re.findall(
        r'<article class="card[^"]*" id="experiment-([^"]+)">(.*?)</article>', page, flags=re.S
    )
    return dict(found)


def _badges(card: str) -> list[str]:
    return re.findall(r'<span class="alarm-badge ([\w-]+)"', card)


def _lines(card: str) -> list[str]:
    items = re.findall(r"<li>(.*?)</li>", card, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", item)) for item in items]


def _latest_overall(history: pd.DataFrame, name: str) -> pd.DataFrame:
    rows = history[(history["experiment"] == name) & history["segment"].isna()]
    return rows[rows["date"] == rows["date"].max()]


def test_every_experiment_has_a_card_sorted_by_name_with_its_latest_date():
    history = _two_experiments()
    page = render_index(history, {}, today=TODAY)
    cards = _cards(page)
    assert list(cards) == ["alpha-test", "demo-reranker"]
    assert "latest 2026-11-30 (yesterday)" in cards["demo-reranker"]
    assert "latest 2026-11-24 (7 days ago)" in cards["alpha-test"]
    assert "2 experiments, as of 2026-12-01" in page


def test_the_latest_verdicts_show_the_primary_metric_first_with_the_right_numbers():
    history = _two_experiments()
    page = render_index(history, {}, today=TODAY)
    labels = {"mrr@10": "MRR@10", "ndcg@10": "NDCG@10", "recall@20": "Recall@20", "hit@3": "Hit@3"}
    for name, card in _cards(page).items():
        rows = _latest_overall(history, name)
        expected = []
        for treatment in dict.fromkeys(rows["treatment"]):
            mine = rows[rows["treatment"] == treatment]
            ordered = pd.concat([mine[mine["primary"]], mine[~mine["primary"]]])
            for _, row in ordered.iterrows():
                expected.append(
                    f"{treatment}: {labels[row['metric']]} {row['delta']:+.3f} "
                    f"({row['relative_lift'] * 100:+.1f}%) {row['verdict']}"
                )
        assert _lines(card) == expected
    # the demo's primary metric leads its card, as "MRR@10 +0.246 (+45.6%) win" would
    first = _lines(_cards(page)["demo-reranker"])[0]
    assert first.startswith("reranker: MRR@10 +")


def history_with_latest(dates, **latest_values) -> pd.DataFrame:
    """The demo's history over ``dates``, every verdict a win, then ``latest_values`` set
    on every row of the latest date."""
    history = history_frame(golden_summary(), dates, seed=3)
    history["verdict"] = "win"
    last = history["date"] == max(dates)
    for column, value in latest_values.items():
        history.loc[last, column] = value
    return history


def test_srm_badge_exactly_when_the_latest_date_has_the_alarm():
    dates = dates_from("2026-11-28", 3)
    calm = history_with_latest(dates, srm_alarm=False)
    calm.loc[calm["date"] == dates[0], "srm_alarm"] = True  # an earlier alarm: no badge
    alarm = history_with_latest(dates, srm_alarm=True)
    unknown = history_with_latest(dates)  # offline: no SRM test, null
    assert _badges(_cards(render_index(calm, {}, today=TODAY))["demo-reranker"]) == ["ok"]
    assert _badges(_cards(render_index(alarm, {}, today=TODAY))["demo-reranker"]) == ["srm"]
    assert _badges(_cards(render_index(unknown, {}, today=TODAY))["demo-reranker"]) == ["ok"]


def test_loss_badge_exactly_when_an_overall_comparison_lost_at_the_latest_date():
    dates = dates_from("2026-11-28", 3)
    segment_loss = history_with_latest(dates)
    segment_loss.loc[segment_loss["segment"].notna(), "verdict"] = "loss"
    earlier = history_with_latest(dates)
    earlier.loc[earlier["date"] == dates[0], "verdict"] = "loss"
    lost = history_with_latest(dates)
    lost.loc[
        (lost["date"] == dates[-1]) & (lost["metric"] == "recall@20") & lost["segment"].isna(),
        "verdict",
    ] = "loss"
    for frame in (segment_loss, earlier):
        assert _badges(_cards(render_index(frame, {}, today=TODAY))["demo-reranker"]) == ["ok"]
    card = _cards(render_index(lost, {}, today=TODAY))["demo-reranker"]
    # Recall@20 is not the primary metric: its loss is marked apart, and the card keeps
    # the colour of its primary metric's win
    assert _badges(card) == ["secondary-loss"]
    assert 'class="card win"' in render_index(lost, {}, today=TODAY)
    lost.loc[(lost["date"] == dates[-1]) & lost["primary"] & lost["segment"].isna(), "verdict"] = (
        "loss"
    )
    card = _cards(render_index(lost, {}, today=TODAY))["demo-reranker"]
    assert _badges(card) == ["loss", "secondary-loss"]
    assert 'class="card loss"' in render_index(lost, {}, today=TODAY)


@pytest.mark.parametrize(
    ("last_day", "stale_flag", "expected"),
    [
        ("2026-12-01", False, ["ok"]),
        ("2026-11-29", False, ["ok"]),  # today - 2 days: not yet stale
        ("2026-11-28", False, ["stale"]),  # older than today - 2 days
        ("2026-12-01", True, ["stale"]),  # the inputs did not change
    ],
)
def test_stale_badge_when_the_inputs_repeat_or_the_latest_date_is_old(
    last_day, stale_flag, expected
):
    dates = [d for d in dates_from("2026-11-20", 12) if d <= last_day]
    history = history_with_latest(dates, stale=stale_flag)
    history.loc[history["date"] == dates[0], "stale"] = True  # an earlier stale date: no matter
    assert _badges(_cards(render_index(history, {}, today=TODAY))["demo-reranker"]) == expected


def test_every_alarm_at_once():
    history = history_with_latest(
        dates_from("2026-11-20", 3), srm_alarm=True, stale=True, verdict="loss"
    )
    assert _badges(_cards(render_index(history, {}, today=TODAY))["demo-reranker"]) == [
        "srm",
        "loss",
        "secondary-loss",
        "stale",
    ]


def test_links_point_at_each_latest_report_and_are_escaped():
    history = _two_experiments()
    links = {"demo-reranker": "demo-reranker/2026-11-30/report.html", "alpha-test": 'a"b/r.html'}
    cards = _cards(render_index(history, links, today=TODAY))
    hrefs = re.findall(r'href="([^"]+)"', cards["demo-reranker"])
    assert hrefs == ["demo-reranker/2026-11-30/report.html"] * 2  # the name and "latest report"
    assert 'href="a&quot;b/r.html"' in cards["alpha-test"]
    unlinked = _cards(render_index(history, {}, today=TODAY))
    assert all("href=" not in card for card in unlinked.values())


def test_the_page_is_self_contained_and_marked_as_abranks():
    page = render_index(_two_experiments(), {}, today=TODAY)
    assert GENERATOR in page
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert page.count("<svg") == 2  # one sparkline per experiment
    assert "--win: #007a5a" in page  # report.html's colours


def test_the_sparkline_follows_the_primary_delta():
    history = history_frame(golden_summary(), dates_from("2026-11-01", 4), seed=6)
    card = _cards(render_index(history, {}, today=TODAY))["demo-reranker"]
    points = re.search(r'<polyline points="([^"]+)"', card).group(1).split()
    ys = [float(p.split(",")[1]) for p in points]
    rows = history[history["segment"].isna() & history["primary"]].sort_values("date")
    deltas = rows["delta"].to_list()
    # SVG y grows downwards: the highest delta has the smallest y, and so on
    assert sorted(range(4), key=lambda i: ys[i]) == sorted(range(4), key=lambda i: -deltas[i])
    xs = [float(p.split(",")[0]) for p in points]
    assert xs == sorted(xs) and xs[0] == 3.0 and xs[-1] == 157.0


def test_an_empty_history_says_no_experiment_has_run_yet():
    empty = history_frame(golden_summary(), []).iloc[0:0]
    page = render_index(empty, {}, today=TODAY)
    assert "No experiment has run yet" in page
    assert "<article" not in page
    assert "No experiment has run yet" in render_index(pd.DataFrame(), {}, today=TODAY)


def test_a_history_without_a_needed_column_is_a_data_error():
    history = _two_experiments().drop(columns="srm_alarm")
    with pytest.raises(
        DataError,
        match=r"^history: expected the history store's columns .*"
        r"got no column 'srm_alarm'$",
    ):
        render_index(history, {}, today=TODAY)


# --------------------------------------------------------------------------- decisions

REASONS = {
    "ship": "Ship: MRR@10 (+0.246) wins and Recall@20 stays within its -0.005 margin",
    "no-ship": "No-ship: Recall@20 deteriorates (-0.009, p = 0.0017) and is not shown "
    "within its -0.005 margin",
    "keep-running": "Keep running: no success metric wins yet (MRR@10 +0.389, p = 0.192)",
    "unhealthy": "Unhealthy: sample ratio mismatch (p = 1e-06 < 0.001); explain it before deciding",
}


def _decision(card: str) -> tuple[str, str] | None:
    """(status on the badge, the reason beside it) of a card, None without a badge."""
    found = re.search(
        r'<p class="decision"><span class="decision-badge ([\w-]+)"[^>]*>([^<]+)</span> '
        r'<span class="reason">([^<]*)</span></p>',
        card,
    )
    if found is None:
        return None
    assert found.group(1) == found.group(2)
    return found.group(1), html.unescape(found.group(3))


def _article_class(page: str, name: str = "demo-reranker") -> str:
    return re.search(rf'<article class="([^"]*)" id="experiment-{name}">', page).group(1)


@pytest.mark.parametrize("status", list(REASONS))
def test_the_latest_decision_is_a_badge_with_its_reason_and_colours_the_card(status):
    dates = dates_from("2026-11-28", 3)
    history = history_with_latest(dates, decision=status, decision_reason=REASONS[status])
    page = render_index(history, {}, today=TODAY)
    card = _cards(page)["demo-reranker"]
    assert _decision(card) == (status, REASONS[status])
    # every verdict is a win: without the decision the card would be green
    assert _article_class(page) == f"card {status}"
    assert _badges(card) == ["ok"]  # the alarms are as they were
    assert card.index('class="when"') < card.index('class="decision"') < card.index("<ul")


def test_the_decision_rules_the_cards_colour_over_the_verdicts():
    dates = dates_from("2026-11-28", 3)
    lost = history_with_latest(dates, decision="ship", decision_reason=REASONS["ship"])
    lost.loc[lost["date"] == dates[-1], "verdict"] = "loss"
    page = render_index(lost, {}, today=TODAY)
    assert _article_class(page) == "card ship"  # a loss of the primary metric, but ship
    assert _badges(_cards(page)["demo-reranker"]) == ["loss", "secondary-loss"]
    won = history_with_latest(dates, decision="no-ship", decision_reason=REASONS["no-ship"])
    assert _article_class(render_index(won, {}, today=TODAY)) == "card no-ship"


def test_only_the_latest_dates_decision_counts():
    dates = dates_from("2026-11-28", 3)
    history = history_with_latest(dates)  # the latest date without a decision (no roles)
    history.loc[history["date"] == dates[0], ["decision", "decision_reason"]] = [
        "no-ship",
        REASONS["no-ship"],
    ]
    page = render_index(history, {}, today=TODAY)
    assert _decision(_cards(page)["demo-reranker"]) is None
    assert _article_class(page) == "card win"
    assert 'class="decision"' not in page and "decision-badge" not in page.split("</style>")[1]


def test_a_history_without_the_decision_columns_shows_no_decision():
    history = _two_experiments().drop(columns=["decision", "decision_reason"])
    page = render_index(history, {}, today=TODAY)
    assert _article_class(page) in ("card win", "card loss", "card ")
    assert 'class="decision"' not in page


def test_the_decision_badges_colours_and_the_status_in_the_cards_record():
    from abrank.render.index_page import experiment_status

    page = render_index(_two_experiments(), {}, today=TODAY)
    for rule in (
        ".decision-badge.ship { background: var(--win); }",
        ".decision-badge.no-ship { background: var(--loss); }",
        ".decision-badge.keep-running { background: #9a6700; }",
        ".decision-badge.unhealthy { background: #555; }",
        ".card.ship { border-left-color: var(--win); }",
        ".card.no-ship { border-left-color: var(--loss); }",
        ".card.keep-running { border-left-color: #9a6700; }",
        ".card.unhealthy { border-left-color: var(--alarm); }",
    ):
        assert rule in page
    dates = dates_from("2026-11-28", 3)
    history = history_with_latest(dates, decision="unhealthy", decision_reason=REASONS["unhealthy"])
    status = experiment_status("demo-reranker", history, TODAY).to_dict()
    assert (status["decision"], status["reason"], status["tone"]) == (
        "unhealthy",
        REASONS["unhealthy"],
        "unhealthy",
    )


# --------------------------------------------------------------------------- writing


def test_write_index_writes_atomically_and_replaces_its_own_page(tmp_path):
    history = _two_experiments()
    path = write_index(tmp_path, history, {})
    assert path == tmp_path / "index.html"
    assert GENERATOR in path.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]  # no temp file left
    again = write_index(tmp_path, history.iloc[0:0], {})
    assert "No experiment has run yet" in again.read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]


def test_write_index_refuses_an_index_page_abrank_did_not_write(tmp_path):
    page = tmp_path / "index.html"
    page.write_text("<html><body>the team's own page</body></html>\n", encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        write_index(tmp_path, _two_experiments(), {})
    assert str(error.value) == (
        f"{page}: expected an index page abrank wrote (with {GENERATOR}), got another file; "
        "it is left as it is"
    )
    assert page.read_text(encoding="utf-8") == "<html><body>the team's own page</body></html>\n"
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]


def test_a_failed_write_keeps_the_old_page_and_leaves_no_temp_file(tmp_path, monkeypatch):
    history = _two_experiments()
    write_index(tmp_path, history, {})
    before = (tmp_path / "index.html").read_text(encoding="utf-8")

    def broken(source, target):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_index(tmp_path, history.iloc[0:0], {})
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == ["index.html"]


def test_write_index_makes_the_root(tmp_path):
    path = write_index(tmp_path / "reports", _two_experiments(), {"demo-reranker": "x.html"})
    assert path.is_file() and 'href="x.html"' in path.read_text(encoding="utf-8")
