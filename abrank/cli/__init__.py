"""The ``abrank`` command line: a thin layer over the library.

One module per verb (:mod:`~abrank.cli.run`, :mod:`~abrank.cli.validate`,
:mod:`~abrank.cli.metrics`, :mod:`~abrank.cli.compare`, :mod:`~abrank.cli.history`,
:mod:`~abrank.cli.serve`, :mod:`~abrank.cli.interleave`, :mod:`~abrank.cli.simulate`,
:mod:`~abrank.cli.demo_data`),
each parsing its arguments and calling the library; :mod:`~abrank.cli.parser` builds the
parser from them, :mod:`~abrank.cli.options` holds the options several verbs share, and
:mod:`~abrank.cli.command` runs a verb and maps its errors to exit codes.

Exit codes: 0 success; 2 bad input (config, data, options), reported as one clean message
that names the file, line or field; 3 an alert named by ``--fail-on`` fired (the readout
written); 99 an input of the run's date does not exist yet and ``--missing skip`` was given;
143 stopped by SIGTERM; 1 anything else (:mod:`abrank.batch`). ``--debug`` shows tracebacks.
"""

from __future__ import annotations

from abrank.cli.command import console, main
from abrank.cli.parser import build_parser

__all__ = ["build_parser", "console", "main"]
