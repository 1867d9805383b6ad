"""Keeping secrets out of the text a failure produces.

Whatever a failed tool call says travels far: to the model, into the
``ToolInvoked`` event, into the stored transcript, and into errors that
reach the user. The model needs to know *what* went wrong to correct itself,
but never a traceback, and never a key or a password that happened to be in
an exception message. A :data:`Redactor` is the one hook that scrubs such
text; deployments replace it to remove their own tokens or paths.

The hook works on text, not on exceptions, so the same hook can later scrub
any other text leaving a tool (its output, for instance). Turning an
exception into text is :func:`describe_exception`'s job, and it never fails,
whatever the exception's ``__str__`` does.
"""

from __future__ import annotations

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
_HEADER = re.compile(
    r"""\b(?P<name>(?:proxy-)?authorization)(?P<sep>["']?[ \t]*[:=][ \t]*)"""
    r"""(?:(?P<quote>["'])[^"'\r\n]*(?P=quote)|[^\r\n]*)""",
    re.IGNORECASE,
)
# key=value and key: value pairs whose key names a credential, alone or as the last word of up
# to four (db_password, OPENAI_API_KEY, x-api-key); the value ends at a space or separator.
# The prefix is bounded, so the search stays linear on long texts.
_KEY_VALUE = re.compile(
    r"""\b(?P<name>(?:[A-Za-z0-9]+[-_]){0,3}(?:api[-_]?key|token|secret|password|passwd))"""
    r"""(?P<sep>["']?[ \t]*[:=][ \t]*)"""
    r"""(?:(?P<quote>["'])[^"'\r\n]*(?P=quote)|["']?[^\s,;&'"}]+)""",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(?P<name>bearer)[ \t]+[A-Za-z0-9\-._~+/]+=*", re.IGNORECASE)
# OpenAI (sk-..., sk-proj-...) and Anthropic (sk-ant-...) style API keys.
_SK_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}")
# The password of a URL's userinfo: scheme://user:password@host. Anchored on "://" so
# that the search stays linear on long texts.
_URL_PASSWORD = re.compile(r"://(?P<user>[^\s/@:]*):[^\s/]*@")


def _keep_name(match: re.Match[str]) -> str:
    quote = match.group("quote") or ""
    return f"{match.group('name')}{match.group('sep')}{quote}{REDACTED}{quote}"


def _scrub(text: str) -> str:
    text = _HEADER.sub(_keep_name, text)
    text = _KEY_VALUE.sub(_keep_name, text)
    text = _BEARER.sub(lambda m: f"{m.group('name')} {REDACTED}", text)
    text = _SK_KEY.sub(REDACTED, text)
    return _URL_PASSWORD.sub(lambda m: f"://{m.group('user')}:{REDACTED}@", text)


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
