"""A stdio transport for MCP servers that reads each message in linear time, up to a size limit.

The SDK's stdio reader joins its whole unread buffer with every chunk, so
a reply of n bytes costs O(n²) (10 MB took a second, 200 MB never
arrived), and it has no limit. This one scans each chunk once for the
newline and keeps at most ``limit`` bytes of one message: a longer reply
is read to its end and thrown away, and its request is answered with a
JSON-RPC error (code ``REPLY_TOO_LARGE``) so that one call fails clearly
and the connection goes on. Starting and stopping the process follow the
SDK's (and the MCP spec's) order: close stdin, wait, then end the whole
process group.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import AsyncGenerator, Mapping
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from anyio.abc import Process
    from mcp.client._transport import TransportStreams

__all__ = ["REPLY_TOO_LARGE", "LineSplitter", "Oversized", "bounded_stdio"]

logger = logging.getLogger(__name__)

REPLY_TOO_LARGE = -32099
"""The code of the error that stands in for a reply over the limit (in JSON-RPC's server-error range)."""

_CHUNK = 256 * 1024
_EDGE = 512  # bytes kept from each end of an over-limit message, to find its id
_GRACE = 2.0  # seconds for the server to exit once its stdin closes, and again after SIGTERM
_FLUSH = 0.5
_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')
_FIRST_KEY = re.compile(rb'^\s*\{\s*"(id|jsonrpc|result|error|method)"')


def _id_of(head: bytes, tail: bytes) -> int | str | None:
    """The request id of an over-limit message, from its first and last bytes; ``None`` if unknown.

    Servers write ``id`` before or after the (huge) ``result``; a message
    with a ``method`` is the server's own request or notification, not a reply.
    """
    if b'"method"' in head[:200]:
        return None
    prefix = head
    first = _FIRST_KEY.match(head)
    found = None
    if first is not None and first.group(1) in (b"id", b"jsonrpc"):
        found = _ID.search(prefix)
    if found is None:
        matches = list(_ID.finditer(tail))
        found = matches[-1] if matches else None
    if found is None:
        return None
    value: object = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None


@attrs.frozen
class Oversized:
    """A line longer than the limit: its size, and its first and last bytes (to find its id)."""

    head: bytes
    tail: bytes
    size: int


class LineSplitter:
    """Splits a byte stream into its newline-ended lines, each byte scanned once.

    A line longer than ``limit`` is never kept whole: once the unfinished
    line passes the limit only its first and last ``_EDGE`` bytes are kept,
    and the rest is dropped as it arrives, until its newline.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # no newline before this offset of the buffer
        self._skipping: Oversized | None = None  # the over-limit line being dropped

    def feed(self, chunk: bytes) -> list[bytes | Oversized]:
        """The lines that ``chunk`` completes, in order (without their newlines)."""
        found: list[bytes | Oversized] = []
        skipping = self._skipping
        if skipping is not None:
            end = chunk.find(b"\n")
            kept = chunk if end < 0 else chunk[:end]
            skipping = Oversized(skipping.head, (skipping.tail + kept)[-_EDGE:], skipping.size + len(kept))
            if end < 0:
                self._skipping = skipping
                return found
            self._skipping = None
            found.append(skipping)
            chunk = chunk[end + 1 :]
        buffer = self._buffer
        buffer += chunk
        start = 0
        while (end := buffer.find(b"\n", max(self._scanned, start))) >= 0:
            line = bytes(buffer[start:end])
            start = end + 1
            found.append(
                line if len(line) <= self.limit else Oversized(line[:_EDGE], line[-_EDGE:], len(line))
            )
        del buffer[:start]
        self._scanned = len(buffer)
        if len(buffer) > self.limit:
            self._skipping = Oversized(bytes(buffer[:_EDGE]), bytes(buffer[-_EDGE:]), len(buffer))
            buffer.clear()
            self._scanned = 0
        return found


@contextlib.asynccontextmanager
async def bounded_stdio(
    command: str,
    args: tuple[str, ...],
    *,
    env: Mapping[str, str] | None,
    cwd: str | None,
    limit: int,
) -> AsyncGenerator[TransportStreams]:
    """Start ``command`` and exchange newline-delimited JSON-RPC with it, each message at most ``limit``."""
    import anyio
    import mcp_types
    from mcp.client.stdio import get_default_environment
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [command, *args],
        env=get_default_environment() | dict(env or {}),
        stderr=None,  # the server's stderr is ours (fd 2), whatever sys.stderr is now
        cwd=cwd,
        start_new_session=True,
    )
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()

    def too_large(head: bytes, tail: bytes, size: int) -> SessionMessage | None:
        request = _id_of(head, tail)
        if request is None:
            return None
        error = mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=request,
            error=mcp_types.ErrorData(
                code=REPLY_TOO_LARGE, message=f"the reply was {size} bytes, over the limit of {limit}"
            ),
        )
        return SessionMessage(error)

    def parse(line: bytes) -> SessionMessage | Exception:
        try:
            return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as exc:
            logger.warning("an MCP server wrote a line that is not JSON-RPC: %s", exc)
            return exc

    async def read_messages() -> None:
        """Each complete line becomes a message; an over-limit one its error, or the connection's end."""
        stdout = process.stdout
        assert stdout is not None  # opened with pipes
        lines = LineSplitter(limit)
        while True:
            try:
                chunk = await stdout.receive(_CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                return
            for line in lines.feed(chunk):
                if isinstance(line, Oversized):
                    replaced = too_large(line.head, line.tail, line.size)
                    if replaced is None:  # no reply we can name: end the connection instead of hanging
                        logger.warning(
                            "an MCP server sent a %d-byte message over the limit; closing", line.size
                        )
                        return
                    await read_send.send(replaced)
                elif line.strip():
                    await read_send.send(parse(line))

    async def reader() -> None:
        try:
            async with read_send:
                await read_messages()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is gone
        finally:
            await _drain(process)

    async def writer() -> None:
        stdin = process.stdin
        assert stdin is not None  # opened with pipes
        try:
            async with write_receive:
                async for message in write_receive:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send((text + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the server stopped reading: the session sees the end
        finally:
            writer_done.set()

    async with anyio.create_task_group() as group:
        group.start_soon(reader)
        group.start_soon(writer)
        try:
            yield read_receive, write_send
        finally:
            with anyio.CancelScope(shield=True):
                read_receive.close()
                write_send.close()
                with anyio.move_on_after(_FLUSH):
                    await writer_done.wait()
                await _stop(process)
                for stream in (read_receive, write_send, read_send, write_receive):
                    await stream.aclose()
            group.cancel_scope.cancel()


async def _drain(process: Process) -> None:
    """Read and drop what the server still writes, so it is never blocked on a full pipe while stopping."""
    import anyio

    stdout = process.stdout
    assert stdout is not None
    with (
        anyio.CancelScope(shield=True),
        contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError),
    ):
        while True:
            await stdout.receive(_CHUNK)


async def _exited(process: Process, timeout: float) -> bool:
    import anyio

    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


async def _stop(process: Process) -> None:
    """Close stdin, wait for the server to exit, then end its whole process group."""
    import anyio
    from mcp.os.posix.utilities import terminate_posix_process_tree

    lost = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)
    if process.stdin is not None:
        with contextlib.suppress(*lost):
            await process.stdin.aclose()
    if not await _exited(process, _GRACE):
        await terminate_posix_process_tree(process, _GRACE)
        if not await _exited(process, _GRACE):  # pragma: no cover - only an unkillable process
            logger.warning("MCP server process %d is still alive after SIGKILL; abandoning it", process.pid)
    if process.stdout is not None:
        with contextlib.suppress(*lost):
            await process.stdout.aclose()
