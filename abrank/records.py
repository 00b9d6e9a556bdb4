"""Records: frozen dataclasses whose fields are the keys of a JSON object.

Every section of ``summary.json`` (:mod:`abrank.readout.model`) and the comparison record
itself (:class:`abrank.stats.Comparison`) is one: ``to_dict`` writes the fields in their
declared order and ``from_dict`` reads a parsed JSON object back by the fields' type
hints, with an error naming the key path where a key is missing or holds the wrong kind
of value.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, ClassVar, TypeVar, Union

from abrank.errors import DataError

_Record = TypeVar("_Record", bound="Record")


class Record:
    """A section of the summary: a frozen dataclass whose fields are its JSON keys.

    ``to_dict`` writes the fields in their declared order (then ``extra``), nested records
    as dicts and tuples as lists; ``from_dict`` converts back by the fields' type hints and
    raises :class:`DataError` naming the key path when a key is missing or has the wrong kind
    of value. Fields with a default may be absent from a saved summary; a field listed in
    ``OMITTED_WHEN_NONE`` is not written while it is None (a key only some readouts have).
    """

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset()
    #: read JSON null as NaN where a field (or an item of it) is a plain ``float``: the
    #: record holds a number that was not finite or not computed as NaN, which its
    #: ``to_dict`` writes as null
    NULL_AS_NAN: ClassVar[bool] = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins, keys in the order summary.json has them."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            if field.name == "extra":
                continue
            value = getattr(self, field.name)
            if value is None and field.name in self.OMITTED_WHEN_NONE:
                continue
            out[field.name] = _to_json(value)
        out.update(_to_json(getattr(self, "extra", None) or {}))
        return out

    @classmethod
    def from_dict(cls: type[_Record], data: Any, where: str = "summary") -> _Record:
        """The record that ``data`` (a parsed JSON object) describes; ``where`` names it in
        errors (``summary.comparisons[3]``)."""
        if not isinstance(data, dict):
            raise DataError(f"{where}: expected an object, got {_kind(data)}")
        hints = field_hints(cls)
        values: dict[str, Any] = {}
        named = set()
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            if field.name == "extra":
                continue
            named.add(field.name)
            if field.name not in data:
                if _has_default(field):
                    continue
                raise DataError(f"{where}.{field.name}: expected a value, got no such key")
            values[field.name] = _from_json(
                data[field.name], hints[field.name], f"{where}.{field.name}", cls.NULL_AS_NAN
            )
        if any(f.name == "extra" for f in dataclasses.fields(cls)):  # type: ignore[arg-type]
            values["extra"] = {k: v for k, v in data.items() if k not in named}
        return cls(**values)


_HINTS: dict[type, dict[str, Any]] = {}


def field_hints(cls: type) -> dict[str, Any]:
    """The types of a record class's fields, resolved once per class: ``get_type_hints``
    evaluates every annotation's text, which cost more than reading a comparison."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls)
    return hints


def _has_default(field: dataclasses.Field) -> bool:
    return (
        field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
    )


def _to_json(value: Any) -> Any:
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(item) for item in value]
    return value


def _kind(value: Any) -> str:
    """How a JSON value is called in a message."""
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    names.update({list: "a list", dict: "an object"})
    return names.get(type(value), type(value).__name__)


def _from_json(value: Any, hint: Any, where: str, nan: bool = False) -> Any:
    """``value`` converted to the type ``hint`` names (records, tuples, dicts, scalars);
    ``nan``: null where ``hint`` is a plain ``float`` is NaN."""
    if nan and value is None and hint is float:
        return math.nan
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        if len(options) == 1:
            return _from_json(value, options[0], where, nan)
        for option in options:  # e.g. float | str: the first kind that fits
            if _fits(value, option):
                return _from_json(value, option, where, nan)
        raise DataError(f"{where}: expected {_expected(hint)}, got {_kind(value)}")
    if isinstance(hint, type) and issubclass(hint, Record):
        return hint.from_dict(value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise DataError(f"{where}: expected a list, got {_kind(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json(v, args[0], f"{where}[{i}]", nan) for i, v in enumerate(value))
        if len(value) != len(args):
            raise DataError(f"{where}: expected a list of {len(args)}, got {len(value)} items")
        return tuple(
            _from_json(v, a, f"{where}[{i}]", nan) for i, (v, a) in enumerate(zip(value, args))
        )
    if origin is dict:
        if not isinstance(value, dict):
            raise DataError(f"{where}: expected an object, got {_kind(value)}")
        return {k: _from_json(v, args[1], f"{where}.{k}", nan) for k, v in value.items()}
    if not _fits(value, hint):
        raise DataError(f"{where}: expected {_expected(hint)}, got {_kind(value)}")
    return value


def _fits(value: Any, hint: Any) -> bool:
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    origin = typing.get_origin(hint) or hint
    if isinstance(origin, type) and issubclass(origin, Record):
        return isinstance(value, dict)
    if origin is tuple:
        return isinstance(value, list)
    return isinstance(value, origin) if isinstance(origin, type) else True


def _expected(hint: Any) -> str:
    if hint is Any:
        return "a value"
    if typing.get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_expected(a) for a in typing.get_args(hint))
    origin = typing.get_origin(hint) or hint
    if origin is type(None):
        return "null"
    if isinstance(origin, type) and issubclass(origin, Record):
        return "an object"
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    names.update({tuple: "a list", dict: "an object", list: "a list"})
    return names.get(origin, str(origin))
