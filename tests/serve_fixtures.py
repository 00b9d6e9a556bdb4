"""What the explorer's tests share: a reports root holding the demo readout, and the
server running on it in a thread (port 0: any free port).

The root is built by ``abrank run`` on the bundled demo (in a child process, as a user
runs it), so that it holds what the command really writes: the readout folder with its
explanation tables, the history store and index.html. Beside it: a copy of the readout as
a dated readout (``demo-reranker/2026-11-02/``), a date the history records without a
folder (2026-11-01), and a copy whose query q00033 is renamed
``<script>alert(1)</script>`` (``xss-demo``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "experiments" / "demo-reranker.yaml"
NAME = "demo-reranker"
DATED = "2026-11-02"
RECORDED_ONLY = "2026-11-01"
XSS = "<script>alert(1)</script>"
XSS_NAME = "xss-demo"
#: a demo query whose id becomes :data:`XSS` in the ``xss-demo`` copy
RENAMED = "q00033"


def build_root(base: Path) -> Path:
    """A reports root under ``base`` holding the demo readout and the extras of the
    module text; returns the root."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-m", "abrank", "run", str(DEMO), "--quiet"],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    root = base / "reports"
    folder = root / NAME
    shutil.copytree(folder, base / "dated-copy")
    shutil.move(base / "dated-copy", folder / DATED)
    from abrank.history import read_history, write_history

    rows = read_history(root, NAME)
    rows = rows[rows["date"] == rows["date"].max()].assign(date=RECORDED_ONLY)
    write_history(root, NAME, RECORDED_ONLY, rows)
    xss = root / XSS_NAME
    shutil.copytree(folder, xss, ignore=shutil.ignore_patterns("20*"))
    for table in ("queries.parquet", "rankings.parquet"):
        frame = pd.read_parquet(xss / table)
        frame["query_id"] = frame["query_id"].replace(RENAMED, XSS)
        frame.to_parquet(xss / table, index=False)
    return root


@contextlib.contextmanager
def running(root: Path) -> Iterator[str]:
    """The explorer serving ``root`` on 127.0.0.1 at a free port, in a thread; yields
    its base URL and stops it afterwards."""
    from abrank.serve.server import make_server

    server = make_server(root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def request(base: str, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of ``method path`` sent as written (no normalisation of
    ``..`` or of percent-escapes, unlike a browser or urllib's URL handling)."""
    host = base.removeprefix("http://")
    connection = http.client.HTTPConnection(host, timeout=60)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def get_json(base: str, path: str) -> tuple[int, dict]:
    """(status, decoded JSON body) of ``GET path``."""
    status, _, body = request(base, path)
    return status, json.loads(body)
