"""Tool-call arguments: decoded once, and accepted only as plain, standard JSON.

The model (through an adapter) hands over either JSON text or a mapping.
Either may hold what JSON cannot carry: ``NaN``, an infinity, a duplicate
key, an integer too long to write, a lone surrogate, a key that is not a
string, an object that is not JSON at all, or nesting deep enough to
exhaust the stack. Each is refused here with the JSON path where it was
found, so nothing downstream (the parser, the event, the transcript, a
provider's wire format) has to cope with it. ``specs/TOOLS.md`` lists the
rules.

:class:`~weakprompt.messages.ToolCall` runs :func:`decode_arguments` at
most once per call and :func:`arguments_text` at most once, and keeps both
results; every consumer reads them from the call.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias, TypeVar, cast

import attrs

from .jsonpath import join_path, render_key
from .jsontypes import JSONObject, JSONValue
from .safetext import (
    clip,
    describe_exception,
    escape_surrogates,
    lone_surrogate,
    safe_repr,
    type_name,
)

__all__ = [
    "MAX_ARGUMENT_DEPTH",
    "ArgumentsProblem",
    "BadSyntax",
    "DecodedArguments",
    "NotAnObject",
    "Refused",
    "arguments_text",
    "decode_arguments",
]

MAX_ARGUMENT_DEPTH = 100
"""Objects and arrays may be nested this many levels deep, no more."""

_KEY_ECHO = 40  # characters of an odd key shown in a path
_PATH_ECHO = 200  # characters of a path shown in a message
_LOG10_2 = math.log10(2)


@attrs.frozen
class BadSyntax:
    """The text is not JSON."""

    error: json.JSONDecodeError


@attrs.frozen
class NotAnObject:
    """Valid JSON (or a Python value), but not an object."""

    value: object


@attrs.frozen
class Refused:
    """JSON that the dispatcher does not accept, and where: ``path`` is ``$``-rooted."""

    path: str
    problem: str


ArgumentsProblem: TypeAlias = BadSyntax | NotAnObject | Refused
"""Why the arguments are not a plain JSON object."""

DecodedArguments: TypeAlias = JSONObject | ArgumentsProblem
"""The arguments as a plain JSON object, or why they are not one."""


def decode_arguments(raw: object) -> DecodedArguments:
    """The arguments as a fresh, plain JSON object, or why they are not one. Never raises."""
    try:
        return _decode(raw)
    except Exception as exc:  # an object whose very type cannot be checked (a raising __class__)
        return Refused("$", f"the arguments could not be read ({describe_exception(exc)})")


def _decode(raw: object) -> DecodedArguments:
    if isinstance(raw, str):
        if not raw or raw.isspace():
            return {}  # some providers send "" for a call without arguments
        _MARKS.suspect = False
        try:
            value: object = _DECODER.decode(raw)
        except json.JSONDecodeError as exc:
            return BadSyntax(exc)
        except RecursionError:
            return Refused("$", "nested too deeply to decode")
        if not (_MARKS.suspect or _may_hide_a_problem(raw)):
            # The usual case: the decoder built only plain values and nothing was marked.
            return value if type(value) is dict else NotAnObject(value)  # pyright: ignore[reportUnknownVariableType]
    elif isinstance(raw, Mapping):
        value = cast("Mapping[object, object]", raw)  # checked key by key below
    else:
        return NotAnObject(raw)
    try:
        plain = _plain(value, 0)
    except _Refusal as refusal:
        return Refused(clip(join_path(refusal.steps[::-1]), _PATH_ECHO), refusal.problem)
    if not isinstance(plain, dict):
        return NotAnObject(plain)
    return plain  # checked above: a plain JSON object


def arguments_text(raw: object, decoded: DecodedArguments) -> str:
    """Arguments that are not text, as text for the record: compact JSON of their decode.

    ``decoded`` is ``decode_arguments(raw)``. A mapping that is not plain
    JSON is written as well as it can be (JSON with ``NaN`` where there was
    one, else a shortened ``repr``); never raises. (Text is its own record:
    :meth:`~weakprompt.messages.ToolCall.arguments_json` keeps it as given.)
    """
    if isinstance(decoded, dict):
        return json.dumps(decoded, ensure_ascii=False, separators=(",", ":"))
    try:
        return json.dumps(raw, ensure_ascii=True, separators=(",", ":"))
    except Exception:  # non-string keys, values that are not JSON, huge integers, deep nesting
        return escape_surrogates(safe_repr(raw, 2000))


# -- decoding hooks: mark what JSON text should not hold, to report it with its path ----------


class _Marks(threading.local):
    """Set by the hooks when the text held something to refuse; the walk then finds where."""

    suspect = False


_MARKS = _Marks()


@attrs.frozen
class _Constant:
    """``NaN``, ``Infinity`` or ``-Infinity`` in the text."""

    token: str


@attrs.frozen
class _LongInteger:
    digits: int


@attrs.frozen
class _Overflow:
    """A number literal too large for a float: it would read as infinity."""

    text: str


@attrs.frozen
class _Pairs:
    """An object whose text repeats a key."""

    pairs: list[tuple[str, object]]


def _object(pairs: list[tuple[str, object]]) -> object:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    _MARKS.suspect = True
    return _Pairs(pairs)


def _constant(token: str) -> object:
    _MARKS.suspect = True
    return _Constant(token)


def _integer(text: str) -> object:
    limit = sys.get_int_max_str_digits()
    digits = len(text) - text.startswith("-")
    if limit and digits > limit:
        _MARKS.suspect = True
        return _LongInteger(digits)
    return int(text)


def _float(text: str) -> object:
    value = float(text)
    if math.isfinite(value):
        return value
    _MARKS.suspect = True
    return _Overflow(text)


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object, parse_constant=_constant, parse_int=_integer, parse_float=_float
)


def _may_hide_a_problem(text: str) -> bool:
    """Cheap checks on the text for what the hooks cannot see: deep nesting and lone surrogates."""
    return (
        text.count("[") + text.count("{") > MAX_ARGUMENT_DEPTH
        or "\\ud" in text
        or "\\uD" in text
        or lone_surrogate(text) is not None
    )


# -- the walk -----------------------------------------------------------------------------------


class _Refusal(Exception):
    """Raised at the offending value; each enclosing level adds its path step on the way out."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.steps: list[str] = []


def _plain(value: object, depth: int) -> JSONValue:
    """A plain copy of ``value`` (dict, list, str, int, float, bool, None), or :class:`_Refusal`.

    Subclasses of the JSON types become the plain type, read through the
    base type's own methods so that no override of theirs runs.
    """
    if isinstance(value, str):
        text = value if type(value) is str else str.__str__(value)
        _check_text(text)
        return text
    if value is None or isinstance(value, bool):  # bool cannot be subclassed
        return value
    if isinstance(value, int):
        number = value if type(value) is int else int.__int__(value)
        _check_integer(number)
        return number
    if isinstance(value, float):
        real = value if type(value) is float else float.__float__(value)
        if not math.isfinite(real):
            raise _Refusal(f"{real} is not a JSON number; send a finite number, null or a string")
        return real
    if type(value) is dict:
        return _plain_object(cast("dict[object, object]", value).items(), depth)
    if type(value) is list:
        return _plain_array(cast("list[object]", value), depth)
    return _plain_other(value, depth)


def _plain_other(value: object, depth: int) -> JSONValue:
    """Markers left by the decoder, other mappings and sequences, and anything else."""
    if isinstance(value, _Constant):
        raise _Refusal(f"{value.token} is not a JSON number; send a finite number, null or a string")
    if isinstance(value, _LongInteger):
        raise _Refusal(_long_integer(value.digits))
    if isinstance(value, _Overflow):
        raise _Refusal(f"the number {clip(value.text, _KEY_ECHO)} is too large: it would read as infinity")
    if isinstance(value, _Pairs):
        return _plain_object(value.pairs, depth)
    if isinstance(value, Mapping):
        mapping = cast("Mapping[object, object]", value)
        return _plain_object(_read(lambda: list(mapping.items()), "mapping"), depth)
    if isinstance(value, list | tuple):
        sequence = cast("Sequence[object]", value)
        return _plain_array(_read(lambda: list(sequence), "sequence"), depth)
    raise _Refusal(f"a {type_name(value)} is not a JSON value")


_T = TypeVar("_T")


def _read(read: Callable[[], list[_T]], what: str) -> list[_T]:
    try:
        return read()
    except Exception as exc:
        raise _Refusal(f"a {what} that could not be read ({describe_exception(exc)})") from None


def _plain_object(items: Iterable[tuple[object, object]], depth: int) -> JSONObject:
    if depth >= MAX_ARGUMENT_DEPTH:
        raise _Refusal(f"nested more than {MAX_ARGUMENT_DEPTH} levels deep")
    out: JSONObject = {}
    key = ""
    in_value = False  # a problem with a key is the object's; one inside a value is under the key
    try:
        for raw_key, item in items:
            key = raw_key if type(raw_key) is str else _plain_key(raw_key)
            if not key.isascii():
                _check_text(key, what="key")
            if key in out:
                raise _Refusal(f"the key {_key_echo(key)} appears more than once")
            in_value = True
            out[key] = _plain(item, depth + 1)
            in_value = False
    except _Refusal as refusal:
        if in_value:
            refusal.steps.append(render_key(clip(key, _KEY_ECHO)))
        raise
    except Exception as exc:  # a key or value whose type cannot even be checked (a raising __class__)
        what = "value" if in_value else "key"
        refusal = _Refusal(f"a {what} that could not be read ({describe_exception(exc)})")
        if in_value:
            refusal.steps.append(render_key(clip(key, _KEY_ECHO)))
        raise refusal from None
    return out


def _plain_array(items: Sequence[object], depth: int) -> list[JSONValue]:
    if depth >= MAX_ARGUMENT_DEPTH:
        raise _Refusal(f"nested more than {MAX_ARGUMENT_DEPTH} levels deep")
    out: list[JSONValue] = []
    try:
        for item in items:
            out.append(_plain(item, depth + 1))
    except _Refusal as refusal:
        refusal.steps.append(f"[{len(out)}]")
        raise
    except Exception as exc:  # a value whose type cannot even be checked (a raising __class__)
        refusal = _Refusal(f"a value that could not be read ({describe_exception(exc)})")
        refusal.steps.append(f"[{len(out)}]")
        raise refusal from None
    return out


def _plain_key(key: object) -> str:
    if not isinstance(key, str):
        raise _Refusal(f"an object key must be a string, got {type_name(key)} {safe_repr(key, _KEY_ECHO)}")
    return str.__str__(key)


def _key_echo(key: str) -> str:
    return json.dumps(clip(key, _KEY_ECHO))


def _check_text(text: str, *, what: str = "string") -> None:
    where = lone_surrogate(text)
    if where is not None:
        raise _Refusal(f"the {what} holds a lone surrogate {where}, which is not valid Unicode")


def _check_integer(value: int) -> None:
    limit = sys.get_int_max_str_digits()
    if not limit or math.floor(value.bit_length() * _LOG10_2) + 1 <= limit:
        return
    try:
        str(value)
    except ValueError:  # longer than the interpreter writes
        raise _Refusal(_long_integer(None)) from None


def _long_integer(digits: int | None) -> str:
    limit = sys.get_int_max_str_digits()
    count = f"more than {limit}" if digits is None else str(digits)
    return f"an integer of {count} digits; at most {limit} are accepted"
