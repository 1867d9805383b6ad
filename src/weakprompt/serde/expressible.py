"""Which part of a type JSON cannot express, named by its field path.

``schema(tp)`` refuses a type as a whole; a definition (a tool's params or
result, a prompt's output) wants to say *which* field is the problem, so the
person who wrote it can find the line. :func:`unexpressible` walks into the type only
after ``schema`` has refused it, and stops at the innermost part it refuses.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Collection
from typing import Annotated, get_args, get_origin

import attrs

from weakprompt.serde.errors import SerdeTypeError
from weakprompt.serde.schemas import schema

__all__ = ["Unexpressible", "describe_type", "unexpressible", "unexpressible_fields"]


@attrs.frozen
class Unexpressible:
    """The innermost part of a type serde cannot map, and where it sits."""

    path: str
    """Dotted field path from the outer type (``""``: the type itself); ``[]`` marks an item."""
    type: object
    reason: str

    def describe(self, what: str, role: str) -> str:
        """``"<what>: <role> field 'a.b' (<type>) cannot be expressed as JSON: <reason>"``."""
        where = f"{role} field {self.path!r}" if self.path else f"{role} type"
        return f"{what}: {where} ({describe_type(self.type)}) cannot be expressed as JSON: {self.reason}"


def describe_type(tp: object) -> str:
    """A class as ``module.Name``; any other annotation as Python prints it."""
    if isinstance(tp, type):
        module = tp.__module__
        return tp.__qualname__ if module == "builtins" else f"{module}.{tp.__qualname__}"
    return repr(tp)


def unexpressible(tp: object) -> Unexpressible | None:
    """``None`` when serde can map ``tp`` to JSON; else the innermost part it cannot."""
    try:
        schema(tp)
    except SerdeTypeError as exc:
        return _locate(tp, "", str(exc))
    return None


def unexpressible_fields(tp: object, names: Collection[str]) -> Unexpressible | None:
    """:func:`unexpressible` for the fields ``names`` of ``tp`` only (a dataclass or attrs class).

    A prompt section puts into its text only the fields its placeholders
    name, each as JSON; its other fields (read by an ``enabled`` predicate)
    need not be expressible.
    """
    for step, child in _parts(tp):
        if step in names:
            problem = unexpressible(child)
            if problem is not None:
                return attrs.evolve(problem, path=_join(step, problem.path))
    return None


def _locate(tp: object, path: str, reason: str) -> Unexpressible:
    for step, child in _parts(tp):
        try:
            schema(child)
        except SerdeTypeError as exc:
            return _locate(child, _join(path, step), str(exc))
    return Unexpressible(path=path, type=tp, reason=reason)


def _join(path: str, step: str) -> str:
    if not step or step.startswith("["):
        return path + step
    return f"{path}.{step}" if path else step


def _parts(tp: object) -> list[tuple[str, object]]:
    """The parts of ``tp`` that have a type of their own, each with its step in the path."""
    origin = get_origin(tp)
    if origin is Annotated:
        return [("", get_args(tp)[0])]
    if origin is typing.Union or origin is types.UnionType:
        return [("", arg) for arg in get_args(tp)]
    if isinstance(origin, type) and issubclass(origin, Collection):  # not Callable[...] and the like
        return [("[]", arg) for arg in get_args(tp) if arg is not Ellipsis]
    if origin is not None:
        return []
    if not isinstance(tp, type):
        return []
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception:  # unresolvable annotations: the class itself is the problem
        return []
    if attrs.has(tp):
        names = [field.name for field in attrs.fields(tp)]
    elif dataclasses.is_dataclass(tp):
        names = [field.name for field in dataclasses.fields(tp)]
    else:
        return []
    return [(name, hints[name]) for name in names if name in hints]
