"""``dump``: typed Python values back to plain JSON data (the inverse of ``parse``).

Dumping looks at the runtime value, not at an annotation, so it needs no type
argument: dataclass/attrs instances become objects keyed by their constructor
argument names, tuples become arrays, enums their values, and string-carried
types (datetime, UUID, Decimal, Path) their canonical text.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import attrs

from weakprompt.jsontypes import JSONValue
from weakprompt.serde.errors import SerdeTypeError
from weakprompt.serde.pydantic_models import is_pydantic_instance, model_dump

if TYPE_CHECKING:
    from decimal import Decimal

__all__ = ["dump"]

_SCALARS = (str, int, float, bool, type(None))
# cattrs' generated unstructuring function per class, built on the class's first dump.
_DUMPERS: dict[type, Callable[[object], dict[str, object]]] = {}


def dump(obj: object) -> JSONValue:
    """Convert ``obj`` to JSON-compatible data (dicts, lists, str, int, float, bool, None)."""
    cls = type(obj)
    if cls in _SCALARS:
        return obj  # type: ignore[return-value]  # exact builtin scalar
    dumper = _DUMPERS.get(cls)
    if dumper is not None:
        return dumper(obj)  # type: ignore[return-value]  # every value went through dump
    return _dump_other(obj, cls)


def _dump_other(obj: object, cls: type) -> JSONValue:
    if isinstance(obj, enum.Enum):
        return dump(obj.value)
    if isinstance(obj, (list, tuple)):
        return [dump(item) for item in cast("Sequence[object]", obj)]
    if isinstance(obj, Mapping):
        mapping = cast("Mapping[object, object]", obj)
        return {_dump_key(key): dump(value) for key, value in mapping.items()}
    if isinstance(obj, (dt.date, dt.time)):  # datetime is a date
        return obj.isoformat()
    text = _carried_as_text(obj)
    if text is not None:
        return text
    if isinstance(obj, str):  # subclasses of the JSON scalars dump as the plain type
        return str.__str__(obj)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj)
    if is_pydantic_instance(obj):
        dumper = _DUMPERS[cls] = model_dump  # type: ignore[assignment]  # a model dumps to an object
        return dumper(obj)  # type: ignore[return-value]
    if (dataclasses.is_dataclass(obj) or attrs.has(cls)) and not isinstance(obj, type):
        # cattrs loads with the first class dumped, not with ``import weakprompt``.
        from weakprompt.serde.converter import class_dumper

        dumper = _DUMPERS[cls] = class_dumper(cls, _field_names(cls), dump)
        return dumper(obj)  # type: ignore[return-value]  # every value went through dump
    raise SerdeTypeError(f"cannot dump a value of type {cls.__qualname__} to JSON")


def _carried_as_text(obj: object) -> str | None:
    """The text of a Decimal, UUID or path; None for anything else.

    Their modules are looked up, never imported: a value of one of their
    types cannot exist before its module is loaded, and importing serde
    should not load ``pathlib`` (and with it ``urllib``) for nothing.
    """
    modules = sys.modules
    decimal = modules.get("decimal")
    decimal_type: type[Decimal] | None = None if decimal is None else decimal.Decimal
    if decimal_type is not None and isinstance(obj, decimal_type):
        if not obj.is_finite():
            raise SerdeTypeError(f"cannot dump non-finite Decimal {obj}")
        return str(obj)
    uuid = modules.get("uuid")
    pathlib = modules.get("pathlib")
    if (uuid is not None and isinstance(obj, uuid.UUID)) or (
        pathlib is not None and isinstance(obj, pathlib.PurePath)
    ):
        return str(obj)
    return None


def _dump_key(key: object) -> str:
    if type(key) is str:
        return key
    if isinstance(key, enum.Enum) and isinstance(key.value, str):
        return key.value
    if isinstance(key, str):
        return str.__str__(key)
    raise SerdeTypeError(f"JSON object keys must be strings, got {key!r}")


def _field_names(cls: type) -> tuple[tuple[str, str], ...]:
    if attrs.has(cls):
        return tuple((field.alias or field.name, field.name) for field in attrs.fields(cls) if field.init)
    return tuple(
        (field.name, field.name)
        for field in dataclasses.fields(cls)  # pyright: ignore[reportArgumentType]
        if field.init
    )
