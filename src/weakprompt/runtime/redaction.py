"""Keeping secrets out of the text a tool call produces.

Whatever a failed tool call says travels far: to the model, into the
``ToolInvoked`` event, into the stored transcript, and into errors that
reach the user. The model needs to know *what* went wrong to correct itself,
but never a traceback, and never a key or a password that happened to be in
an exception message. A :data:`Redactor` is the one hook that scrubs such
text; deployments replace it to remove their own tokens or paths.

The hook works on text, not on exceptions, so the same hook also scrubs a
successful tool's output, at the entry of the output pipeline
(:mod:`weakprompt.runtime.results.pipeline`). Turning an exception into
text is :func:`describe_exception`'s job, and it never fails, whatever the
exception's ``__str__`` does.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import TypeAlias

from ..safetext import clip, describe_exception, escape_surrogates, lone_surrogate, safe_repr, type_name

__all__ = [
    "MAX_ERROR_TEXT",
    "REDACTED",
    "Redactor",
    "clip",
    "default_redact",
    "describe_exception",
    "escape_surrogates",
    "lone_surrogate",
    "redacted",
    "safe_repr",
    "type_name",
]

logger = logging.getLogger(__name__)

Redactor: TypeAlias = Callable[[str], str]
"""Returns the text with every secret in it replaced; it must not raise."""

MAX_ERROR_TEXT = 2000
"""Longer error texts are cut: a huge message would only waste context."""

REDACTED = "[REDACTED]"
"""What :func:`default_redact` puts where a secret was."""

# Header-like names whose whole value is a credential (the value may hold a space: "Basic xyz").
_HEADER = (
    r"""\b(?P<name>(?:proxy-)?authorization)(?P<sep>["']?[ \t]*[:=][ \t]*)"""
    r"""(?:(?P<quote>["'])[^"'\r\n]*(?P=quote)|[^\r\n]*)"""
)
# key=value and key: value pairs whose key names a credential, alone or as the last word of up
# to four (db_password, OPENAI_API_KEY, x-api-key); the value ends at a space or separator.
# The prefix is bounded, so the search stays linear on long texts.
_KEY_VALUE = (
    r"""\b(?P<name>(?:[A-Za-z0-9]+[-_]){0,3}(?:api[-_]?key|token|secret|password|passwd))"""
    r"""(?P<sep>["']?[ \t]*[:=][ \t]*)"""
    r"""(?:(?P<quote>["'])[^"'\r\n]*(?P=quote)|["']?[^\s,;&'"}]+)"""
)
_BEARER = r"\b(?P<name>bearer)[ \t]+[A-Za-z0-9\-._~+/]+=*"
# OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-...) style API keys.
_SK_KEY = r"\bsk-[A-Za-z0-9_\-]{16,}"
# The password of a URL's userinfo: scheme://user:password@host. Anchored on "://" so
# that the search stays linear on long texts.
_URL_PASSWORD = r"://(?P<user>[^\s/@:]*):[^\s/]*@"


def _keep_name(match: re.Match[str]) -> str:
    quote = match.group("quote") or ""
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


def _scrub_all(text: str) -> str:
    """Every rule over the whole of ``text``: the definition :func:`_scrub` keeps to."""
    rules = _rules()
    text = rules.header.sub(_keep_name, text)
    text = rules.key_value.sub(_keep_name, text)
    text = rules.bearer.sub(lambda m: f"{m.group('name')} {REDACTED}", text)
    text = rules.sk_key.sub(REDACTED, text)
    return rules.url_password.sub(lambda m: f"://{m.group('user')}:{REDACTED}@", text)


# The rules above run at every word boundary, about 0.4 µs per character together: fine for an
# error message, 40 s for a 100 MB tool output. No match of any rule holds a line break, and
# every match starts with one of the words below (in any case), followed by what its rule needs
# after it. So only the lines holding such a word, followed that way, need the rules; every
# other line would come out of them unchanged. Those lines are found with fast, case-sensitive
# searches (a literal first) in a lower-cased copy of a piece of the text at a time.
_SEPARATOR = r"""["']?[ \t]*[:=]"""
_WORDS: dict[str, str] = {
    "authorization": "authorization" + _SEPARATOR,
    "api": "api[-_]?key" + _SEPARATOR,
    "token": "token" + _SEPARATOR,
    "secret": "secret" + _SEPARATOR,
    "passw": "passw(?:or)?d" + _SEPARATOR,
    "bearer": r"bearer[ \t]+[a-z0-9\-._~+/]",
    "sk-": r"sk-[a-z0-9_\-]{16}",
    "://": r"://[^\s/@:]*:[^\s/]*@",
}


class _Rules:
    """The rules' compiled patterns: built on first use (a few milliseconds), not on import."""

    __slots__ = ("bearer", "candidates", "header", "in_place", "key_value", "sk_key", "url_password")

    def __init__(self) -> None:
        self.header = re.compile(_HEADER, re.IGNORECASE)
        self.key_value = re.compile(_KEY_VALUE, re.IGNORECASE)
        self.bearer = re.compile(_BEARER, re.IGNORECASE)
        self.sk_key = re.compile(_SK_KEY)
        self.url_password = re.compile(_URL_PASSWORD)
        self.candidates = tuple(re.compile(pattern) for pattern in _WORDS.values())
        """Searched in lower-cased text: a superset of where a rule can match."""
        self.in_place = tuple(
            (word, re.compile(pattern.replace("a-z", "A-Za-z"), re.IGNORECASE))
            for word, pattern in _WORDS.items()
        )
        """The same, checked in the original text at a word found (the rules' own case-insensitive terms)."""


@functools.cache
def _rules() -> _Rules:
    return _Rules()


# Characters other than A-Z and a-z that case-insensitive matching takes for an ASCII letter
# (tests/runtime/test_redaction.py checks this against every code point). Folded first, they let a
# plain lower() find every word a rule would match.
_ASCII_LOOKALIKES = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
_PIECE = 1 << 20
_OVERLAP = max(len(word) for word in _WORDS) - 1
_SMALL = 4096


def _folded(piece: str) -> str:
    if not piece.isascii():
        for char, letter in _ASCII_LOOKALIKES:
            if char in piece:
                piece = piece.replace(char, letter)
    return piece.lower()


def _line_at(text: str, index: int) -> tuple[int, int]:
    end = text.find("\n", index)
    return text.rfind("\n", 0, index) + 1, len(text) if end < 0 else end


def _lines_between(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """Every line with a character in ``text[start:stop]``."""
    lines: list[tuple[int, int]] = []
    while start < stop:
        line = _line_at(text, start)
        lines.append(line)
        start = line[1] + 1
    return lines


def _lines_in_piece(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """The lines of ``text[start:stop]`` (whole lines) where a rule may match."""
    piece = text[start:stop]
    folded = _folded(piece)
    if len(folded) != len(piece):  # lower() changed a length after all: take every line
        return _lines_between(text, start, stop)
    lines: list[tuple[int, int]] = []
    for candidate in _rules().candidates:
        found = candidate.search(folded)
        while found is not None:
            line = _line_at(text, start + found.start())
            lines.append(line)
            found = candidate.search(folded, line[1] - start)
    return lines


def _long_line_may_match(text: str, start: int, stop: int) -> bool:
    """Whether a rule may match in the one long line ``text[start:stop]``.

    Looked at a piece at a time, so that no copy of the whole line is made;
    a word found is checked in place, where its rule's tail may run past the piece.
    """
    for offset in range(start, stop, _PIECE):
        folded = _folded(text[offset : min(stop, offset + _PIECE + _OVERLAP)])
        for word, in_place in _rules().in_place:
            found = folded.find(word)
            while 0 <= found < _PIECE:  # a word starting in the overlap is the next piece's
                if in_place.match(text, offset + found):
                    return True
                found = folded.find(word, found + 1)
    return False


def _lines_to_scrub(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line that may hold a match of a rule, in order."""
    lines: set[tuple[int, int]] = set()
    offset, size = 0, len(text)
    while offset < size:
        stop = text.find("\n", offset + _PIECE)
        stop = size if stop < 0 else stop
        if stop - offset > 2 * _PIECE:  # a long line: the lines before it first, then it alone
            cut = text.rfind("\n", offset, offset + _PIECE)
            if cut < 0:
                if _long_line_may_match(text, offset, stop):
                    lines.add((offset, stop))
                offset = stop + 1
                continue
            stop = cut
        lines.update(_lines_in_piece(text, offset, stop))
        offset = stop + 1
    return sorted(lines)


def _scrub(text: str) -> str:
    """:func:`_scrub_all`, run only on the lines that may need it (the same result, much sooner)."""
    if len(text) <= _SMALL:
        return _scrub_all(text)
    pieces: list[str] = []
    done = 0
    for start, end in _lines_to_scrub(text):
        line = text[start:end]
        cleaned = _scrub_all(line)
        if cleaned != line:
            pieces += (text[done:start], cleaned)
            done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def default_redact(text: str | BaseException, /) -> str:
    """The default :data:`Redactor`: replaces the obvious shapes of a secret.

    It replaces the value of an ``Authorization`` or ``Proxy-Authorization``
    header; the value after a key ending in ``api_key``, ``apikey``,
    ``token``, ``secret``, ``password`` or ``passwd`` (``x-api-key``,
    ``db_password``, ...) followed by ``:`` or ``=``; the token after
    ``Bearer``; ``sk-`` style API keys (OpenAI, Anthropic); and the password
    in ``scheme://user:password@host``. Names are matched in any case; each
    secret becomes :data:`REDACTED`. ``specs/TOOLS.md`` lists the exact rules.

    Given an exception instead of text, it returns the exception's
    :func:`describe_exception` text, scrubbed and cut to
    :data:`MAX_ERROR_TEXT` characters: the short way for code that formats
    an exception itself.
    """
    if isinstance(text, BaseException):
        return clip(_scrub(describe_exception(text)), MAX_ERROR_TEXT)
    return _scrub(text)


def redacted(text: str, redact: Redactor) -> str:
    """``redact(text)``, made safe: a hook that raises or returns a non-string withholds the text.

    Lone surrogates in the result (which no UTF-8 store accepts) are written
    as ``\\udXXX`` escapes.
    """
    try:
        result = redact(text)
    except Exception as exc:
        logger.error("the redaction hook %r raised; the text it was given is withheld", redact, exc_info=exc)
        return f"(text withheld: the redaction hook raised {type_name(exc)})"
    if not isinstance(result, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a user's hook
        logger.error("the redaction hook %r returned %s instead of a str", redact, type_name(result))
        return f"(text withheld: the redaction hook returned {type_name(result)}, not text)"
    return escape_surrogates(str.__str__(result))
