"""The inputs of a run, resolved once (abrank.inputs): dates, windows, globs and folders,
formats, fingerprints."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest

import abrank
from abrank.config import load_experiment
from abrank.errors import ConfigError, DataError
from abrank.inputs import missing_inputs, resolve_inputs

# Two arms and judgments of two queries; MRR@10 of the control is (1 + 1/2) / 2 = 0.75,
# of the treatment (1/2 + 1) / 2 = 0.75 as well: the numbers are not what these tests hold.
RUN_A = "q1 Q0 d1 1 3.0 a\nq1 Q0 d2 2 2.0 a\nq2 Q0 d3 1 3.0 a\nq2 Q0 d4 2 2.0 a\n"
RUN_B = "q1 Q0 d2 1 3.0 b\nq1 Q0 d1 2 2.0 b\nq2 Q0 d4 1 3.0 b\nq2 Q0 d3 2 2.0 b\n"
QRELS = "q1 0 d1 1\nq2 0 d4 1\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def offline_config(folder: Path, control: str, treatment: str, judgments: str, extra: str = ""):
    return write(
        folder / "exp.yaml",
        f"name: tiny\ncontrol: {{name: a, path: '{control}'}}\n"
        f"treatments: [{{name: b, path: '{treatment}'}}]\n"
        f"judgments: {{path: '{judgments}'}}\nmetrics: [mrr@10]\n"
        f"analysis: {{resamples: 200, seed: 1}}\n{extra}",
    )


# --------------------------------------------------------------------------- dates


def test_a_cumulative_window_reads_each_dates_log_and_the_run_dates_judgments(tmp_path):
    config = offline_config(
        tmp_path,
        "logs/{date}/a.txt",
        "logs/{date:%Y%m%d}-b.txt",
        "qrels/{date}.qrels",
        "window: {cumulative: 2026-01-30}\n",
    )
    inputs = resolve_inputs(load_experiment(config).for_date("2026-02-01"))
    root = tmp_path.resolve()
    days = ["2026-01-30", "2026-01-31", "2026-02-01"]
    assert [source.key for source in inputs.sources] == [
        "control.path",
        "treatments[0].path",
        "judgments.path",
    ]
    assert inputs["control.path"].files == [str(root / "logs" / day / "a.txt") for day in days]
    assert inputs["treatments[0].path"].files == [
        str(root / "logs" / f"{day.replace('-', '')}-b.txt") for day in days
    ]
    assert inputs["judgments.path"].files == [str(root / "qrels" / "2026-02-01.qrels")]
    assert inputs["control.path"].dates == tuple(dt.date.fromisoformat(d) for d in days)
    assert inputs["treatments[0].path"].template == str(root / "logs" / "{date:%Y%m%d}-b.txt")
    assert inputs.to_dict()["sources"][2] == {
        "key": "judgments.path",
        "role": "judgments",
        "arm": None,
        "holds": "judgments",
        "format": None,
        "template": str(root / "qrels" / "{date}.qrels"),
        "dates": ["2026-02-01"],
        "paths": [str(root / "qrels" / "2026-02-01.qrels")],
    }
    # nothing is there yet: every date's log and the run date's judgments are missing
    assert [key for key, _ in inputs.missing()] == ["control.path"] * 3 + [
        "treatments[0].path"
    ] * 3 + ["judgments.path"]


def test_a_daily_window_reads_the_run_dates_files_only(tmp_path):
    write(tmp_path / "b.txt", RUN_B)
    write(tmp_path / "q.qrels", QRELS)
    config = offline_config(tmp_path, "logs/{date}/a.txt", "b.txt", "q.qrels")
    inputs = resolve_inputs(load_experiment(config).for_date("2026-03-04"))
    root = tmp_path.resolve()
    assert inputs["control.path"].files == [str(root / "logs" / "2026-03-04" / "a.txt")]
    assert inputs["treatments[0].path"].files == [str(root / "b.txt")]
    assert inputs["treatments[0].path"].dates == ()


def test_a_dated_path_without_a_run_date_is_a_config_error_naming_the_key(tmp_path):
    write(tmp_path / "a.txt", RUN_A)
    write(tmp_path / "q.qrels", QRELS)
    config = offline_config(tmp_path, "a.txt", "logs/{date}/b.txt", "q.qrels")
    expected = (
        f"{config}: treatments[0].path: the path holds {{date}}; expected a run date "
        "(--date YYYY-MM-DD, or --from/--to for a backfill), got none"
    )
    with pytest.raises(ConfigError) as raised:
        resolve_inputs(load_experiment(config))
    assert str(raised.value) == expected
    with pytest.raises(ConfigError) as raised:  # the run refuses it before reading anything
        abrank.run_experiment(config)
    assert str(raised.value) == expected


def test_an_interleaving_tests_source_rankings_are_the_run_dates(tmp_path):
    config = write(
        tmp_path / "exp.yaml",
        "name: tiny\nlog: {path: 'logs/{date}.csv'}\n"
        "control: {name: a, path: 'runs/{date}/a.txt'}\ntreatments: [{name: b}]\n"
        "metrics: [clicks]\nanalysis: {design: interleaved, unit: user_id}\n"
        "window: {cumulative: 2026-01-01}\n",
    )
    inputs = resolve_inputs(load_experiment(config).for_date("2026-01-02"))
    root = tmp_path.resolve()
    assert inputs["log.path"].files == [
        str(root / "logs" / "2026-01-01.csv"),
        str(root / "logs" / "2026-01-02.csv"),
    ]
    assert inputs["control.path"].files == [str(root / "runs" / "2026-01-02" / "a.txt")]
    assert (inputs["log.path"].holds, inputs["control.path"].holds) == ("impressions", "rankings")
    assert inputs.get("treatments[0].path") is None  # the treatment names no source ranking


# --------------------------------------------------------------------------- globs and folders


@pytest.fixture
def partitions(tmp_path: Path) -> Path:
    """A folder of run files as a cluster job leaves it: two partitions, its markers, a
    checksum, an unfinished attempt and a hidden folder."""
    logs = tmp_path / "logs"
    write(logs / "day=2" / "part-0.txt", RUN_A[: RUN_A.index("q2")])  # q1
    write(logs / "day=1" / "part-0.txt", RUN_A[RUN_A.index("q2") :])  # q2
    write(logs / "_SUCCESS", "")
    write(logs / "day=1" / ".part-1.txt.crc", "checksum")
    write(logs / "_temporary" / "part-0.txt", "half written")
    write(logs / "_temporary" / "0" / "part-1.txt", "half written")
    write(logs / ".cache" / "part-0.txt", "not data")
    (logs / "day=3").mkdir()  # an empty partition
    return logs


def test_a_folder_holds_its_visible_files_below_it_sorted(partitions):
    config = offline_config(partitions.parent, "logs", "b.txt", "q.qrels")
    write(partitions.parent / "b.txt", RUN_B)
    write(partitions.parent / "q.qrels", QRELS)
    logs = partitions.resolve()
    files = resolve_inputs(load_experiment(config))["control.path"].files
    assert files == [str(logs / "day=1" / "part-0.txt"), str(logs / "day=2" / "part-0.txt")]


def test_a_glob_holds_its_matches_sorted(partitions):
    config = offline_config(partitions.parent, "logs/day=*/part-*.txt", "b.txt", "q.qrels")
    write(partitions.parent / "b.txt", RUN_B)
    write(partitions.parent / "q.qrels", QRELS)
    logs = partitions.resolve()
    inputs = resolve_inputs(load_experiment(config))
    assert inputs["control.path"].files == [
        str(logs / "day=1" / "part-0.txt"),
        str(logs / "day=2" / "part-0.txt"),
    ]
    # a glob holds what it matches: its `*` matches a leading `_`, not a leading dot
    wide = config.read_text().replace("logs/day=*/part-*.txt", "logs/*/part-0.txt")
    config.write_text(wide)
    assert resolve_inputs(load_experiment(config))["control.path"].files == [
        str(logs / "_temporary" / "part-0.txt"),
        str(logs / "day=1" / "part-0.txt"),
        str(logs / "day=2" / "part-0.txt"),
    ]


def test_a_folder_of_hidden_files_only_is_refused_by_the_config_and_missing_when_dated(tmp_path):
    write(tmp_path / "logs" / "_SUCCESS", "")
    write(tmp_path / "logs" / ".part-0.txt.crc", "checksum")
    write(tmp_path / "b.txt", RUN_B)
    write(tmp_path / "q.qrels", QRELS)
    config = offline_config(tmp_path, "logs", "b.txt", "q.qrels")
    with pytest.raises(ConfigError) as raised:
        load_experiment(config)
    assert (
        "expected a folder holding log files, got 'logs', whose files are all hidden "
        "(names starting with '.' or '_')"
    ) in str(raised.value)
    write(tmp_path / "days" / "2026-01-01" / "_SUCCESS", "")
    dated = offline_config(tmp_path, "days/{date}", "b.txt", "q.qrels")
    folder = str(tmp_path.resolve() / "days" / "2026-01-01")
    assert missing_inputs(load_experiment(dated).for_date("2026-01-01")) == [
        ("control.path", folder)
    ]
    with pytest.raises(DataError) as raised:  # run anyway: the folder names no file
        abrank.run_experiment(dated, date="2026-01-01", engine="duckdb")
    assert str(raised.value).endswith(": expected log files, got none matching")


def test_an_offline_arm_given_as_a_folder_reads_as_its_whole_file_on_duckdb(partitions):
    write(partitions.parent / "a.txt", RUN_A)
    write(partitions.parent / "b.txt", RUN_B)
    write(partitions.parent / "q.qrels", QRELS)
    whole = offline_config(partitions.parent, "a.txt", "b.txt", "q.qrels")
    expected = abrank.run_experiment(whole).summary
    split = write(partitions.parent / "split.yaml", whole.read_text().replace("a.txt", "logs"))
    got = abrank.run_experiment(split, engine="duckdb").summary
    assert [entry["path"].split("logs/")[-1] for entry in got["inputs"][:2]] == [
        "day=1/part-0.txt",
        "day=2/part-0.txt",
    ]
    assert [(entry["arm"], entry["rows"]) for entry in got["inputs"]] == [
        ("a", 2),
        ("a", 2),
        ("b", 4),
        (None, 2),
    ]
    assert got["comparisons"] == expected["comparisons"]


# --------------------------------------------------------------------------- formats, fingerprints


def test_formats_are_detected_as_each_files_reader_takes_them(tmp_path):
    write(tmp_path / "a.txt", RUN_A)
    write(tmp_path / "b.run", RUN_B)
    write(tmp_path / "q.txt", QRELS)  # a TREC name: read as judgments, it is qrels
    config = offline_config(tmp_path, "a.txt", "b.run", "q.txt")
    inputs = resolve_inputs(load_experiment(config))
    assert [source.format for source in inputs.sources] == ["trec", "trec", "qrels"]


def test_the_fingerprint_is_the_sha256_of_the_files_bytes(tmp_path):
    tmp_path = tmp_path.resolve()
    data = {"a.txt": RUN_A, "b.txt": RUN_B, "q.qrels": QRELS}
    for name, text in data.items():
        write(tmp_path / name, text)
    config = offline_config(tmp_path, "a.txt", "b.txt", "q.qrels")
    expected = {name: hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() for name in data}
    inputs = resolve_inputs(load_experiment(config))
    for source, name in zip(inputs.sources, data):
        assert source.sha256(source.file) == expected[name]
        assert source.entry(source.file, 4) == {
            "role": source.role,
            "arm": source.arm,
            "path": str(tmp_path / name),
            "sha256": expected[name],
            "rows": 4,
        }
    summary = abrank.run_experiment(config, inputs=inputs).summary
    assert [(entry["role"], entry["sha256"], entry["rows"]) for entry in summary["inputs"]] == [
        ("control", expected["a.txt"], 4),
        ("treatment", expected["b.txt"], 4),
        ("judgments", expected["q.qrels"], 2),
    ]


def test_inputs_of_another_date_are_refused(tmp_path):
    write(tmp_path / "b.txt", RUN_B)
    write(tmp_path / "q.qrels", QRELS)
    config = offline_config(tmp_path, "logs/{date}/a.txt", "b.txt", "q.qrels")
    experiment = load_experiment(config)
    inputs = resolve_inputs(experiment.for_date("2026-01-01"))
    with pytest.raises(ValueError, match="expected the inputs of the run dated 2026-01-02"):
        abrank.run_experiment(experiment, date="2026-01-02", inputs=inputs)


def test_a_log_format_no_sql_engine_reads_is_refused_naming_the_engine_that_runs(tmp_path):
    """An interleaving log in JSON Lines on Spark: the message names Spark (it named
    DuckDB whatever the engine), before any engine starts."""
    from abrank.analysis.engine import EngineChoice
    from abrank.designs.interleaved.sql import score_interleaved_sql

    write(tmp_path / "log.jsonl", '{"impression_id": "i1", "rank": 1, "clicked": 1}\n')
    config = write(
        tmp_path / "exp.yaml",
        "name: tiny\nlog: {path: log.jsonl}\ncontrol: {name: a}\ntreatments: [{name: b}]\n"
        "metrics: [clicks]\nanalysis: {design: interleaved, unit: user_id}\n",
    )
    experiment = load_experiment(config)
    for engine in ("duckdb", "spark"):
        with pytest.raises(ConfigError) as raised:
            score_interleaved_sql(experiment, EngineChoice(engine, {}), lambda message: None)
        assert str(raised.value) == (
            f"{tmp_path.resolve() / 'log.jsonl'}: engine {engine}: expected parquet, csv or tsv "
            "logs, got format jsonl"
        )


def test_fingerprints_meanwhile_hashes_in_a_thread_what_the_run_then_reads(tmp_path):
    """The files' sha256, computed while the block runs, by another thread; the run's own
    entries then read the kept values; a file that cannot be read is left to the run."""
    import threading

    from abrank.analysis.engine import fingerprints_meanwhile

    class Recorder:
        def __init__(self) -> None:
            self.threads: dict[str, str] = {}

        def sha256(self, file: str) -> str:
            self.threads[file] = threading.current_thread().name
            return hashlib.sha256(Path(file).read_bytes()).hexdigest()

    files = []
    for i in range(3):
        path = tmp_path / f"part-{i}.bin"
        path.write_bytes(bytes([i]) * (100_000 + i))
        files.append(str(path))
    recorder = Recorder()
    with fingerprints_meanwhile([(recorder, f) for f in files]):
        pass
    assert recorder.threads == {f: "abrank-fingerprints" for f in files}

    missing = Recorder()
    gone = str(tmp_path / "gone.bin")
    with fingerprints_meanwhile([(missing, gone), (missing, files[0])]):
        pass  # the OSError stays in the thread; the rest is left to the run
    assert list(missing.threads) == [gone]


def test_a_run_on_duckdb_records_each_files_sha256(tmp_path):
    pytest.importorskip("duckdb")
    from click_logs import make_log, write_experiment

    make_log(impressions=400).to_parquet(tmp_path / "log.parquet")
    config = write_experiment(tmp_path, extra="engine: duckdb\n")
    readout = abrank.run_experiment(config)
    (entry,) = readout.summary["inputs"]
    assert entry["sha256"] == hashlib.sha256((tmp_path / "log.parquet").read_bytes()).hexdigest()
