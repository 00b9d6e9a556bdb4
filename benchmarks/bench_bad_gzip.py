"""A small gzip that unpacks to a large file of garbage, as each kind of input, on each engine.

Writes gzip files of about half a megabyte that unpack to ``--unpacked-mb`` (default 200)
megabytes of garbage text (letters and digits), in three shapes:

* ``line``: a valid first line (a CSV header, a TREC line, a JSON object), then one line of
  garbage that never ends (no line break in all those megabytes);
* ``rows``: the same first line, then lines of 32 bytes of garbage without a separator;
* ``fields``: the same first line, then lines of the right shape (six fields of a TREC
  line, the header's columns, a JSON object with the log's keys) whose values are garbage.

Each is used as (a) the treatment's TREC run of an offline replay, (b) the control's CSV
ranking table of an offline replay, (c) the click log of an online A/B test, as CSV and as
JSON Lines; the other inputs of each experiment are small and valid. Then ``abrank run``
and ``abrank validate`` run on each config, on the memory and the DuckDB engines, each as a
child process of its own whose wall time and peak resident memory
(``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a launcher process) are printed against the
goal: refused (exit 2) in under 5 s and 500 MB. The CPU time of the process is printed
too, and first the same figures of a config whose input is missing (exit 2 before any
file is read): the floor of starting Python and importing abrank, which on a loaded machine
is most of the wall time.

    python benchmarks/bench_bad_gzip.py                          # every case, 200 MB each
    python benchmarks/bench_bad_gzip.py --cases trec-line,online-csv-rows --engines memory
    python benchmarks/bench_bad_gzip.py --unpacked-mb 20 --timeout 60

``--good ROWS`` times instead the readers on valid files of about ROWS rows each (a TREC
run with spaces and one with tabs, a CSV ranking table, CSV and JSON Lines click logs, all
gzip-compressed; the memory engine's readers, and the DuckDB engine's opening of the CSV
table and the CSV log), best of three in this process, to compare the code before and after
a change to the readers (run it once with each on ``PYTHONPATH``).

    python benchmarks/bench_bad_gzip.py --good 2000000
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 5.0
GOAL_MB = 500.0
ENGINES = ("memory", "duckdb")
COMMANDS = ("run", "validate")

#: input -> (kind of experiment, file name of the bomb, its first (valid) line, the names
#: of the fields of a line of the ``fields`` shape, their separator)
INPUTS: dict[str, tuple[str, str, bytes, int, bytes]] = {
    "trec": ("offline-trec", "treatment.run.gz", b"q1 Q0 d1 1 2.5 tag\n", 6, b" "),
    "csv": ("offline-csv", "control.csv.gz", b"query_id,doc_id,rank,score\n", 4, b","),
    "online-csv": (
        "online",
        "log.csv.gz",
        b"impression_id,user_id,arm,doc_id,rank,clicked\n",
        6,
        b",",
    ),
    "online-jsonl": (
        "online",
        "log.jsonl.gz",
        b'{"impression_id": "i1", "user_id": "u1", "arm": "a", "doc_id": "d1", '
        b'"rank": 1, "clicked": 0}\n',
        6,
        b"json",
    ),
}
_JSON_KEYS = (b"impression_id", b"user_id", b"arm", b"doc_id", b"rank", b"clicked")
#: line: one line of garbage that never ends; rows: lines of garbage without a separator;
#: fields: lines with the right separators between fields of garbage
SHAPES = ("line", "rows", "fields")
CASES = [f"{name}-{shape}" for name in INPUTS for shape in SHAPES]

_LETTERS = b"abcdefghijklmnopqrstuvwxyz0123456789"

# Runs a command as its only child and reports the child's wall time and peak RSS.
_LAUNCHER = textwrap.dedent("""\
    import json, resource, subprocess, sys, time
    command, timeout = json.loads(sys.argv[1]), float(sys.argv[2])
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        code, stderr = done.returncode, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, stderr = None, (exc.stderr or b"").decode("utf-8", "replace")
    wall = time.perf_counter() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_mb = usage.ru_maxrss / 2**20 if sys.platform == "darwin" else usage.ru_maxrss / 1024
    cpu = usage.ru_utime + usage.ru_stime
    print(json.dumps({"returncode": code, "wall": wall, "cpu": cpu, "peak_mb": peak_mb,
                      "stderr": stderr}))
""")


def garbage(rng: random.Random, size: int, line_length: int | None) -> bytes:
    """``size`` bytes of letters and digits (no separator of any format), cut into lines of
    ``line_length`` bytes (newline included) or in one piece."""
    text = bytearray(rng.choice(_LETTERS) for _ in range(size))
    if line_length:
        text[line_length - 1 :: line_length] = b"\n" * len(text[line_length - 1 :: line_length])
    return bytes(text)


def garbage_row(rng: random.Random, fields: int, separator: bytes) -> bytes:
    """One line of ``fields`` fields of garbage (4 letters each) and the format's
    separators: a TREC or CSV line, or a JSON object with the log's keys."""
    words = [garbage(rng, 4, None) for _ in range(fields)]
    if separator == b"json":
        pairs = b", ".join(b'"%s": "%s"' % (key, word) for key, word in zip(_JSON_KEYS, words))
        return b"{" + pairs + b"}\n"
    return separator.join(words) + b"\n"


def write_bomb(path: Path, case: str, unpacked_mb: int, seed: int = 1) -> int:
    """Write the gzip file of ``case``; return its size in bytes.

    Each megabyte repeats a new short piece of garbage (32 bytes, or one line of the
    ``fields`` shape): deflate codes each repeat of 258 bytes in about 10 bits, so the file
    is about 2.5 to 4 KB a megabyte: small, but not the same megabyte over and over.
    """
    name, shape = case.rsplit("-", 1)
    _, _, first, fields, separator = INPUTS[name]
    rng = random.Random(seed)
    chunk_size = 1 << 20
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as out:
        out.write(deflate.compress(first))
        for _ in range(unpacked_mb):
            if shape == "fields":
                piece = garbage_row(rng, fields, separator)
            else:
                piece = garbage(rng, 32, 32 if shape == "rows" else None)
            out.write(deflate.compress(piece * (chunk_size // len(piece))))
        out.write(deflate.flush())
    return path.stat().st_size


def write_inputs(folder: Path) -> None:
    """The small valid inputs the bombs stand beside."""
    folder.mkdir(parents=True, exist_ok=True)
    qrels, run, table = [], [], ["query_id,doc_id,rank,score"]
    for q in range(1, 31):
        for d in range(1, 11):
            qrels.append(f"q{q}\t0\td{d}\t{int(d % 3 == 0)}")
            run.append(f"q{q} Q0 d{d} {d} {20 - d}.5 control")
            table.append(f"q{q},d{d},{d},{20 - d}.5")
    (folder / "judgments.qrels").write_text("\n".join(qrels) + "\n")
    (folder / "control.run").write_text("\n".join(run) + "\n")
    (folder / "treatment.csv").write_text("\n".join(table) + "\n")


def write_config(folder: Path, case: str, engine: str) -> Path:
    """One experiment config using the case's bomb, on ``engine``."""
    kind, bomb = INPUTS[case.rsplit("-", 1)[0]][:2]
    if kind == "offline-trec":
        body = (
            "control: {name: control, path: data/control.run}\n"
            f"treatments: [{{name: treatment, path: data/{case}-{bomb}}}]\n"
            "judgments: {path: data/judgments.qrels}\n"
            "metrics: [mrr@10]\n"
        )
    elif kind == "offline-csv":
        body = (
            f"control: {{name: control, path: data/{case}-{bomb}}}\n"
            "treatments: [{name: treatment, path: data/treatment.csv}]\n"
            "judgments: {path: data/judgments.qrels}\n"
            "metrics: [mrr@10]\n"
        )
    else:
        body = (
            f"log: {{path: data/{case}-{bomb}}}\n"
            "control: {name: a}\n"
            "treatments: [{name: b}]\n"
            "metrics: [click_rr@10]\n"
            "analysis: {design: independent, unit: user_id}\n"
        )
    path = folder / f"{case}-{engine}.yaml"
    path.write_text(f"name: bomb-{case}\n{body}engine: {engine}\n")
    return path


def write_good(folder: Path, rows: int) -> dict[str, Path]:
    """Valid gzip inputs of about ``rows`` rows each (reused when present)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {
        "trec run (spaces)": folder / f"run-{rows}.txt.gz",
        "trec run (tabs)": folder / f"run-tabs-{rows}.txt.gz",
        "csv ranking table": folder / f"rankings-{rows}.csv.gz",
        "csv click log": folder / f"log-{rows}.csv.gz",
        "jsonl click log": folder / f"log-{rows}.jsonl.gz",
    }
    if all(path.exists() for path in paths.values()):
        return paths
    docs = 50
    queries = max(rows // docs, 1)

    def write(path: Path, head: str, line) -> None:
        with gzip.open(path, "wt", compresslevel=1) as out:
            out.write(head)
            for q in range(queries):
                out.write("".join(line(q, d) for d in range(1, docs + 1)))

    write(paths["trec run (spaces)"], "", lambda q, d: f"q{q} Q0 d{q * 7 + d} {d} {99 - d}.5 s\n")
    write(
        paths["trec run (tabs)"], "", lambda q, d: f"q{q}\tQ0\td{q * 7 + d}\t{d}\t{99 - d}.5\ts\n"
    )
    write(
        paths["csv ranking table"],
        "query_id,doc_id,rank,score\n",
        lambda q, d: f"q{q},d{q * 7 + d},{d},{99 - d}.5\n",
    )
    write(
        paths["csv click log"],
        "impression_id,user_id,doc_id,rank,clicked,arm\n",
        lambda q, d: f"i{q},u{q // 5},d{d},{d},{int(d == q % 7 + 1)},{'ab'[q // 5 % 2]}\n",
    )
    write(
        paths["jsonl click log"],
        "",
        lambda q, d: (
            json.dumps(
                {
                    "impression_id": f"i{q}",
                    "user_id": f"u{q // 5}",
                    "doc_id": f"d{d}",
                    "rank": d,
                    "clicked": int(d == q % 7 + 1),
                    "arm": "ab"[q // 5 % 2],
                }
            )
            + "\n"
        ),
    )
    return paths


def time_good(paths: dict[str, Path]) -> None:
    """Print the best of three timings of each reader on the valid files."""
    import time

    from abrank.io import read_impressions, read_rankings

    calls = {
        name: (lambda p=path, f=("trec" if "trec" in name else None): read_rankings(p, format=f))
        for name, path in paths.items()
        if "click" not in name
    }
    calls.update(
        {
            name: (lambda p=path: read_impressions(p))
            for name, path in paths.items()
            if "click" in name
        }
    )
    try:
        from abrank.engines.sql.clicks import ClickRequest, LogSource, click_aggregates
        from abrank.engines.sql.duckdb import DuckDBBackend
        from abrank.engines.sql.rankings import TableSource, open_rankings
        from abrank.metrics import parse_metric
    except ImportError:
        pass
    else:

        def duckdb_log() -> None:
            backend = DuckDBBackend()
            request = ClickRequest(metrics=(parse_metric("ctr@3"),), arms=("a", "b"))
            log = paths["csv click log"]
            try:
                click_aggregates(backend, [LogSource((str(log),), "csv", log.name)], request)
            finally:
                backend.close()

        def duckdb_table() -> None:
            backend = DuckDBBackend()
            table = paths["csv ranking table"]
            try:
                opened = open_rankings(backend, "t", TableSource((str(table),), "csv", table.name))
                backend.run(f"SELECT COUNT(*) FROM {opened.sql} AS r")
            finally:
                backend.close()

        calls["duckdb: csv click log (ctr@3 sums)"] = duckdb_log
        calls["duckdb: csv ranking table (opened)"] = duckdb_table
    print(f"{'valid input':<38} {'rows':>10} {'best of 3 s':>12}")
    for name, call in calls.items():
        best, rows = float("inf"), None
        for _ in range(3):
            start = time.perf_counter()
            result = call()
            best = min(best, time.perf_counter() - start)
            rows = len(result) if result is not None else rows
        print(f"{name:<38} {rows if rows is not None else '':>10} {best:12.3f}", flush=True)


def measure(command: list[str], timeout: float) -> dict:
    """Wall time, peak memory, exit code and message of one child process."""
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, json.dumps(command), str(timeout)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unpacked-mb", type=int, default=200, help="garbage per file (MB)")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated engines")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="run, validate")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per command")
    parser.add_argument("--good", type=int, help="time the readers on valid files of ROWS rows")
    parser.add_argument(
        "--workdir",
        type=Path,
        default=ROOT / "benchmarks" / "scratch" / "bad_gzip",
        help="where the files, configs and readouts go (default benchmarks/scratch/bad_gzip)",
    )
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")
    workdir = args.workdir.resolve()
    if args.good:
        time_good(write_good(workdir / "good", args.good))
        return 0
    data = workdir / "data"
    write_inputs(data)
    print(f"{'bomb':<36} {'gzip KB':>8} {'unpacked MB':>12}")
    for case in cases:
        bomb = INPUTS[case.rsplit("-", 1)[0]][1]
        size = write_bomb(data / f"{case}-{bomb}", case, args.unpacked_mb)
        print(f"{case + '-' + bomb:<36} {size / 1024:8.0f} {args.unpacked_mb:12d}")
    print()
    header = (
        f"{'case':<20} {'engine':<7} {'command':<9} {'exit':>4} {'wall s':>7} {'cpu s':>6} "
        f"{'peak MB':>8}  goal (message below)"
    )
    print(header)
    print("-" * len(header))
    met = True
    floor = workdir / "floor.yaml"
    floor.write_text(
        "name: floor\ncontrol: {name: control, path: data/missing.run}\n"
        "treatments: [{name: treatment, path: data/control.run}]\n"
        "judgments: {path: data/judgments.qrels}\nmetrics: [mrr@10]\n"
    )
    result = measure([sys.executable, "-m", "abrank", "validate", str(floor)], args.timeout)
    print(
        f"{'(floor: no file read)':<20} {'-':<7} {'validate':<9} {result['returncode']:>4} "
        f"{result['wall']:7.2f} {result['cpu']:6.2f} {result['peak_mb']:8.0f}",
        flush=True,
    )
    for case in cases:
        for engine in args.engines.split(","):
            config = write_config(workdir, case, engine)
            for verb in args.commands.split(","):
                command = [sys.executable, "-m", "abrank", verb, str(config)]
                if verb == "run":
                    out = workdir / "out" / config.stem
                    shutil.rmtree(out, ignore_errors=True)
                    command += ["--out", str(out), "--no-history", "--quiet"]
                result = measure(command, args.timeout)
                code = result["returncode"]
                ok = code == 2 and result["wall"] < GOAL_SECONDS and result["peak_mb"] < GOAL_MB
                met &= ok
                lines = result["stderr"].strip().splitlines()
                message = lines[-1] if lines else ""
                for prefix in (f"{workdir}/", f"{workdir.relative_to(ROOT)}/"):
                    message = message.replace(prefix, "")
                if code is None:
                    message = f"(killed after {args.timeout:.0f} s)"
                print(
                    f"{case:<20} {engine:<7} {verb:<9} {'-' if code is None else code:>4} "
                    f"{result['wall']:7.2f} {result['cpu']:6.2f} {result['peak_mb']:8.0f}  "
                    f"{'met' if ok else 'NOT'}",
                    flush=True,
                )
                print(textwrap.indent(textwrap.fill(message, 96), "    "), flush=True)
    print(
        f"\ngoal (exit 2 in under {GOAL_SECONDS:.0f} s and {GOAL_MB:.0f} MB): "
        f"{'met by every case' if met else 'NOT met by every case'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
