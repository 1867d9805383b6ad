"""The texts the model reads when a tool call cannot go through.

Each message says what was wrong, where, and what was expected, so the model
can correct its next call instead of repeating the same mistake.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from ..serde import SerdeError, SerdeIssue
from .redaction import clip, type_name

__all__ = [
    "arguments_refused",
    "bad_result",
    "deadline_expired",
    "echo",
    "escalated",
    "handler_failed",
    "interrupted",
    "invalid_json",
    "invalid_params",
    "not_an_object",
    "unknown_tool",
    "unreadable_params",
]

_EXCERPT = 30
_NAME_ECHO = 64  # characters of a model-given name repeated back to it
_LISTED_TOOLS = 40
_ISSUE_PART = 160


def echo(text: str, limit: int = _NAME_ECHO) -> str:
    """Model-given text quoted back to it, cut so a huge name cannot flood the context."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def unknown_tool(name: str, available: Iterable[str]) -> str:
    names = sorted(available)
    shown = names[:_LISTED_TOOLS]
    listing = ", ".join(shown) if names else "(none: no tools are available right now)"
    if len(names) > len(shown):
        listing += f" and {len(names) - len(shown)} more"
    return f"Unknown tool {echo(name)}. Available tools: {listing}."


def invalid_json(tool: str, text: str, error: json.JSONDecodeError) -> str:
    before = text[max(0, error.pos - _EXCERPT) : error.pos]
    after = text[error.pos : error.pos + _EXCERPT]
    return (
        f"Arguments for tool {tool!r} are not valid JSON: {error.msg} at line {error.lineno}, "
        f"column {error.colno} (character {error.pos}). Text around it, with the break "
        f"marked by <HERE>: {before + '<HERE>' + after!r}. Send one JSON object."
    )


def arguments_refused(tool: str, path: str, problem: str) -> str:
    if problem.startswith("nested"):
        return f"Arguments for tool {tool!r} are {problem} (at {path}). Send a flatter JSON object."
    return f"Arguments for tool {tool!r} were refused at {path}: {problem}. Send standard JSON."


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
    return type_name(value)


def not_an_object(tool: str, value: object, fields: Iterable[str]) -> str:
    names = ", ".join(fields)
    expected = f"an object with the fields: {names}" if names else "an empty object {}"
    return f"Arguments for tool {tool!r} must be a JSON object; got {_json_kind(value)}. Expected {expected}."


def _issue_line(issue: SerdeIssue) -> str:
    path, expected, received = (
        clip(part, _ISSUE_PART) for part in (issue.path, issue.expected, issue.received)
    )
    return f"at {path}: expected {expected}, got {received}"


def invalid_params(tool: str, error: SerdeError) -> str:
    lines = "; ".join(_issue_line(issue) for issue in error.issues) or clip(str(error), _ISSUE_PART)
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


def bad_result(tool: str, problem: str) -> str:
    return f"Tool {tool!r} failed: {problem} (a defect in the tool, not in your arguments)."


def escalated(tool: str, error_text: str) -> str:
    return f"Tool {tool!r} stopped the evaluation step: {error_text}"


def interrupted(tool: str, error_type: str) -> str:
    return f"Tool {tool!r} was interrupted ({error_type})."
