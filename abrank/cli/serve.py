"""``abrank serve``: a read-only local explorer of every readout under a reports root
(:mod:`abrank.serve`)."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path

from abrank.cli.exits import EXIT_OK
from abrank.errors import ConfigError

NAME = "serve"
SUMMARY = "Explore every readout under a reports root in the browser (read-only, local)."
EXAMPLE = (
    "abrank serve reports --port 8765\n\n"
    "Then open http://127.0.0.1:8765/: the experiments with their decisions and trends, each\n"
    "readout's query table (filter by segment and tag, sort by delta), each query's lists\n"
    "side by side. JSON under /api/experiments. Binds 127.0.0.1 unless --host says otherwise."
)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments of ``abrank serve``."""
    from abrank.serve import DEFAULT_HOST, DEFAULT_PORT

    parser.add_argument(
        "root",
        nargs="?",
        default="reports",
        metavar="REPORTS_DIR",
        help="the reports root: one folder per experiment (default: reports)",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"the address to listen on (default: {DEFAULT_HOST}; another than loopback "
        "makes every readout readable from the network, and says so)",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help=f"the port (default: {DEFAULT_PORT}; 0: any free one)",
    )


def handle(args: argparse.Namespace) -> int:
    """Check the root, bind, serve until Ctrl-C; a bad root or a port in use is a
    ConfigError (exit 2, one line)."""
    from abrank.serve.server import make_server, serve

    root = Path(args.root)
    if not root.is_dir():
        found = "a file" if root.exists() else "no such folder"
        raise ConfigError(f"REPORTS_DIR {args.root}: expected a folder of readouts, got {found}")
    try:
        server = make_server(root, args.host, args.port, quiet=False)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"--port {args.port}: expected a free port on {args.host}, got one in use"
            ) from None
        raise ConfigError(
            f"--host {args.host} --port {args.port}: cannot listen there ({exc.strerror or exc})"
        ) from None
    serve(server, args.host)
    return EXIT_OK
