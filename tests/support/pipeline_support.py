"""A scripted agent world for the pipeline tests: one model plays the agent and every extractor.

The same deterministic function answers the main agent's requests, the
read-grep sub-agent's and the full-chunked map/reduce calls, told apart by
the tools offered and the system prompt, as the evaluation's adapter would
be by default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest
from weakprompt.tools import ToolContext, ToolResult, tool

NEEDLE = "NEEDLE-7f3a"
NONCE = re.compile(r"<wp-([A-Za-z0-9]+)-FINAL")
HANDLE = re.compile(r'tool_output\(handle = "([^"]+)"')
MAIN_USAGE = Usage(input_tokens=10, output_tokens=2, model_calls=1)
EXTRACT_USAGE = Usage(input_tokens=100, output_tokens=5, model_calls=1)


def log_text(count: int, *, needle_at: int | None = None) -> str:
    """``count`` log lines (about 60 bytes each); line ``needle_at`` (0-based) holds the needle."""
    lines = [
        f"2026-01-01T00:00:{i % 60:02d} INFO worker-{i % 7} processed batch {i:06d} ok" for i in range(count)
    ]
    if needle_at is not None:
        lines[needle_at] = f"2026-01-01T00:00:00 ERROR worker-3 failed: {NEEDLE} disk quota exceeded"
    return "\n".join(lines) + "\n"


def single_line_json(records: int, *, needle_at: int | None = None) -> str:
    """One huge JSON line (no newlines at all): the shape that forces full-chunked extraction."""
    items = [{"id": i, "status": "ok", "note": "routine record " * 3} for i in range(records)]
    if needle_at is not None:
        items[needle_at] = {"id": needle_at, "status": "failed", "note": NEEDLE}
    return json.dumps({"items": items})


@dataclass
class Outputs:
    """What the ``fetch`` tool returns, by call number (cycling through the list)."""

    texts: list[str]
    calls: int = 0


@dataclass(frozen=True)
class FetchParams:
    source: str = field(metadata={"description": "what to fetch"})


def fetch_prompt(outputs: Outputs, *, extra_tools: tuple[object, ...] = ()) -> Prompt[None]:
    @tool(name="fetch", description="Fetch a data source.")
    def fetch(params: FetchParams, *, context: ToolContext) -> ToolResult[None]:
        text = outputs.texts[outputs.calls % len(outputs.texts)]
        outputs.calls += 1
        return ToolResult(message=text)

    return Prompt(
        PromptTemplate(
            ns="tests/pipeline",
            key="fetch",
            name="pipeline",
            sections=[
                MarkdownSection(
                    title="Task",
                    key="task",
                    template="Answer questions about the data you fetch.",
                    tools=[fetch, *extra_tools],  # type: ignore[list-item]
                )
            ],
        )
    )


def _system(request: ModelRequest) -> str:
    return next((m.content for m in request.context.messages if m.role == "system"), "")


def wrapped(request: ModelRequest, body: str) -> str:
    found = NONCE.search(_system(request))
    assert found is not None, "an extraction prompt always shows its wrapper"
    nonce = found.group(1)
    return f'<wp-{nonce}-FINAL format="text">\n{body}\n</wp-{nonce}-FINAL>'


def _needle_line(text: str) -> str | None:
    return next((line for line in text.splitlines() if NEEDLE in line), None)


class World:
    """The scripted model. ``mode`` is what the agent passes to ``tool_output``.

    Records every request by kind: ``main``, ``grep`` (read-grep sub-agent)
    and ``chunk`` (full-chunked map or reduce calls).
    """

    def __init__(
        self,
        mode: str | None = "read-grep",
        *,
        extract: str = f"the ERROR line mentioning {NEEDLE}",
        fail_extraction: bool = False,
        next_call: Callable[[ModelRequest], AssistantTurn | str | None] | None = None,
    ) -> None:
        self.mode = mode
        self.extract = extract
        self.fail_extraction = fail_extraction
        self.next_call = next_call
        self.requests: dict[str, list[ModelRequest]] = {"main": [], "grep": [], "chunk": []}
        self.adapter = FunctionAdapter(self.reply, name="world", model="scripted", context_window=4096)

    def reply(self, request: ModelRequest) -> AssistantTurn | str:
        names = {t.name for t in request.tools}
        if {"read", "grep"} <= names and "fetch" not in names:
            self.requests["grep"].append(request)
            return self._grep_agent(request)
        if not request.tools and NONCE.search(_system(request)):
            self.requests["chunk"].append(request)
            return self._chunk_reader(request)
        self.requests["main"].append(request)
        return self._agent(request)

    def _agent(self, request: ModelRequest) -> AssistantTurn | str:
        if self.next_call is not None:
            custom = self.next_call(request)
            if custom is not None:
                return custom
        last = request.context.messages[-1]
        if last.role == "user":
            return tool_call_turn(tool_call("fetch", {"source": "logs"}), usage=MAIN_USAGE)
        handle = HANDLE.search(last.content) if last.role == "tool" else None
        if handle is not None and self.mode is not None:
            arguments: dict[str, str] = {"handle": handle.group(1), "extract": self.extract}
            if self.mode != "auto":
                arguments["mode"] = self.mode
            return tool_call_turn(tool_call("tool_output", arguments), usage=MAIN_USAGE)
        return AssistantTurn(text=f"final: {last.content}", usage=MAIN_USAGE)

    def _grep_agent(self, request: ModelRequest) -> AssistantTurn | str:
        if self.fail_extraction:
            return AssistantTurn(text="I will not use the wrapper.", usage=EXTRACT_USAGE)
        last = request.context.messages[-1]
        handle = re.search(r"handle: (\S+)", _system(request))
        assert handle is not None
        if last.role == "user":
            return tool_call_turn(
                tool_call("grep", {"handle": handle.group(1), "pattern": NEEDLE, "context": 0}),
                usage=EXTRACT_USAGE,
            )
        hit = _needle_line(last.content)
        body = f"Found: {hit}" if hit else "NO RELEVANT DATA FOUND\nNo line mentions the needle."
        return AssistantTurn(text=wrapped(request, body), usage=EXTRACT_USAGE)

    def _chunk_reader(self, request: ModelRequest) -> AssistantTurn | str:
        if self.fail_extraction:
            return AssistantTurn(text="no wrapper here", usage=EXTRACT_USAGE)
        user = request.context.messages[-1].content
        if NEEDLE in user:
            start = user.index(NEEDLE)
            body = f"Found: {user[max(0, start - 40) : start + len(NEEDLE) + 10]}"
        else:
            body = "NO RELEVANT DATA FOUND\nOnly routine records."
        return AssistantTurn(text=wrapped(request, body), usage=EXTRACT_USAGE)
