"""Which ``Host`` the inspector answers to: loopback names by default, more only when asked.

A page on another origin can reach a server on 127.0.0.1 through a domain
it controls that first resolves to itself and then to 127.0.0.1 (DNS
rebinding): the browser then treats the inspector's pages as that domain's
own and lets the page read every transcript. Such a request still carries
the attacker's name in its ``Host`` header, so a server that answers only
names it knows is out of reach. Requests that could change something (any
method but GET, HEAD and OPTIONS; the inspector has none today) must also
come from a page of an allowed origin when the browser names one.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ..safetext import clip, terminal_text

__all__ = ["LOOPBACK_HOSTS", "HostCheck", "allowed_host", "host_name"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The names a browser uses for this machine's own loopback address."""

_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def host_name(value: str) -> str | None:
    """The host of a ``Host`` header (``name``, ``name:port``, ``[v6]``, ``[v6]:port``), lowercase.

    ``None`` when the value is not one of those shapes (a port that is not
    a number, an unclosed bracket, nothing at all).
    """
    text = value.strip().lower()
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        name, rest = text[1:end], text[end + 1 :]
    else:
        name, colon, port = text.partition(":")
        rest = colon + port
    if rest and (not rest.startswith(":") or not rest[1:].isdigit() or not rest[1:].isascii()):
        return None
    return name or None


def allowed_host(value: str) -> str:
    """A name for ``--allow-host`` as the check compares it (a port is ignored); ``ValueError`` if none."""
    text = value.strip().lower()
    if ":" in text and not text.startswith("[") and text.count(":") > 1:
        name: str | None = text  # a bare IPv6 address, e.g. fe80::1
    else:
        name = host_name(text)
    if name is None or not name.isprintable() or any(c in name for c in " /\\@?#"):
        raise ValueError(f"not a host name: {clip(terminal_text(value), 80)!r}")
    return name


class HostCheck:
    """ASGI middleware: refuse (421) a request whose ``Host`` is not allowed, and (403) a
    state-changing request whose ``Origin`` is not."""

    def __init__(self, app: ASGIApp, *, extra_hosts: Iterable[str] = ()) -> None:
        self._app = app
        self._allowed = LOOPBACK_HOSTS | {allowed_host(name) for name in extra_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        given = headers.get("host", "")
        if host_name(given) not in self._allowed:
            if scope["type"] == "websocket":  # the inspector serves none; refuse the handshake all the same
                await send({"type": "websocket.close", "code": 1008})
                return
            shown = clip(terminal_text(given), 100)
            response = PlainTextResponse(
                f"refused: this inspector does not answer to Host {shown!r}; "
                "it answers to loopback names and to the names given with --allow-host\n",
                status_code=421,
                headers={"X-Content-Type-Options": "nosniff"},
            )
            await response(scope, receive, send)
            return
        origin = headers.get("origin")
        if scope.get("method", "GET") not in _SAFE_METHODS and origin is not None:
            origin_host = _origin_host(origin)
            if origin_host not in self._allowed:
                response = PlainTextResponse(
                    "refused: a request from a page of another origin\n",
                    status_code=403,
                    headers={"X-Content-Type-Options": "nosniff"},
                )
                await response(scope, receive, send)
                return
        await self._app(scope, receive, send)


def _origin_host(origin: str) -> str | None:
    """The host of an ``Origin`` header; ``None`` for ``null`` or anything unreadable."""
    try:
        return urlsplit(origin.strip()).hostname
    except ValueError:
        return None
