"""Who may read the inspector when it has a token: the bearer of it, or a browser given it once.

A server that listens beyond loopback can be reached by anyone on the
network, and the Host check only stops other web pages, not other people.
So off loopback the inspector wants a token. A program sends it as
``Authorization: Bearer TOKEN``; a person opens the printed URL, whose
``?token=TOKEN`` is traded for an HttpOnly, SameSite=Strict cookie and
dropped from the address by a redirect, so it does not stay in the address
bar or reach another site as a referrer. Every comparison is
``hmac.compare_digest``: its time does not tell where a guess goes wrong.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qsl, quote, urlencode

from starlette.datastructures import URL, Headers
from starlette.requests import cookie_parser
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOOPBACK_BINDS", "MIN_TOKEN_LENGTH", "TokenCheck", "checked_token", "is_loopback_bind"]

LOOPBACK_BINDS = frozenset({"127.0.0.1", "::1", "[::1]", "localhost"})
"""The ``--host`` values that need no token. Strict on purpose: any other address (``127.0.0.2``
included, though Linux routes it to loopback too) counts as off loopback."""

MIN_TOKEN_LENGTH = 16
"""A shorter token could be guessed by someone on the network trying them one after another."""

_QUERY_NAME = "token"


def is_loopback_bind(host: str) -> bool:
    """Whether serving on ``host`` stays on this machine by the inspector's rule (see ``LOOPBACK_BINDS``)."""
    return host.strip().lower() in LOOPBACK_BINDS


def checked_token(value: str) -> str:
    """``value`` if it can be a token (16+ visible ASCII characters); else ``ValueError`` saying why."""
    if len(value) < MIN_TOKEN_LENGTH:
        raise ValueError(
            f"the token is {len(value)} characters long; use at least {MIN_TOKEN_LENGTH}, e.g. "
            "the output of: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if not all("!" <= char <= "~" for char in value):
        raise ValueError("the token may hold only visible ASCII characters (no spaces or controls)")
    return value


def _digest(purpose: str, token: str) -> str:
    return hashlib.sha256(f"weakprompt-inspector {purpose}\0{token}".encode()).hexdigest()


class TokenCheck:
    """ASGI middleware: answer (401) only a request that shows the token.

    The cookie holds a digest of the token, not the token, and its name
    carries another digest's first characters, so two inspectors on one
    machine (cookies do not tell ports apart) keep their cookies apart.
    """

    def __init__(self, app: ASGIApp, *, token: str) -> None:
        self._app = app
        self._token = checked_token(token).encode()
        self._cookie_name = f"weakprompt_inspector_{_digest('cookie name', token)[:12]}"
        self._cookie_value = _digest("cookie value", token).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        url = URL(scope=scope)
        given = _query_token(url)
        if given is not None:
            if not self._matches(given.encode(), self._token):
                await self._refuse(scope, receive, send, "the token in the address is not this inspector's")
                return
            if scope["type"] == "http":
                await self._set_cookie_and_drop_token(url)(scope, receive, send)
                return
        elif not (self._bearer_matches(headers) or self._cookie_matches(headers)):
            await self._refuse(
                scope,
                receive,
                send,
                "this inspector needs its token: open the URL it printed (with ?token=), "
                "or send Authorization: Bearer TOKEN",
            )
            return
        await self._app(scope, receive, send)

    @staticmethod
    def _matches(given: bytes, expected: bytes) -> bool:
        return hmac.compare_digest(given, expected)

    def _bearer_matches(self, headers: Headers) -> bool:
        scheme, _, credentials = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        return self._matches(credentials.strip().encode(), self._token)

    def _cookie_matches(self, headers: Headers) -> bool:
        value = cookie_parser(headers.get("cookie", "")).get(self._cookie_name)
        return value is not None and self._matches(value.encode(), self._cookie_value)

    def _set_cookie_and_drop_token(self, url: URL) -> Response:
        kept = [(key, value) for key, value in _query_pairs(url) if key != _QUERY_NAME]
        # one leading slash: "//host/..." would send the browser to another site
        target = "/" + quote(url.path.lstrip("/"), safe="/") + (f"?{urlencode(kept)}" if kept else "")
        response = RedirectResponse(
            target,
            status_code=303,
            headers={"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"},
        )
        response.set_cookie(
            self._cookie_name,
            self._cookie_value.decode(),
            path="/",
            httponly=True,
            samesite="strict",
        )
        return response

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, reason: str) -> None:
        if scope["type"] == "websocket":  # the inspector serves none; refuse the handshake all the same
            await send({"type": "websocket.close", "code": 1008})
            return
        response = PlainTextResponse(
            f"401 unauthorized: {reason}\n",
            status_code=401,
            headers={
                "WWW-Authenticate": 'Bearer realm="weakprompt inspector"',
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            },
        )
        await response(scope, receive, send)


def _query_pairs(url: URL) -> list[tuple[str, str]]:
    return parse_qsl(url.query, keep_blank_values=True)


def _query_token(url: URL) -> str | None:
    """The last ``token`` in the query string, if any (an empty one counts, and matches nothing)."""
    found: str | None = None
    for key, value in _query_pairs(url):
        if key == _QUERY_NAME:
            found = value
    return found
