"""Who may reach a served prompt over HTTP: the Host and Origin a request names, and a bearer token.

A browser page on another site can send requests to a server on this
machine (DNS rebinding, or a plain cross-site POST); checking ``Host`` and
``Origin`` on every bind refuses those. Off loopback anyone on the network
can connect, so a token is required there unless the caller says
``insecure`` explicitly.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..errors import ConfigurationError

__all__ = ["HttpGuard", "is_loopback"]

logger = logging.getLogger(__name__)

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARDS = ("", "0.0.0.0", "::")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def _bare(host: str) -> str:
    return host.strip().strip("[]").lower()


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (all of 127.0.0.0/8, ::1, localhost)."""
    bare = _bare(host)
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def _host_name(header: str) -> str:
    """The name in a ``Host`` header, without its port (``[::1]:80`` -> ``::1``)."""
    text = header.strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


@attrs.frozen
class HttpGuard:
    """The checks on each HTTP request: ``Host`` among ``hosts``, ``Origin`` allowed, the token if any."""

    hosts: frozenset[str]
    origins: frozenset[str] = frozenset()
    token: str | None = attrs.field(default=None, repr=False)

    @classmethod
    def for_bind(
        cls,
        host: str,
        *,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        token: str | None = None,
        insecure: bool = False,
    ) -> HttpGuard:
        """The guard for a server bound to ``host``; refuses a non-loopback bind without a token.

        Allowed ``Host`` names: the bound address, the loopback names when it
        is loopback or a wildcard, this machine's names for a wildcard, and
        ``allowed_hosts``. Allowed origins: ``http(s)://`` on any allowed host,
        and each of ``allowed_origins`` exactly.
        """
        if token is not None and not token.strip():
            raise ConfigurationError("the MCP bearer token must not be empty")
        if not is_loopback(host) and token is None:
            if not insecure:
                raise ConfigurationError(
                    f"serving MCP over HTTP on {host!r}, which is not a loopback address, needs a bearer "
                    "token (--token or WEAKPROMPT_MCP_TOKEN); pass --insecure to serve it to anyone "
                    "who can reach the port"
                )
            logger.warning(
                "serving MCP over HTTP on %r without a token: anyone reaching the port can call the tools",
                host,
            )
        names = {_bare(host)}
        if is_loopback(host) or _bare(host) in _WILDCARDS:
            names.update(_LOOPBACK_NAMES)
        if _bare(host) in _WILDCARDS:
            names.update({socket.gethostname().lower(), socket.getfqdn().lower()})
        names.update(_bare(name) for name in allowed_hosts)
        names.discard("")
        origins = frozenset(origin.strip().rstrip("/").lower() for origin in allowed_origins)
        return cls(frozenset(names), origins, token)

    def refusal(self, headers: dict[str, str]) -> tuple[int, str] | None:
        """``None`` when a request with ``headers`` (lower-case names) may go on, else (status, reason)."""
        host = headers.get("host")
        if host is None or _host_name(host) not in self.hosts:
            return 421, "this server does not answer to that Host"
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return 403, "requests from that Origin are not allowed"
        if self.token is not None:
            given = headers.get("authorization", "")
            scheme, _, credential = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credential.strip().encode(), self.token.encode()
            ):
                return 401, "a valid bearer token is required"
        return None

    def _origin_allowed(self, origin: str) -> bool:
        text = origin.strip().rstrip("/").lower()
        if text in self.origins:
            return True
        try:
            parts = urlsplit(text)
            name = parts.hostname
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and name is not None and name in self.hosts

    def wrap(self, app: App) -> App:
        """``app`` behind this guard (an ASGI middleware; lifespan events pass through)."""

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            kind = scope.get("type")
            if kind == "lifespan":
                await app(scope, receive, send)
                return
            if kind != "http":  # nothing here is served over websockets
                await send({"type": "websocket.close", "code": 1008})
                return
            raw: list[tuple[bytes, bytes]] = scope.get("headers") or []
            headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in raw}
            refused = self.refusal(headers)
            if refused is None:
                await app(scope, receive, send)
                return
            status, reason = refused
            extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
            body = reason.encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                        *extra,
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})

        return guarded
