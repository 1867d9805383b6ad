"""Errors raised by serde, and the compact wording a model reads when its input is wrong."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import attrs

from weakprompt.errors import ConfigurationError, WeakpromptError
from weakprompt.jsonpath import join_path, quote, render_key

__all__ = [
    "SerdeError",
    "SerdeIssue",
    "SerdeTypeError",
    "StrictSchemaError",
    "describe_value",
    "join_path",
    "quote",
    "render_key",
]

_MAX_LISTED_ISSUES = 20
_MAX_TEXT = 40


@attrs.frozen
class SerdeIssue:
    """One problem found in the input.

    ``path`` is a JSONPath-like location (``$.steps[2].status``); ``expected``
    says what would have been accepted there and ``received`` abbreviates what
    was found (its JSON type and a short rendering of the value).
    """

    path: str
    expected: str
    received: str

    def __str__(self) -> str:
        return f"{self.path}: expected {self.expected}; received {self.received}"


class SerdeError(WeakpromptError, ValueError):
    """Input data did not match the requested type. Lists every issue found."""

    def __init__(self, issues: Iterable[SerdeIssue], *, target: str = "") -> None:
        self.issues: tuple[SerdeIssue, ...] = tuple(issues)
        self.target = target
        super().__init__(self._render())

    def _render(self) -> str:
        count = len(self.issues)
        noun = "problem" if count == 1 else "problems"
        head = f"invalid {self.target}" if self.target else "invalid input"
        lines = [f"{head} ({count} {noun}):"]
        lines.extend(f"- {issue}" for issue in self.issues[:_MAX_LISTED_ISSUES])
        if count > _MAX_LISTED_ISSUES:
            lines.append(f"- ... and {count - _MAX_LISTED_ISSUES} more")
        return "\n".join(lines)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_serde_error, (self.issues, self.target))


def _rebuild_serde_error(issues: tuple[SerdeIssue, ...], target: str) -> SerdeError:
    return SerdeError(issues, target=target)


class SerdeTypeError(ConfigurationError, TypeError):
    """A Python type (or a marker on it) cannot be mapped to JSON; a programming error."""


class StrictSchemaError(SerdeTypeError):
    """The type has no equivalent in the strict structured-output subset of JSON Schema."""


def _short_text(text: str) -> str:
    if len(text) > _MAX_TEXT:
        text = text[: _MAX_TEXT - 3] + "..."
    return quote(text)


def _short_key(key: str) -> str:
    return key if len(key) <= 16 else key[:13] + "..."


def describe_value(value: object) -> str:
    """Name the JSON type of ``value`` and show an abbreviated rendering of it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean " + ("true" if value else "false")
    if isinstance(value, int):
        text = str(value)
        return "integer " + (text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "...")
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        return "string " + _short_text(value)
    if isinstance(value, Mapping):
        keys = [_short_key(str(key)) for key in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not keys:
            return "empty object"
        shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
        return f"object with keys {{{shown}}}"
    if isinstance(value, (list, tuple)):
        count = len(value)  # pyright: ignore[reportUnknownArgumentType]
        return "empty array" if count == 0 else f"array of {count} item{'s' if count != 1 else ''}"
    return f"non-JSON value of type {type(value).__name__}"
