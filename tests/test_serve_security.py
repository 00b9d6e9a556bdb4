"""``abrank serve``'s safety: loopback by default, a warning for any other host, read-only,
names from URLs checked against the readouts that exist, files served only from a readout
folder's own listing, every value escaped, nothing loaded from the network."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from urllib.parse import quote

import pytest
from serve_fixtures import NAME, RENAMED, ROOT, XSS, XSS_NAME, build_root, request, running

from abrank.cli.parser import parse_arguments
from abrank.serve.server import bind_warning, is_loopback, make_server

TRAVERSALS = (
    "/e/../../etc/passwd",
    "/e/%2e%2e/%2e%2e/etc/passwd",
    "/e/..%2f..%2fetc%2fpasswd",
    "/e/%252e%252e%252f%252e%252e%252fetc%252fpasswd",
    "/e/%2e%2e%2f%2e%2e%2fetc%2fpasswd/files/x",
    f"/e/{NAME}/files/../../../etc/passwd",
    f"/e/{NAME}/files/..%2f..%2f..%2fetc%2fpasswd",
    f"/e/{NAME}/files/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    f"/e/{NAME}/files/%252e%252e%252f%252e%252e%252fetc%252fpasswd",
    f"/e/{NAME}/files//etc/passwd",
    f"/e/{NAME}/files/%2fetc%2fpasswd",
    "/api/experiments/..%2f..%2fetc%2fpasswd/queries",
    "/api/experiments/%2e%2e/queries",
    "/h/..%2f..%2fetc/passwd",
    f"/e/{NAME}/q/..%2f..%2f..%2fetc%2fpasswd",
    "/e/history",
    "/e/index.html",
)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = build_root(tmp_path_factory.mktemp("serve-security"))
    with running(root) as base:
        yield root, base


def test_the_default_host_is_loopback():
    args = parse_arguments(["serve"])
    assert (args.host, args.port, args.root) == ("127.0.0.1", 8765, "reports")
    server = make_server(".", port=0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.0.0.2"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "192.168.1.4", "example.org"))
    assert bind_warning("127.0.0.1") is None
    assert "not loopback" in (bind_warning("0.0.0.0") or "")


def test_a_host_other_than_loopback_prints_a_warning(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "abrank",
            "serve",
            str(tmp_path),
            "--host",
            "0.0.0.0",
            "--port",
            "0",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = process.stderr.readline()
        second = process.stderr.readline()
    finally:
        process.terminate()
        process.wait(30)
        process.stderr.close()
    assert first.startswith("abrank: warning: serving on 0.0.0.0, not loopback"), first
    assert "http://0.0.0.0:" in second


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_only_get_and_head_are_answered(served, method):
    root, base = served
    before = sorted(p.name for p in (root / NAME).iterdir())
    for path in (
        "/",
        f"/e/{NAME}",
        f"/api/experiments/{NAME}/queries",
        f"/e/{NAME}/files/report.html",
    ):
        status, headers, body = request(base, path, method)
        assert status == 405, (method, path)
        assert headers["Allow"] == "GET, HEAD"
    assert json.loads(request(base, "/api/experiments", method)[2])["status"] == 405
    assert sorted(p.name for p in (root / NAME).iterdir()) == before


def test_head_answers_the_head_of_get(served):
    _, base = served
    status, headers, body = request(base, f"/e/{NAME}", "HEAD")
    full = request(base, f"/e/{NAME}")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) == len(full[2]) > 1000


@pytest.mark.parametrize("path", TRAVERSALS)
def test_names_from_the_url_never_reach_the_file_system_unchecked(served, path):
    _, base = served
    status, _, body = request(base, path)
    assert status == 404, path
    assert b"root:" not in body


def test_files_are_served_only_from_the_folders_own_listing(served):
    root, base = served
    folder = root / NAME
    status, headers, body = request(base, f"/e/{NAME}/files/charts/forest.png")
    assert status == 200 and headers["Content-Type"] == "image/png"
    assert body == (folder / "charts" / "forest.png").read_bytes()
    # a file put into the folder afterwards is not in its listing
    (folder / "notes.txt").write_text("not part of the readout")
    assert request(base, f"/e/{NAME}/files/notes.txt")[0] == 404
    # a link listed in the manifest but pointing outside the folder is refused
    os.symlink("/etc/passwd", folder / "leak.txt")
    manifest = folder / ".abrank-readout"
    data = json.loads(manifest.read_text())
    data["files"] += ["leak.txt", "../../../etc/passwd"]
    manifest.write_text(json.dumps(data))
    for name in ("leak.txt", "..%2f..%2f..%2fetc%2fpasswd", ".abrank-readout"):
        status, _, body = request(base, f"/e/{NAME}/files/{name}")
        assert status == 404 and b"root:" not in body, name
    # a dated readout's folder does not lend its files to the undated one's key
    assert request(base, f"/e/{NAME}/files/2026-11-02/summary.json")[0] == 404


def test_a_script_query_id_shows_as_text(served):
    root, base = served
    assert XSS_NAME.encode() in request(base, "/api/experiments")[2]
    status, _, body = request(base, f"/e/{XSS_NAME}?sort=query_id&limit=5")
    page = body.decode()
    assert status == 200
    assert XSS not in page and "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    link = re.search(r'<a class="query" href="([^"]+)"', page)[1]
    assert link == f"/e/{XSS_NAME}/q/{quote(XSS, safe='')}?metric=mrr%4010"
    status, _, body = request(base, link.split("?")[0])
    page = body.decode()
    assert status == 200
    assert XSS not in page and "<script" not in page
    assert '<span class="qid">&lt;script&gt;alert(1)&lt;/script&gt;</span>' in page
    status, headers, body = request(
        base, f"/api/experiments/{XSS_NAME}/queries/{quote(XSS, safe='')}"
    )
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    assert json.loads(body)["query_id"] == XSS
    assert request(base, f"/api/experiments/{XSS_NAME}/queries/{RENAMED}")[0] == 404
    # an error page echoing a bad value escapes it too
    status, _, body = request(base, f"/e/{XSS_NAME}?sort={quote(XSS, safe='')}")
    assert status == 400 and b"<script" not in body


def test_no_page_loads_anything_from_the_network(served):
    _, base = served
    for path in ("/", f"/e/{NAME}", f"/e/{NAME}/q/q00000", f"/h/{NAME}/2026-11-01"):
        status, headers, body = request(base, path)
        page = body.decode()
        assert status == 200, path
        assert "default-src 'none'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert not re.search(r"(src|href)=\"(https?:)?//", page), path
        assert "<script" not in page and "@import" not in page
