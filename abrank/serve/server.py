"""Binding and serving: a :class:`http.server.ThreadingHTTPServer` over :class:`App`.

Loopback (``127.0.0.1``) unless the caller names another host: a host that is not a
loopback address is allowed only when given explicitly, and :func:`bind_warning` says, on
stderr, that every readout under the root is then readable from the network. The handler
answers GET and HEAD; every other method is 405 (the explorer never writes).
"""

from __future__ import annotations

import ipaddress
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

from abrank.serve import DEFAULT_HOST, DEFAULT_PORT
from abrank.serve.routes import App, Response


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, ``127.x``, ``::1``)."""
    if host.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind_warning(host: str) -> str | None:
    """The warning for a host that is not loopback (None for a loopback one)."""
    if is_loopback(host):
        return None
    return (
        f"abrank: warning: serving on {host}, not loopback: every readout under the reports "
        "root is readable by anyone who can reach this machine"
    )


class Handler(BaseHTTPRequestHandler):
    """One request: :meth:`App.handle`, its answer written back (no body for HEAD)."""

    app: ClassVar[App]
    server_version = "abrank-serve"
    sys_version = ""
    quiet: ClassVar[bool] = True

    def _answer(self, method: str) -> None:
        response: Response = self.app.handle(method, self.path)
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(response.body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        """GET: the page, file or JSON."""
        self._answer("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        """HEAD: GET's head."""
        self._answer("HEAD")

    def _refuse(self) -> None:
        self._answer(self.command)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _refuse

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        """Request lines on stderr unless quiet."""
        if not self.quiet:
            super().log_message(format, *args)


class ExplorerServer(ThreadingHTTPServer):
    """The threading server, its threads daemonic (a stop never waits on a slow client)."""

    daemon_threads = True
    # a restarted explorer may take its port back at once (not another live server's)
    allow_reuse_address = True


def make_server(
    root: str | Path, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, quiet: bool = True
) -> ExplorerServer:
    """A bound (not yet serving) server of the readouts under ``root``; OSError when the
    address cannot be bound (the port in use, an unknown host)."""
    app = App(root)
    handler = type("BoundHandler", (Handler,), {"app": app, "quiet": quiet})
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("BoundServer", (ExplorerServer,), {"address_family": family})
    return server_class((host.strip("[]"), port), handler)


def serve(server: ExplorerServer, host: str) -> None:
    """Serve on the bound ``server`` until interrupted, after printing its address (and
    the warning of a host that is not loopback) on stderr."""
    warning = bind_warning(host)
    if warning:
        print(warning, file=sys.stderr)
    bound_host, bound_port = str(server.server_address[0]), int(server.server_address[1])
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"abrank serve: http://{shown}:{bound_port}/ (read-only; Ctrl-C stops)", file=sys.stderr)
    try:
        server.serve_forever()
    finally:
        server.server_close()
