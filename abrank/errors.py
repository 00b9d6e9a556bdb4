"""The exception family that the CLI turns into exit code 2 and one clean message.

Every message follows ``<file>: <field or line>: expected <X>, got <Y>`` where those parts
apply, so a user can find and fix the input without reading a traceback.
"""

from __future__ import annotations

import errno
import os


class AbrankError(Exception):
    """Base of every error caused by the user's input (config or data)."""


class ConfigError(AbrankError):
    """An experiment config, a CLI option or an API argument is invalid."""


class DataError(AbrankError):
    """A ranking log or judgments file cannot be read or is malformed."""


#: OS errors that say a file cannot be written where abrank writes it (no permission, a
#: read-only file system, no room left on the disk or in the quota, a file too large):
#: the user's environment, not a bug, so exit 2 with the path and the system's reason.
_UNWRITABLE_ERRNOS = frozenset(
    getattr(errno, name)
    for name in ("EACCES", "EPERM", "EROFS", "ENOSPC", "EDQUOT", "EFBIG")
    if hasattr(errno, name)
)


def write_failure(exc: BaseException) -> AbrankError | None:
    """An OS error of a file that could not be written (:data:`_UNWRITABLE_ERRNOS`, with
    the file's name) as a ConfigError naming the file and the system's reason (``reports/
    history/x.parquet: no space left on device``); None for any other exception."""
    if not isinstance(exc, OSError) or not exc.filename:
        return None
    code = exc.errno
    if code is None or code not in _UNWRITABLE_ERRNOS:
        return None
    reason = exc.strerror or os.strerror(code)
    return ConfigError(f"{exc.filename}: {reason[:1].lower()}{reason[1:]}")
