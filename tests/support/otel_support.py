"""A scripted run for the OpenTelemetry tests: tool calls, a failure, a summary, a handle, an extraction."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hooks_support import GREP_OUTPUT
from pipeline_support import HANDLE, MAIN_USAGE, NEEDLE, Outputs, World, fetch_prompt, log_text
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import TOOL_SUMMARY_SYSTEM_PROMPT, Transcript

BIG = log_text(400, needle_at=123)  # over the 12 KB cap: stored behind a handle
SECRET = "sk-" + "livekey123456"
SUMMARY = "src/app.py:10 defines main"
SUMMARY_USAGE = Usage(input_tokens=100, output_tokens=5, model_calls=1)


@dataclass(frozen=True)
class GrepParams:
    pattern: str


@tool(name="grep", description="Search the code base.")
def grep(params: GrepParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=GREP_OUTPUT)


@dataclass(frozen=True)
class LookupParams:
    key: str


def _explode(key: str) -> None:
    raise RuntimeError(f"backend refused: token={key}")


@tool(name="broken", description="Look something up (always raises).")
def broken(params: LookupParams, *, context: ToolContext) -> ToolResult[None]:
    _explode(params.key)
    return ToolResult(message="unreachable")


_providers: list[TracerProvider] = []


def _user_tracer() -> trace.Tracer:
    """The application's own tracer (the latest recorder's provider)."""
    return trace.get_tracer("user-code", tracer_provider=_providers[-1])


@dataclass(frozen=True)
class ProbeParams:
    label: str


@tool(name="probe", description="Opens a span of its own (user code inside a tool).")
def probe(params: ProbeParams, *, context: ToolContext) -> ToolResult[None]:
    with _user_tracer().start_as_current_span(f"probe {params.label}"):
        return ToolResult(message=f"probed {params.label} with api_key={SECRET}")


@tool(name="aprobe", description="An async tool opening a span of its own.")
async def aprobe(params: ProbeParams, *, context: ToolContext) -> ToolResult[None]:
    with _user_tracer().start_as_current_span(f"aprobe {params.label}"):
        return ToolResult(message=f"aprobed {params.label}")


hang_started: list[asyncio.Event] = []


@tool(name="hang", description="Never returns.")
async def hang(params: ProbeParams, *, context: ToolContext) -> ToolResult[None]:
    hang_started[-1].set()
    await asyncio.sleep(3600)
    return ToolResult(message="never")


def hanging_prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/otel",
            key="hang",
            sections=[MarkdownSection(title="T", key="t", template="x", tools=[hang])],
        )
    )


def prompt() -> Prompt[None]:
    return fetch_prompt(Outputs([BIG]), extra_tools=(grep, broken, probe, aprobe))


FIRST_CALLS = (
    tool_call("fetch", {"source": "logs"}, id="c-fetch"),
    tool_call("broken", {"key": f"password={SECRET}"}, id="c-broken"),
    tool_call("grep", {"pattern": "main"}, id="c-grep"),
    tool_call("probe", {"label": "one"}, id="c-probe1"),
    tool_call("aprobe", {"label": "two"}, id="c-probe2"),
)


def world() -> World:
    """The agent: five calls at once, then ``tool_output`` (full-chunked) on the handle, then an answer."""

    def agent(request: ModelRequest) -> AssistantTurn | str | None:
        messages = request.context.messages
        if messages[0].content == TOOL_SUMMARY_SYSTEM_PROMPT:
            return AssistantTurn(text=SUMMARY, usage=SUMMARY_USAGE)
        if messages[-1].role == "user":
            return tool_call_turn(*FIRST_CALLS, usage=MAIN_USAGE)
        if any(m.name == "tool_output" or m.content.startswith("ABSTRACT") for m in messages):
            return AssistantTurn(text=f"found {NEEDLE}", usage=MAIN_USAGE)
        handle = next(h for m in messages if (h := HANDLE.search(m.content)) is not None)
        return tool_call_turn(
            tool_call(
                "tool_output",
                {"handle": handle.group(1), "extract": f"the line with {NEEDLE}", "mode": "full-chunked"},
                id="c-extract",
            ),
            usage=MAIN_USAGE,
        )

    return World("full-chunked", next_call=agent)


def configure(transcript: Transcript) -> None:
    transcript.configure_tool_summarization(instructions={"grep": "keep file:line pairs"})


class Recorder:
    """An SDK tracer provider whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        _providers.append(self.provider)

    @property
    def spans(self) -> tuple[ReadableSpan, ...]:
        return tuple(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def one(self, name: str) -> ReadableSpan:
        (span,) = [s for s in self.spans if s.name == name]
        return span

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return [s for s in self.spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
