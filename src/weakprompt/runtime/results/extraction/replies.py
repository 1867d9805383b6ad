"""The exact texts the main model sees: the handle message and ``tool_output`` reply headers.

These formats are part of the contract with models and prompts, so they
live in one place and are tested word for word.
"""

from __future__ import annotations

__all__ = [
    "MAX_HANDLE_CHARS",
    "failure_reply",
    "handle_message",
    "not_found_reply",
    "success_reply",
]

MAX_HANDLE_CHARS = 256
"""Longest handle accepted in a handle message (stores use UUIDs: 36 characters)."""

_SHOWN_CHARS = 120  # of model-supplied text echoed back in a header


_MAX_COUNT = 2**63 - 1


def _check_count(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise ValueError(f"handle_message: {name} must be an int from 0 to 2**63-1, got {value!r}")


def handle_message(handle: str, size_bytes: int, lines: int, tokens: int) -> str:
    """What the model sees in place of an output too large for its context.

    Raises ``ValueError`` for a handle that is empty, longer than
    :data:`MAX_HANDLE_CHARS`, or holds a quote or a control character (it is
    quoted inside the message), and for sizes that are not ints from 0 to
    2**63-1. So the message always stays short (under 1.3 KB).
    """
    if not handle or len(handle) > MAX_HANDLE_CHARS:
        raise ValueError(
            f"handle_message: the handle must be 1-{MAX_HANDLE_CHARS} characters, got {handle!r}"
        )
    if '"' in handle or "\\" in handle or any(not char.isprintable() for char in handle):
        raise ValueError(
            f"handle_message: the handle may not hold quotes, backslashes or control characters: {handle!r}"
        )
    _check_count("size_bytes", size_bytes)
    _check_count("lines", lines)
    _check_count("tokens", tokens)
    return (
        f"Tool output is too large ({size_bytes} bytes, {lines} lines, {tokens} tokens).\n"
        f'Call tool_output(handle = "{handle}", extract = "what to extract").\n'
        "Provide precise and detailed instructions in `extract` about what you are looking for."
    )


def _shown(text: str) -> str:
    """Model-supplied text made safe for a one-line header: no line breaks, bounded length."""
    flat = " ".join(text.split()) or "(empty)"
    return flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 3] + "..."


def success_reply(tool_name: str, handle: str, strategy: str, text: str) -> str:
    """``ABSTRACT FROM TOOL OUTPUT <TOOL> WITH HANDLE <HANDLE>, STRATEGY:<mode>:``, a blank line, the text."""
    return (
        f"ABSTRACT FROM TOOL OUTPUT {_shown(tool_name)} WITH HANDLE {_shown(handle)}, "
        f"STRATEGY:{_shown(strategy)}:\n\n{text}"
    )


def failure_reply(tool_name: str, handle: str, strategy: str, error: str) -> str:
    """``TOOL_OUTPUT FAILED FOR <TOOL> WITH HANDLE <HANDLE>, STRATEGY:<mode>:``, a blank line, the error."""
    return (
        f"TOOL_OUTPUT FAILED FOR {_shown(tool_name)} WITH HANDLE {_shown(handle)}, "
        f"STRATEGY:{_shown(strategy)}:\n\n{error}"
    )


NOT_FOUND_TOOL = "UNKNOWN"
NOT_FOUND_STRATEGY = "none"


def not_found_reply(handle: str) -> str:
    """The successful reply for a handle this session has no stored output for."""
    return success_reply(
        NOT_FOUND_TOOL,
        handle,
        NOT_FOUND_STRATEGY,
        f"Nothing was found: this session has no stored tool output with the handle {_shown(handle)!r}, "
        "so nothing was extracted. Use a handle exactly as it appears in a "
        '"Tool output is too large" message of this conversation.',
    )
