"""Shared helpers for the extraction tests: scripted extraction models and sample outputs."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn, Message, Usage
from weakprompt.runtime import ModelRequest
from weakprompt.runtime.results.extraction import ExtractionConfig, ExtractionSource

NONCE = re.compile(r"<wp-([A-Za-z0-9]+)-FINAL")


def counting_nonces() -> Callable[[], str]:
    """Predictable nonces: nonce0001, nonce0002, ..."""
    counter = itertools.count(1)
    return lambda: f"nonce{next(counter):04d}"


def config(**changes: object) -> ExtractionConfig:
    """Test defaults: predictable nonces, in-process grep unless a test asks for the child process."""
    settings: dict[str, object] = {"nonce_factory": counting_nonces(), "grep_isolate": False}
    settings.update(changes)
    return ExtractionConfig(**settings)  # type: ignore[arg-type]


def system_text(request: ModelRequest) -> str:
    return next(m.content for m in request.context.messages if m.role == "system")


def last_message(request: ModelRequest) -> Message:
    return request.context.messages[-1]


def nonce_of(request: ModelRequest) -> str:
    found = NONCE.search(system_text(request))
    assert found is not None, "the extraction prompt shows no wrapper"
    return found.group(1)


def wrapped(request: ModelRequest, body: str, *, close: bool = True) -> str:
    nonce = nonce_of(request)
    closing = f"</wp-{nonce}-FINAL>" if close else ""
    return f'Here you go.\n<wp-{nonce}-FINAL format="text">\n{body}\n{closing}'


def tool_names(request: ModelRequest) -> set[str]:
    return {tool.name for tool in request.tools}


USAGE = Usage(input_tokens=100, output_tokens=10, model_calls=1)


def answer(text: str) -> AssistantTurn:
    return AssistantTurn(text=text, usage=USAGE)


def log_lines(count: int, needle_at: int | None = None, needle: str = "NEEDLE secret=4711") -> bytes:
    """``count`` ordinary log lines; line ``needle_at`` (1-based) holds the needle."""
    lines = [
        f"2026-01-01T00:00:{i % 60:02d} INFO worker-{i % 7} processed batch {i}" for i in range(1, count + 1)
    ]
    if needle_at is not None:
        lines[needle_at - 1] = f"2026-01-01T00:00:00 ERROR {needle}"
    return ("\n".join(lines) + "\n").encode()


def source(data: bytes, *, handle: str = "h-1", session_id: str | None = None) -> ExtractionSource:
    return ExtractionSource(
        handle=handle,
        tool_name="fetch_logs",
        arguments='{"service": "api"}',
        data=data,
        session_id=session_id,
    )


def grep_then_read_agent(pattern: str = "NEEDLE") -> Callable[[ModelRequest], AssistantTurn | str]:
    """A read-grep sub-agent that greps ``pattern``, reads the first hit and answers with that line."""

    def reply(request: ModelRequest) -> AssistantTurn | str:
        last = last_message(request)
        handle = re.search(r"handle: (\S+)", system_text(request))
        assert handle is not None
        if last.role == "user":
            return tool_call_turn(tool_call("grep", {"handle": handle.group(1), "pattern": pattern}))
        if last.role == "tool" and last.name == "grep":
            hit = re.search(r"^(\d+): ", last.content, re.MULTILINE)
            if hit is None:
                return wrapped(request, "NO RELEVANT DATA FOUND\nThe grep found nothing.")
            offset = int(hit.group(1))
            return tool_call_turn(
                tool_call("read", {"handle": handle.group(1), "offset": offset, "limit": 1})
            )
        assert last.role == "tool" and last.name == "read", last
        line = last.content.splitlines()[1]
        return wrapped(request, f"Found it at {line}")

    return reply


def adapter(
    fn: Callable[[ModelRequest], AssistantTurn | str], *, window: int | None = None
) -> FunctionAdapter:
    return FunctionAdapter(fn, name="extractor", model="test-extractor", context_window=window)
