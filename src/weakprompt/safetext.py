"""Text about values that may be hostile: never raises, never grows without bound.

What a model, a tool or a user hands over may have a ``__str__`` that
raises, a metaclass that lies about its name, or lone surrogates that no
UTF-8 store accepts. Every message that describes such a value is built
with these helpers, so describing a failure can never fail in turn.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = [
    "clip",
    "describe_exception",
    "escape_surrogates",
    "lone_surrogate",
    "plain_text",
    "safe_repr",
    "terminal_text",
    "type_name",
]

_TRUNCATED = "... (truncated)"


def type_name(value: object) -> str:
    """The name of ``value``'s type; never raises, even for a class with a hostile metaclass."""
    try:
        name = type(value).__name__
    except Exception:
        return "object"
    return str.__str__(name) if isinstance(name, str) else "object"


def _described(describe: Callable[[object], str], value: object) -> str | None:
    try:
        text = describe(value)
    except Exception:  # a raising __str__/__repr__, or one that recurses
        return None
    return str.__str__(text)  # a str subclass becomes a plain str


def describe_exception(exc: BaseException) -> str:
    """``"<ExceptionType>: <message>"`` (just the type when the message is empty).

    Never raises: when ``str(exc)`` fails, returns a non-string or recurses,
    the message reads ``<unprintable>``. The text is neither scrubbed nor cut.
    """
    name = type_name(exc)
    detail = _described(str, exc)
    if detail is None:
        return f"{name}: <unprintable>"
    return f"{name}: {detail}" if detail else name


def safe_repr(value: object, limit: int = 200) -> str:
    """``repr(value)`` cut to ``limit`` characters; ``<unprintable X>`` when repr fails."""
    text = _described(repr, value)
    if text is None:
        return f"<unprintable {type_name(value)}>"
    return clip(text, limit)


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the cut marked as truncated."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(_TRUNCATED))] + _TRUNCATED


def plain_text(value: object) -> str | None:
    """``value`` as an exact ``str`` when it is text (a subclass is read as its base); else ``None``."""
    try:
        if not isinstance(value, str):
            return None
    except Exception:  # a raising __class__
        return None
    return str.__str__(value)


def lone_surrogate(text: str) -> str | None:
    """Where ``text`` stops being valid Unicode: ``"(\\udXXX) at character N"``, or ``None``."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"(\\u{ord(text[exc.start]):04x}) at character {exc.start}"
    return None


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate written as a ``\\udXXX`` escape; other text unchanged."""
    if lone_surrogate(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_SHORT_ESCAPES = {"\t": "\\t", "\r": "\\r"}


def _visible(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_text(text: str) -> str:
    """``text`` safe to print on a terminal: every character that is not printable shows as an escape.

    What a model, a tool or a server wrote must not drive the terminal: an
    ESC (cursor moves, screen clears, OSC 8 links, OSC 52 clipboard writes),
    a carriage return or backspace that overwrites what was shown, a C1
    control, a bidi override that reorders it. Every character
    ``str.isprintable`` refuses (controls, format characters, separators
    other than the space, lone surrogates, unassigned code points) is written
    as ``\\t``, ``\\r``, ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN``; newlines stay.
    A backslash is left as it is, so ordinary text reads unchanged.
    """
    if text.isprintable():
        return text
    return "".join(char if char == "\n" or char.isprintable() else _visible(char) for char in text)
