"""Session state as JSON, so that a paused run can be resumed in another process.

Only STATE slices are persisted (LOG slices are history, not state: they are
never snapshotted or restored, and here neither). A slice is written as its
type's import name (``module:QualName``) and its values dumped by
:func:`weakprompt.serde.dump`. A slice is *persistable* when its type can be
imported back by that name and every value survives ``dump`` then
``parse`` equal to itself; any other slice is listed as unpersisted, with
the reason, instead of being written half right. Whoever restores the state
decides what an unpersisted slice means (``resume`` refuses unless the
caller hands in a session that already holds it).
"""

from __future__ import annotations

import importlib
from typing import cast

import attrs

from ..errors import WeakpromptError
from ..jsontypes import JSONObject, JSONValue
from ..serde import dump, parse
from ._session import Session

__all__ = ["PersistedState", "SessionStateError", "persist_state", "restore_state"]


class SessionStateError(WeakpromptError):
    """Persisted session state cannot be read back (a type moved, a value no longer parses)."""


@attrs.frozen
class PersistedState:
    """STATE slices as JSON: ``slices`` by type import name, ``unpersisted`` type name -> reason."""

    slices: JSONObject
    unpersisted: dict[str, str]

    def to_json(self) -> JSONObject:
        return {"slices": self.slices, "unpersisted": dict[str, JSONValue](self.unpersisted)}

    @classmethod
    def from_json(cls, data: JSONValue) -> PersistedState:
        if not isinstance(data, dict) or not isinstance(data.get("slices"), dict):
            raise SessionStateError("stored session state is not an object with 'slices'")
        unpersisted = data.get("unpersisted", {})
        if not isinstance(unpersisted, dict):
            raise SessionStateError("stored session state: 'unpersisted' is not an object")
        return cls(
            slices=cast("JSONObject", data["slices"]),
            unpersisted={str(k): str(v) for k, v in unpersisted.items()},
        )


def type_name(tp: type[object]) -> str:
    return f"{tp.__module__}:{tp.__qualname__}"


def _import(name: str) -> type[object]:
    module_name, _, qualname = name.partition(":")
    if not qualname or "<locals>" in qualname:
        raise LookupError(f"{name!r} is not an importable name")
    found: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    if not isinstance(found, type):
        raise LookupError(f"{name!r} is not a class")
    return found


def _persist_slice(tp: type[object], values: tuple[object, ...]) -> list[JSONValue]:
    """The dumped values; raises with the reason when they would not come back equal."""
    name = type_name(tp)
    if _import(name) is not tp:
        raise LookupError(f"{name!r} imports as another class")
    dumped = [dump(value) for value in values]
    for value, data in zip(values, dumped, strict=True):
        if parse(tp, data) != value:
            raise ValueError(f"a value does not read back equal after dump and parse: {value!r:.80}")
    return dumped


def persist_state(session: Session) -> PersistedState:
    """Every STATE slice of ``session`` that can be persisted; the others with the reason."""
    slices: JSONObject = {}
    unpersisted: dict[str, str] = {}
    for tp, values in session.state().items():
        name = type_name(tp)
        try:
            slices[name] = _persist_slice(tp, values)
        except Exception as exc:  # any failure means: not persistable, say why
            unpersisted[name] = f"{type(exc).__name__}: {exc}"
    return PersistedState(slices=slices, unpersisted=unpersisted)


def restore_state(session: Session, state: PersistedState) -> None:
    """Seed ``session``'s slices from ``state`` (slices it does not mention are left as they are).

    Raises :class:`SessionStateError` naming the slice whose type cannot be
    imported or whose values no longer parse; nothing is changed then.
    """
    seeded: list[tuple[type[object], tuple[object, ...]]] = []
    for name, data in state.slices.items():
        try:
            tp = _import(name)
        except Exception as exc:
            raise SessionStateError(f"session slice {name!r} cannot be restored: {exc}") from exc
        if not isinstance(data, list):
            raise SessionStateError(f"session slice {name!r}: stored values are not a list")
        try:
            values = tuple(parse(tp, item) for item in data)
        except Exception as exc:
            raise SessionStateError(
                f"session slice {name!r}: a stored value no longer parses: {exc}"
            ) from exc
        seeded.append((tp, values))
    for tp, values in seeded:
        session[tp].seed(values)
