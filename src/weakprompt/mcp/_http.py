"""A streamable HTTP transport for MCP servers that bounds the size of one reply.

The SDK reads a JSON reply whole however large it is, and stops an SSE
event at 1 MiB with an error that names no call. Here a response hook
wraps the body of each response: a JSON reply is kept up to ``limit``
bytes, an SSE stream is cut into its events, each kept up to ``limit``
bytes. A reply over the limit is not read further (its HTTP connection is
closed, the session's next request opens another) and its request is
answered with a JSON-RPC error of code ``REPLY_TOO_LARGE``, as ``_stdio``
does, so that one call fails clearly and the connection goes on. The
client asks for no compression, so the limit counts bytes as sent; a
compressed reply could inflate without bound and is not read at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, cast

from ._stdio import REPLY_TOO_LARGE

if TYPE_CHECKING:
    import httpx2
    from mcp.client._transport import TransportStreams

__all__ = ["EventSplitter", "bounded_http", "reply_cap"]

logger = logging.getLogger(__name__)

_TIMEOUT = 30.0  # the SDK's own client: 30 s to connect or write,
_READ_TIMEOUT = 300.0  # and 5 minutes between reads, as a server may hold a stream open
_INTERNAL_ERROR = -32603  # JSON-RPC's code for an error in the exchange itself


class EventSplitter:
    """Splits an SSE byte stream into its events, each byte scanned once.

    Line ends are made ``\\n`` (SSE allows CRLF, LF and CR), so an event
    ends at ``\\n\\n``. An event longer than ``limit`` is never kept: it is
    dropped as it arrives and reported by its size once it ends.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # no event end before this offset of the buffer
        self._dropped = 0  # bytes of the over-limit event already dropped
        self._cr = False  # the last chunk ended with CR: a LF starting the next one is its pair

    def _lines(self, chunk: bytes) -> bytes:
        if self._cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._cr = chunk.endswith(b"\r")
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def feed(self, chunk: bytes) -> list[bytes | int]:
        """The events ``chunk`` completes, in order: the bytes of each, or the size of one over the limit."""
        found: list[bytes | int] = []
        if not chunk:
            return found
        buffer = self._buffer
        buffer += self._lines(chunk)
        start = 0
        while (end := buffer.find(b"\n\n", max(self._scanned - 1, start))) >= 0:
            event = bytes(buffer[start : end + 2])
            start = end + 2
            size = self._dropped + len(event)
            found.append(event if size <= self.limit else size)
            self._dropped = 0
        del buffer[:start]
        self._scanned = len(buffer)
        if (self._dropped or len(buffer) > self.limit) and len(buffer) > 1:
            self._dropped += len(buffer) - 1  # the last byte stays: it may start the event's end
            del buffer[:-1]
            self._scanned = 1
        return found


def _request_id(request: httpx2.Request) -> int | str | None:
    """The JSON-RPC id of the request a POST carries; ``None`` for anything else."""
    if request.method != "POST":
        return None
    try:
        message: object = json.loads(request.content)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    fields = cast("dict[str, object]", message)
    if "method" not in fields:
        return None
    value = fields.get("id")
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _error(request_id: int | str, code: int, message: str) -> bytes:
    error = {"code": code, "message": message}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


def _too_large(request_id: int | str, limit: int) -> bytes:
    return _error(request_id, REPLY_TOO_LARGE, f"the reply was larger than the limit of {limit} bytes")


def reply_cap(limit: int) -> Callable[[httpx2.Response], Awaitable[None]]:
    """An httpx2 response hook bounding each JSON reply, and each SSE event, to ``limit`` bytes."""
    import httpx2

    class Capped(httpx2.AsyncByteStream):
        """A response body passed on up to the limit; past it, the call's error in its place."""

        def __init__(
            self, upstream: httpx2.AsyncByteStream, request_id: int | str | None, events: bool
        ) -> None:
            self.upstream = upstream
            self.request_id = request_id
            self.events = events

        def __aiter__(self) -> AsyncIterator[bytes]:
            return self._events() if self.events else self._body()

        async def _body(self) -> AsyncIterator[bytes]:
            assert self.request_id is not None  # only a request's reply is wrapped whole
            kept = bytearray()
            async for chunk in self.upstream:
                kept += chunk
                if len(kept) > limit:
                    await self.upstream.aclose()
                    yield _too_large(self.request_id, limit)
                    return
            yield bytes(kept)

        async def _events(self) -> AsyncIterator[bytes]:
            splitter = EventSplitter(limit)
            async for chunk in self.upstream:
                for event in splitter.feed(chunk):
                    if isinstance(event, bytes):
                        yield event
                    elif self.request_id is None:  # a stream that answers no request: drop the event
                        logger.warning(
                            "an MCP server sent a %d-byte event over the limit of %d; dropped", event, limit
                        )
                    else:
                        await self.upstream.aclose()
                        yield b"event: message\ndata: " + _too_large(self.request_id, limit) + b"\n\n"
                        return

        async def aclose(self) -> None:
            await self.upstream.aclose()

    class Unread(httpx2.AsyncByteStream):
        """A response body left unread, the call's error in its place."""

        def __init__(self, upstream: httpx2.AsyncByteStream, error: bytes) -> None:
            self.upstream = upstream
            self.error = error

        async def __aiter__(self) -> AsyncIterator[bytes]:
            await self.upstream.aclose()
            yield self.error

        async def aclose(self) -> None:
            await self.upstream.aclose()

    async def cap(response: httpx2.Response) -> None:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        upstream = response.stream
        assert isinstance(upstream, httpx2.AsyncByteStream)  # an async client's responses are async
        request_id = _request_id(response.request)
        if encoding != "identity":  # asked for none: a compressed reply could not be bounded
            if request_id is not None and kind in ("application/json", "text/event-stream"):
                message = (
                    f"the server compressed its reply (Content-Encoding: {encoding}) though asked not to"
                )
                del response.headers["content-encoding"]
                response.headers["content-type"] = "application/json"
                response.stream = Unread(upstream, _error(request_id, _INTERNAL_ERROR, message))
            return
        if kind == "application/json" and request_id is not None:
            response.stream = Capped(upstream, request_id, events=False)
        elif kind == "text/event-stream":
            response.stream = Capped(upstream, request_id, events=True)

    return cap


@contextlib.asynccontextmanager
async def bounded_http(url: str, *, limit: int) -> AsyncGenerator[TransportStreams]:
    """Speak streamable HTTP to ``url``, each reply (or SSE event) at most ``limit`` bytes."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    client = httpx2.AsyncClient(
        timeout=httpx2.Timeout(_TIMEOUT, read=_READ_TIMEOUT),
        headers={"accept-encoding": "identity"},  # the limit counts the bytes as sent
        event_hooks={"response": [reply_cap(limit)]},
    )
    async with client, streamable_http_client(url, http_client=client, max_sse_event_size=limit) as streams:
        yield streams
