"""Preparing one tool output for storing: its checks, figures, hash, summary and preview.

Nothing here touches the database; ``ToolOutputStore.prepare`` hands back what
this builds, for a transaction of its own or a transcript turn to store.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ...clock import Clock
from ...jsontypes import JSONValue
from ...store.output_payload import encode_payload
from ...tokens import TokenCounter
from ...transcript.shaped import NEVER_STORED_TOOLS
from .extraction import DocumentStats, document_stats
from .handles import handle_for, payload_hash
from .preview import make_preview
from .records import PreparedOutput, ToolOutputStoreError
from .summaries import SummaryInput, SummaryRegistry

__all__ = [
    "COMPRESS_WITHOUT_LOOKING",
    "MAX_ID_CHARS",
    "OversizedDecision",
    "arguments_text",
    "check_id",
    "payload_bytes",
    "prepare_output",
]

MAX_ID_CHARS = 255
COMPRESS_WITHOUT_LOOKING = 65536
"""Payloads up to this many bytes are compressed before storing without first checking for a copy."""

OversizedDecision = bool | Callable[[DocumentStats], bool]
"""Whether a stored output was kept out of the context: a flag, or a function of its measured size."""


def check_id(what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ToolOutputStoreError(f"{what} must be a non-empty string, got {value!r}")
    if len(value) > MAX_ID_CHARS:
        raise ToolOutputStoreError(f"{what} is longer than {MAX_ID_CHARS} characters: {value[:40]!r}...")
    if "\x00" in value:
        # PostgreSQL text cannot hold NUL; refuse it on every backend alike.
        raise ToolOutputStoreError(f"{what} contains a NUL character: {value!r}")
    return value


def payload_bytes(result: object) -> bytes:
    if isinstance(result, str):
        return result.encode("utf-8", errors="surrogatepass")
    if isinstance(result, bytes):
        return result
    if isinstance(result, bytearray):
        return bytes(result)
    raise ToolOutputStoreError(f"a tool result must be str or bytes, got {type(result).__name__}")


def arguments_text(args: object, tool_call_id: str) -> str:
    if isinstance(args, str):
        if "\x00" in args:
            raise ToolOutputStoreError(f"the arguments of tool call {tool_call_id!r} contain a NUL character")
        return args
    if isinstance(args, Mapping):
        try:
            return json.dumps(args, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ToolOutputStoreError(
                f"the arguments of tool call {tool_call_id!r} are not JSON-serialisable: {exc}"
            ) from exc
    raise ToolOutputStoreError(
        f"the arguments of tool call {tool_call_id!r} must be a JSON string or a mapping, "
        f"got {type(args).__name__}"
    )


def prepare_output(
    session_id: str,
    tool_call_id: str,
    tool_name: str,
    args: str | Mapping[str, JSONValue],
    result: str | bytes,
    *,
    is_error: bool,
    oversized: OversizedDecision,
    counter: TokenCounter,
    summaries: SummaryRegistry,
    clock: Clock,
) -> PreparedOutput:
    """``ToolOutputStore.prepare`` for the outputs of ``session_id`` (an id already checked)."""
    call_id = check_id("tool_call_id", tool_call_id)
    name = check_id("tool_name", tool_name)
    if name in NEVER_STORED_TOOLS:
        raise ToolOutputStoreError(
            f"results of {name!r} are never stored: they already answer a request for a stored output"
        )
    data = payload_bytes(result)
    arguments = arguments_text(args, call_id)
    stats = document_stats(data, counter)
    flag = bool(oversized(stats)) if callable(oversized) else bool(oversized)
    digest = payload_hash(data)
    handle = handle_for(session_id, digest)
    summary = summaries.summarize(
        SummaryInput(
            tool_name=name,
            arguments=arguments,
            data=data,
            size_bytes=stats.size_bytes,
            lines=stats.lines,
            tokens=stats.tokens,
            is_error=is_error,
        )
    )
    preview = make_preview(data, is_error=is_error)
    now = clock.now()
    small = len(data) <= COMPRESS_WITHOUT_LOOKING
    return PreparedOutput(
        session_id=session_id,
        tool_call_id=call_id,
        tool_name=name,
        arguments=arguments,
        handle=handle,
        stored_hash=digest,
        size_bytes=stats.size_bytes,
        lines=stats.lines,
        tokens=stats.tokens,
        is_error=is_error,
        oversized=flag,
        summary=summary,
        preview=preview,
        created_at=now,
        data=data,
        encoded=encode_payload(data) if small else None,  # cheaper than a read transaction to look first
    )
