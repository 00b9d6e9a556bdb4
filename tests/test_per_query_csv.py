"""per_query.csv: formula-like text cells are escaped for spreadsheets, numbers stay numbers,
and the readout folder reads back the exact texts."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd

from abrank.analysis import run_experiment, write_readout
from abrank.config import build_experiment
from abrank.readout import load_readout
from abrank.readout.csv_cells import escape_text_columns, unescape_text_columns

# Query ids and segment values that a spreadsheet would run as formulas (OWASP's list:
# =, +, -, @, and a leading tab or carriage return), and harmless ones.
HOSTILE = ['=HYPERLINK("http://evil.example/", "q1")', "-2+3", "@SUM(A1)", "+1", "q5"]
DEVICES = ["=cmd|' /C calc'!A0", "web", "-web", "@app", "\tweb"]


def _experiment(tmp_path: Path):
    def quoted(value: str) -> str:
        return '"' + value.replace('"', '""') + '"'

    control = ["query_id,doc_id,rank,device"]
    treatment = ["query_id,doc_id,rank"]
    judgments = ["query_id,doc_id,grade"]
    for q, device in zip(HOSTILE, DEVICES, strict=True):
        control += [f"{quoted(q)},a,1,{quoted(device)}", f"{quoted(q)},b,2,{quoted(device)}"]
        treatment += [f"{quoted(q)},b,1", f"{quoted(q)},a,2"]
        judgments += [f"{quoted(q)},b,1"]
    for name, lines in (("control", control), ("treatment", treatment), ("judgments", judgments)):
        (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = {
        "name": "hostile",
        "control": {"name": "old", "path": "control.csv"},
        "treatments": [{"name": "new", "path": "treatment.csv"}],
        "judgments": {"path": "judgments.csv"},
        "metrics": ["mrr@10"],
        "analysis": {"seed": 1, "resamples": 200},
        "segments": {"columns": ["device"], "min_queries": 2},
    }
    return build_experiment(config, source="hostile.yaml", base_dir=tmp_path)


def _escaped(value: str) -> str:
    """OWASP's rule, written out: a leading =, +, -, @, tab or CR gets a single quote."""
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def test_formula_like_text_cells_are_quoted_and_numbers_are_not(tmp_path):
    readout = run_experiment(_experiment(tmp_path))
    folder = tmp_path / "out"
    write_readout(readout, folder, formats=("csv", "json"))
    with open(folder / "per_query.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 2 * len(HOSTILE)
    device_of = dict(zip(HOSTILE, DEVICES, strict=True))
    written = {(r["arm"], r["query_id"]): r for r in rows}
    for arm in ("old", "new"):
        for q in HOSTILE:
            row = written[(arm, _escaped(q))]
            assert row["device"] == _escaped(device_of[q])
            # RR: control has the relevant b at rank 2, the treatment at rank 1
            assert float(row["mrr@10"]) == (0.5 if arm == "old" else 1.0)
    assert written[("old", "'-2+3")]["query_id"] == "'-2+3"
    assert written[("old", "q5")]["device"] == "'\tweb"

    # the folder reads back the exact texts; the readout in memory was never changed
    loaded = load_readout(folder)
    assert sorted(loaded.per_query["query_id"].unique()) == sorted(HOSTILE)
    assert set(readout.per_query["query_id"]) == set(HOSTILE)
    pd.testing.assert_frame_equal(
        loaded.per_query.sort_values(["arm", "query_id"]).reset_index(drop=True),
        readout.per_query.sort_values(["arm", "query_id"]).reset_index(drop=True),
        check_dtype=False,
        check_exact=True,
    )


def test_numeric_columns_keep_their_sign_and_escaping_round_trips():
    frame = pd.DataFrame(
        {
            "query_id": ["=1+1", "-2", "'=x", "''-y", "'plain", "plain", None],
            "delta": [-0.25, -1.0, 0.0, 2.0, -3.5, 1.0, -0.5],
            "count": [-2, -1, 0, 1, 2, 3, 4],
        }
    )
    out = escape_text_columns(frame)
    assert out["query_id"].tolist()[:6] == ["'=1+1", "'-2", "''=x", "'''-y", "'plain", "plain"]
    assert out["query_id"].isna().tolist()[-1]
    pd.testing.assert_series_equal(out["delta"], frame["delta"])
    pd.testing.assert_series_equal(out["count"], frame["count"])
    pd.testing.assert_frame_equal(unescape_text_columns(out), frame)
