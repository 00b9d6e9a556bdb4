"""The exception family that the CLI turns into exit code 2 and one clean message.

Every message follows ``<file>: <field or line>: expected <X>, got <Y>`` where those parts
apply, so a user can find and fix the input without reading a traceback.
"""

from __future__ import annotations


class AbrankError(Exception):
    """Base of every error caused by the user's input (config or data)."""


class ConfigError(AbrankError):
    """An experiment config, a CLI option or an API argument is invalid."""


class DataError(AbrankError):
    """A ranking log or judgments file cannot be read or is malformed."""
