"""``parse``: JSON-like data to a typed value, with every problem reported.

Parsers are compiled once per ``(type, extra, coerce)`` and cached, so a call is
a dictionary lookup plus the checks themselves.
"""

from __future__ import annotations

import threading
from typing import Literal, TypeVar, overload

from weakprompt.serde.errors import SerdeError, SerdeIssue, join_path
from weakprompt.serde.parser_types import BAD, Parser, RawIssue

__all__ = ["ExtraPolicy", "parse"]

T = TypeVar("T")
ExtraPolicy = Literal["forbid", "ignore"]

_PARSERS: dict[tuple[object, str, bool], Parser] = {}
_LOCK = threading.Lock()


@overload
def parse(tp: type[T], data: object, *, extra: ExtraPolicy = "forbid", coerce: bool = False) -> T: ...
@overload
def parse(tp: object, data: object, *, extra: ExtraPolicy = "forbid", coerce: bool = False) -> object: ...
def parse(tp: object, data: object, *, extra: ExtraPolicy = "forbid", coerce: bool = False) -> object:
    """Validate ``data`` against ``tp`` and build the typed value.

    ``extra="forbid"`` (the default) rejects object keys that are not fields;
    ``"ignore"`` drops them. ``coerce=True`` additionally accepts numbers and
    booleans written as strings (and numbers for strings and decimals); without
    it no value changes type except a JSON number becoming ``float``, or an
    integral one (``3.0``) becoming ``int``. Raises ``SerdeError`` listing every
    issue found.
    """
    try:
        parser = _PARSERS.get((tp, extra, coerce))
    except TypeError:  # unhashable annotation
        parser = None
    if parser is None:
        parser = _parser_for(tp, extra, coerce)
    issues: list[RawIssue] = []
    value = parser(data, issues)
    if value is BAD:
        raise SerdeError(_finish(issues), target=_type_name(tp))
    return value


def _parser_for(tp: object, extra: str, coerce: bool) -> Parser:
    if extra not in ("forbid", "ignore"):
        raise ValueError(f'extra must be "forbid" or "ignore", got {extra!r}')
    # The compiler loads with the first type parsed: importing weakprompt does not build it.
    from weakprompt.serde.compiler import Compiler
    from weakprompt.serde.introspect import type_model

    model = type_model(tp)
    parser = Compiler(model, forbid_extra=extra == "forbid", coerce=bool(coerce)).compile(model.root)
    try:
        with _LOCK:
            _PARSERS[(tp, extra, coerce)] = parser
    except TypeError:
        pass
    return parser


def _finish(issues: list[RawIssue]) -> tuple[SerdeIssue, ...]:
    return tuple(
        SerdeIssue(path=join_path(steps[::-1]), expected=expected, received=received)
        for steps, expected, received in issues
    )


def _type_name(tp: object) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "")
