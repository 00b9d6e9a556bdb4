"""The ``abrank`` command: run one verb, turn its errors into exit codes, stop on SIGTERM.

:func:`main` is for callers in Python (it returns the exit code); :func:`console` is the
command itself (``abrank``, ``python -m abrank``), which owns its process: the
process-wide settings of :mod:`abrank.runtime` are made there only.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import NoReturn

from abrank import runtime
from abrank.cli.exits import (
    EXIT_BAD_INPUT,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
)
from abrank.cli.parser import VERBS, parse_arguments
from abrank.errors import AbrankError, write_failure


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    runtime.one_blas_thread()
    with _stopped_by_sigterm():
        return _handle(args)


def console() -> NoReturn:
    """The ``abrank`` command and ``python -m abrank``: :func:`main`, then a quick exit.

    Once ``main`` has returned, everything is written and closed; what is left is
    Python's teardown of NumPy, pandas and SciPy's modules, about 0.2 s that a finished
    run does not need, so the process flushes its output and exits at once. (A failure
    under ``--debug`` propagates as usual, and :func:`main` itself returns normally, for
    callers in Python.)
    """
    runtime.claim_process()
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe, a closed stream
            stream.flush()
    os._exit(code)


class Terminated(BaseException):
    """SIGTERM arrived: the run unwinds (staging folders removed) and exits 143."""


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[None]:
    """SIGTERM (a cron timeout, a stopped Airflow task) raises :class:`Terminated` in the
    main thread for as long as the command runs, so that the run unwinds like any failure:
    its staging folder is removed, the previous readout and the history stay as they were."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(signum: int, frame: object) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _handle(args: argparse.Namespace) -> int:
    """Run one verb; turn errors into their exit codes."""
    handle = {verb.NAME: verb.handle for verb in VERBS}[args.verb]
    try:
        return handle(args)
    except AbrankError as exc:
        if args.debug:
            raise
        print(f"abrank: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("abrank: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("abrank: stopped by SIGTERM; no readout was left half-written", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # anything else is a bug or an environment failure
        if args.debug:
            raise
        failure = write_failure(exc)
        if failure is not None:  # a file abrank could not write: the path and the reason
            print(f"abrank: error: {failure}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(
            f"abrank: internal error: {type(exc).__name__}: {exc} (rerun with --debug for details)",
            file=sys.stderr,
        )
        return EXIT_FAILURE
