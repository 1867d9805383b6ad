"""A small shop prompt, recorded into a SQLite file, for the replay tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from weakprompt import MarkdownSection, Prompt, PromptTemplate, Session, Store, ToolResult, evaluate, tool
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest, ModelSettings
from weakprompt.tools import AnyTool

RAN: list[str] = []
"""The skus the stock handler was called with, in order."""


@dataclass(frozen=True)
class Answer:
    total: int


def make_stock(description: str = "Units in stock.") -> AnyTool:
    @tool(name="stock", description=description)
    def stock(sku: str) -> ToolResult[int]:
        RAN.append(sku)
        return ToolResult.ok({"mug": 12, "cup": 3}.get(sku, 0))

    return stock


def make_prompt(
    *,
    rules: str = "Answer stock questions.",
    style: str = "Be brief.",
    description: str = "Units in stock.",
    output_type: type[object] = Answer,
    extra_tool: AnyTool | None = None,
    model_settings: ModelSettings | None = None,
) -> Prompt[object]:
    tools = [make_stock(description)] + ([] if extra_tool is None else [extra_tool])
    sections = [
        MarkdownSection(title="Shop", key="shop", template=rules, tools=tools),
        MarkdownSection(title="Style", key="style", template=style),
    ]
    template = PromptTemplate(
        ns="tests", key="shop", sections=sections, output_type=output_type, model_settings=model_settings
    )
    return Prompt(template)


def script() -> list[AssistantTurn]:
    return [
        tool_call_turn(
            tool_call("stock", {"sku": "mug"}, id="c1"), tool_call("stock", {"sku": "cup"}, id="c2")
        ),
        text_turn('{"total": 15}'),
    ]


def record(path: Path, session_id: str = "rec") -> Path:
    """Record one run of the shop prompt into the SQLite file ``path``."""
    with Store.open(path) as store:
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()),
            session=Session(session_id=session_id),
            store=store,
            input="How many mugs and cups?",
        )
    RAN.clear()
    return path


class NoProvider:
    """An adapter that fails the test if anything calls it."""

    name = "no-provider"
    model = "none"
    context_window = None
    token_counter = None

    def complete(self, request: ModelRequest) -> AssistantTurn:
        raise AssertionError("replay called a provider")

    async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
        raise AssertionError("replay called a provider")
        yield  # pragma: no cover
