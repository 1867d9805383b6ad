"""The texts the model reads when a tool call cannot go through.

Each message says what was wrong, where, and what was expected, so the model
can correct its next call instead of repeating the same mistake.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..serde import SerdeError, SerdeIssue

__all__ = [
    "bad_return",
    "deadline_expired",
    "escalated",
    "handler_failed",
    "invalid_json",
    "invalid_params",
    "not_an_object",
    "unknown_tool",
    "unreadable_params",
]

_EXCERPT = 30


def unknown_tool(name: str, available: Iterable[str]) -> str:
    names = sorted(available)
    listing = ", ".join(names) if names else "(none: no tools are available right now)"
    return f"Unknown tool {name!r}. Available tools: {listing}."


def invalid_json(tool: str, text: str, error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        before = text[max(0, error.pos - _EXCERPT) : error.pos]
        after = text[error.pos : error.pos + _EXCERPT]
        return (
            f"Arguments for tool {tool!r} are not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno} (character {error.pos}). Text around it, with the break "
            f"marked by <HERE>: {before + '<HERE>' + after!r}. Send one JSON object."
        )
    return f"Arguments for tool {tool!r} could not be decoded as JSON: {error}. Send one JSON object."


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def not_an_object(tool: str, value: object, fields: Iterable[str]) -> str:
    names = ", ".join(fields)
    expected = f"an object with the fields: {names}" if names else "an empty object {}"
    return f"Arguments for tool {tool!r} must be a JSON object; got {_json_kind(value)}. Expected {expected}."


def _issue_line(issue: SerdeIssue) -> str:
    return f"at {issue.path}: expected {issue.expected}, got {issue.received}"


def invalid_params(tool: str, error: SerdeError) -> str:
    lines = "; ".join(_issue_line(issue) for issue in error.issues) or str(error)
    return f"Invalid arguments for tool {tool!r}: {lines}. Fix these and call the tool again."


def unreadable_params(tool: str, error_text: str) -> str:
    return (
        f"Tool {tool!r} could not check its arguments: {error_text} "
        "(a defect in the tool, not in your arguments)."
    )


def deadline_expired(tool: str) -> str:
    return f"Tool {tool!r} was not run: the deadline for this task has passed."


def handler_failed(tool: str, error_text: str, *, signature_mismatch: bool) -> str:
    message = f"Tool {tool!r} failed: {error_text}"
    if signature_mismatch:
        message += (
            " (the tool's handler could not be called as handler(params, *, context): "
            "this is a defect in the tool, not in your arguments)"
        )
    return message


def bad_return(tool: str, returned: object) -> str:
    return (
        f"Tool {tool!r} failed: its handler returned {type(returned).__name__} "
        "instead of a ToolResult (a defect in the tool, not in your arguments)."
    )


def escalated(tool: str, error_text: str) -> str:
    return f"Tool {tool!r} stopped the evaluation step: {error_text}"
