"""The exit codes of the ``abrank`` command (those of a batch of runs: :mod:`abrank.batch`)."""

from __future__ import annotations

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2
#: Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130
#: stopped by SIGTERM (128 + SIGTERM, as a shell reports it)
EXIT_TERMINATED = 143
