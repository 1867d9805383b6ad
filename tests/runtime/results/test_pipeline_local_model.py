"""The whole pipeline on the real local model (SmolLM2-135M-Instruct through llama.cpp).

An oversized tool output goes behind a handle; on the next turn the model is
forced (``ForceTool``) to call ``tool_output``; extraction runs on the same
local model; its reply reaches the model. The tiny model's words are not
judged, only the plumbing: the handle it copies, the extraction's real
model calls and usage, and where each text ends up.

On the forced turn the request carries ``tool_output`` with a length cap on
``extract`` (and no ``mode``): llama.cpp turns the schema into a grammar,
and without a cap the 135M model repeats itself until it runs out of
tokens. The call still goes to the real ``tool_output`` tool.
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import attrs
import pytest

from weakprompt.events import ToolOutputExtracted, ToolResultStored
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelEvent
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ForceTool, ModelRequest, evaluate
from weakprompt.runtime.results import ToolOutputSettings, ToolOutputStore, handle_text, output_stats
from weakprompt.runtime.results.extraction import TOOL_OUTPUT_SCHEMA, ExtractionConfig
from weakprompt.runtime.results.extraction.tool_output_tool import FixedSchemaTool
from weakprompt.serde import Meta
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import AnyTool, ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript

if TYPE_CHECKING:
    from weakprompt.runtime import ProviderAdapter
    from weakprompt.tokens import TokenCounter

pytestmark = pytest.mark.real_model

LOG = "".join(
    f"2026-01-01T00:00:{i % 60:02d} INFO worker-{i % 7} processed batch {i} ok\n" for i in range(300)
)
LOG = LOG.replace("processed batch 200 ok", "ERROR disk full on /var/data code=E4711")


@dataclass(frozen=True)
class Service:
    # A length cap becomes part of the grammar, so the tiny model cannot ramble.
    service: Annotated[str, Meta(max_length=20)]


@tool(name="fetch_logs", description="Fetch the log of a service.")
def fetch_logs(params: Service, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=LOG)


TEMPLATE: PromptTemplate[None] = PromptTemplate(
    ns="tests/pipeline-local",
    key="logs",
    sections=[
        MarkdownSection(
            title="Operations",
            key="ops",
            template="Find errors in service logs. Use fetch_logs, then tool_output to read large outputs.",
            tools=[fetch_logs],
        )
    ],
)


def _capped(tool: AnyTool) -> AnyTool:
    assert isinstance(tool, FixedSchemaTool)
    schema = copy.deepcopy(TOOL_OUTPUT_SCHEMA)
    properties = schema["properties"]
    assert isinstance(properties, dict)
    del properties["mode"]
    extract = properties["extract"]
    assert isinstance(extract, dict)
    extract["maxLength"] = 80
    return attrs.evolve(tool, fixed_schema=schema)


class ForceAfterHandle:
    """Passes requests to the local model; forces ``tool_output`` on the turn after a handle message."""

    def __init__(self, inner: ProviderAdapter) -> None:
        self.inner = inner
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def context_window(self) -> int | None:
        return self.inner.context_window

    @property
    def token_counter(self) -> TokenCounter | None:
        return self.inner.token_counter

    def complete(self, request: ModelRequest) -> AssistantTurn:
        return self.inner.complete(self._steer(request))

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self.inner.stream(self._steer(request))

    def _steer(self, request: ModelRequest) -> ModelRequest:
        last = request.context.messages[-1]
        offered = [t.name for t in request.tools]
        if (
            "tool_output" in offered
            and last.role == "tool"
            and last.content.startswith("Tool output is too large")
        ):
            tools = tuple(_capped(t) if t.name == "tool_output" else t for t in request.tools)
            request = attrs.evolve(request, tools=tools, tool_choice=ForceTool("tool_output"))
        self.requests.append(request)
        return request


def test_oversized_output_handle_forced_tool_output_and_local_extraction(tmp_path: object) -> None:
    from pathlib import Path

    from weakprompt.adapters.local import LocalAdapter

    adapter = ForceAfterHandle(LocalAdapter(progress=False, max_tokens=64))
    session = Session(session_id="local-pipeline")
    stored: list[ToolResultStored] = []
    extracted: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolResultStored, stored.append)
    session.bus.subscribe(ToolOutputExtracted, extracted.append)
    store = Store.open(Path(str(tmp_path)) / "local.db")

    response = evaluate(
        Prompt(TEMPLATE),
        adapter=adapter,
        session=session,
        input="What error is in the api service log?",
        store=store,
        tool_choice=ForceTool("fetch_logs"),
        max_turns=4,
        max_output_tokens=64,
        # Small limits keep the test quick and the replies inside the 4096-token window of the tiny model.
        tool_outputs=ToolOutputSettings(
            extraction_config=ExtractionConfig(
                max_output_tokens=64, truncate_max_bytes=1024, read_grep_max_turns=2
            )
        ),
    )

    # The output was stored and kept out of the context: the model saw exactly the handle message.
    [meta] = ToolOutputStore(store, session.session_id).list_results()
    assert meta.tool_name == "fetch_logs" and meta.oversized and meta.size_bytes == len(LOG)
    assert [(e.tool_name, e.oversized) for e in stored if e.handle is not None] == [("fetch_logs", True)]
    main = [r for r in adapter.requests if "fetch_logs" in [t.name for t in r.tools]]
    assert main[1].context.messages[-1].content == handle_text(meta.handle, output_stats(meta))
    assert main[1].tool_choice == ForceTool("tool_output")
    # The forced call named the handle, so extraction ran on the local model and was counted.
    transcript = Transcript(store, session.session_id)
    [call_turn] = transcript.find_tool_calls(name="tool_output")
    assert meta.handle in str(call_turn.content.tool_calls[0].arguments)
    [event] = extracted
    assert event.handle == meta.handle
    assert event.usage.model_calls >= 1 and event.usage.input_tokens > 0
    # The extraction's reply reached the model on its next turn.
    [reply] = transcript.find_tool_results(name="tool_output")
    assert reply.content.content.startswith(
        f"ABSTRACT FROM TOOL OUTPUT fetch_logs WITH HANDLE {meta.handle}, "
    )
    assert main[2].context.messages[-1].content == reply.content.content
    assert response.usage.model_calls == len(main) + event.usage.model_calls
    store.close()
