"""The short, line-aware preview stored with every tool output.

A preview is what a slim reference shows in place of an old result, so it
must be small (at most :data:`PREVIEW_MAX_CHARS` characters), cut at line
boundaries where it can, say how much was left out, and be safe to put in a
prompt whatever bytes the tool returned. Only the head of a large output is
decoded: the cost does not grow with the output.
"""

from __future__ import annotations

from .extraction.source import count_lines, decode_text, split_lines

__all__ = ["EMPTY_PREVIEW", "ERROR_PREFIX", "PREVIEW_MAX_CHARS", "make_preview", "safe_text"]

PREVIEW_MAX_CHARS = 500
ERROR_PREFIX = "Error: "
EMPTY_PREVIEW = "(empty output)"

_REPLACEMENT = "\ufffd"
# C0 and C1 control characters (except tab and newline) could upset terminals and prompts.
_CONTROLS = {code: _REPLACEMENT for code in (*range(0x20), *range(0x7F, 0xA0)) if code not in (0x09, 0x0A)}


def safe_text(data: bytes) -> str:
    """``data`` as text safe to show: invalid UTF-8 and control characters become U+FFFD.

    Newlines and tabs stay; ``\\r\\n`` line endings become ``\\n``.
    """
    return decode_text(data).replace("\r\n", "\n").translate(_CONTROLS)


def _marker(hidden: int) -> str:
    return f"... ({hidden} more lines)"


def make_preview(data: bytes, *, is_error: bool = False, max_chars: int = PREVIEW_MAX_CHARS) -> str:
    """The first lines of ``data`` that fit in ``max_chars`` characters.

    When something is left out the preview ends with ``... (N more lines)``,
    N counting the lines not shown in full. A first line too long to fit is
    cut inside the line. Errors start with ``Error: ``.
    """
    if max_chars < 40:
        raise ValueError(f"make_preview: max_chars must be at least 40, got {max_chars}")
    prefix = ERROR_PREFIX if is_error else ""
    total = count_lines(data)
    if total == 0:
        return prefix + EMPTY_PREVIEW
    # A character takes at most 4 bytes (an invalid byte becomes one character), so this head
    # holds more characters than a preview can show; any line shown whole ends inside it.
    head_bytes = 4 * (max_chars + 2)
    lines = split_lines(safe_text(data[:head_bytes]))
    if len(data) <= head_bytes:
        whole = prefix + "\n".join(lines)
        if len(whole) <= max_chars:
            return whole
    shown: list[str] = []
    used = len(prefix)
    for index, line in enumerate(lines):
        # Room for this line, its newline, and the marker counting what would still be hidden.
        cost = len(line) + (1 if shown else 0)
        if used + cost + 1 + len(_marker(total - index - 1)) > max_chars:
            break
        shown.append(line)
        used += cost
    if shown:
        return prefix + "\n".join(shown) + "\n" + _marker(total - len(shown))
    marker = _marker(total)
    room = max_chars - len(prefix) - 1 - len(marker)
    return prefix + lines[0][:room] + "\n" + marker
