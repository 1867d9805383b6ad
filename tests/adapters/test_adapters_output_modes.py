"""Output modes (native, json_object, tool, prompted, auto) through the official SDKs over fake transports.

Each mode runs the whole loop on ``OpenAIAdapter`` (AsyncOpenAI) and
``AnthropicAdapter`` (AsyncAnthropic) with a scripted server: a typed output
is parsed, or there is one corrective turn and then a clear
``OutputParseError``. The request bodies show what each mode sends.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
import pytest

from adapters_support import FIRST_PROMPT, TOOLS, FakeServer, make_request, openai_completion_body
from stream_support import (
    StreamServer,
    anthropic_stream_events,
    collect,
    final_turn,
    of_type,
    openai_stream_chunks,
    sse_data,
    sse_events,
)
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.output_modes import (
    FINAL_ANSWER_TOOL,
    FinalAnswerReader,
    OutputModes,
    final_answer_turn,
    is_format_refusal,
)
from weakprompt.errors import (
    ConfigurationError,
    OutputParseError,
    PromptValidationError,
    ProviderError,
    RateLimitError,
)
from weakprompt.messages import AssistantTurn, Message, ToolCall, Usage
from weakprompt.model import (
    ModelEvent,
    ReplyAssembler,
    ReplyCompleted,
    TextDelta,
    ToolCallReady,
    ToolCallStarted,
    turn_events,
)
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.tools import ToolContext, ToolResult, tool


@dataclass(frozen=True)
class City:
    name: str
    population: int


SCHEMA_DICT: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}
GOOD = '{"name": "Paris", "population": 2100000}'
BAD = '{"name": "Paris", "population": "many"}'
USAGE = Usage(input_tokens=20, output_tokens=8, model_calls=1)


def city_prompt(mode: Any = None) -> Prompt[City]:
    template = PromptTemplate(
        ns="tests/modes",
        key="city",
        sections=[MarkdownSection(title="Task", key="task", template="Name the capital of France.")],
        output_type=City,
        output_mode=mode,
    )
    return Prompt(template)


def text_turn(text: str) -> AssistantTurn:
    return AssistantTurn(text=text, usage=USAGE, finish_reason="stop")


def final_call_turn(arguments: str) -> AssistantTurn:
    call = ToolCall(id="call_final", name=FINAL_ANSWER_TOOL, arguments=arguments)
    return AssistantTurn(tool_calls=(call,), usage=USAGE, finish_reason="tool_calls")


def answer_turn(mode: str, answer: str) -> AssistantTurn:
    return final_call_turn(answer) if mode == "tool" else text_turn(answer)


# ---------------------------------------------------------------- the two SDKs, scripted


def openai_adapter(server: StreamServer, **options: Any) -> OpenAIAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client(), max_retries=0
    )
    return OpenAIAdapter("gpt-test", async_client=client, **options)


def openai_replies(server: StreamServer, *turns: AssistantTurn) -> StreamServer:
    for turn in turns:
        server.stream(sse_data(*openai_stream_chunks(turn), "[DONE]"))
    return server


def anthropic_adapter(server: StreamServer, **options: Any) -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="sk-test", base_url="http://fake.test", http_client=server.async_client(), max_retries=0
    )
    return AnthropicAdapter("claude-test", async_client=client, **options)


def anthropic_replies(server: StreamServer, *turns: AssistantTurn) -> StreamServer:
    for turn in turns:
        server.stream(sse_events(*anthropic_stream_events(turn)))
    return server


OPENAI_MODES = ("native", "json_object", "tool", "prompted")
ANTHROPIC_MODES = ("native", "tool", "prompted")
CASES = [("openai", mode) for mode in OPENAI_MODES] + [("anthropic", mode) for mode in ANTHROPIC_MODES]


def scripted(provider: str, mode: str, *answers: str) -> tuple[Any, StreamServer]:
    server = StreamServer()
    turns = [answer_turn(mode, answer) for answer in answers]
    if provider == "openai":
        return openai_adapter(openai_replies(server, *turns)), server
    return anthropic_adapter(anthropic_replies(server, *turns)), server


def system_text(provider: str, body: dict[str, Any]) -> str:
    if provider == "openai":
        return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
    return str(body.get("system", ""))


@pytest.mark.parametrize(("provider", "mode"), CASES)
def test_each_mode_parses_a_typed_output(provider: str, mode: str) -> None:
    adapter, server = scripted(provider, mode, GOOD)

    response = evaluate(city_prompt(mode), adapter=adapter, session=Session())

    assert response.output == City("Paris", 2100000)
    assert response.turns == 1
    (body,) = server.bodies()
    instructed = "JSON Schema" in system_text(provider, body)
    tool_names = [t["function"]["name"] if provider == "openai" else t["name"] for t in body.get("tools", [])]
    if provider == "openai":
        kind = body.get("response_format", {}).get("type")
        assert kind == {"native": "json_schema", "json_object": "json_object"}.get(mode)
    else:
        assert ("output_config" in body) == (mode == "native")
    assert instructed == (mode in ("json_object", "prompted"))
    assert (FINAL_ANSWER_TOOL in tool_names) == (mode == "tool")


@pytest.mark.parametrize(("provider", "mode"), CASES)
def test_each_mode_gets_one_corrective_turn_then_a_clear_parse_error(provider: str, mode: str) -> None:
    adapter, server = scripted(provider, mode, BAD, BAD)

    with pytest.raises(OutputParseError, match=r"\$\.population") as info:
        evaluate(city_prompt(mode), adapter=adapter, session=Session(), output_retries=1)

    assert "1 corrective turn" in "\n".join(getattr(info.value, "__notes__", []))
    first, second = server.bodies()
    correction = second["messages"][-1]
    assert correction["role"] == "user"
    text = (
        correction["content"] if isinstance(correction["content"], str) else correction["content"][0]["text"]
    )
    assert "$.population" in text
    # the corrective call is sent in the same mode as the first
    assert ("tools" in first) == ("tools" in second) == (mode == "tool")


@pytest.mark.parametrize(("provider", "mode"), CASES)
def test_each_mode_recovers_after_the_corrective_turn(provider: str, mode: str) -> None:
    adapter, _ = scripted(provider, mode, BAD, GOOD)

    response = evaluate(city_prompt(mode), adapter=adapter, session=Session(), output_retries=1)

    assert response.output == City("Paris", 2100000)
    assert response.output_retries_used == 1


def test_the_adapters_mode_applies_when_the_prompt_names_none() -> None:
    server = openai_replies(StreamServer(), text_turn(GOOD))
    adapter = openai_adapter(server, output_mode="prompted")

    evaluate(city_prompt(), adapter=adapter, session=Session())

    (body,) = server.bodies()
    assert "response_format" not in body and "JSON Schema" in system_text("openai", body)


def test_the_prompts_mode_wins_over_the_adapters() -> None:
    server = openai_replies(StreamServer(), text_turn(GOOD))
    adapter = openai_adapter(server, output_mode="prompted")

    evaluate(city_prompt("json_object"), adapter=adapter, session=Session())

    assert server.bodies()[0]["response_format"] == {"type": "json_object"}


def test_a_mode_the_adapter_lacks_is_a_configuration_error() -> None:
    server = StreamServer()
    with pytest.raises(ConfigurationError, match="does not support output mode 'json_object'"):
        anthropic_adapter(server, output_mode="json_object")
    adapter = anthropic_adapter(server)
    with pytest.raises(ConfigurationError, match=r"supported: auto, native, tool, prompted"):
        evaluate(city_prompt("json_object"), adapter=adapter, session=Session())
    assert server.requests == []


def test_an_unknown_mode_on_a_template_is_refused() -> None:
    with pytest.raises(PromptValidationError, match="output_mode must be one of"):
        city_prompt("yaml")


def test_without_an_output_type_no_mode_is_applied() -> None:
    server = openai_replies(StreamServer(), text_turn("hello"))
    adapter = openai_adapter(server, output_mode="tool")

    turn = final_turn(collect(adapter, make_request(FIRST_PROMPT)))

    assert turn.text == "hello"
    assert "tools" not in server.bodies()[0] and "response_format" not in server.bodies()[0]


def test_a_prompt_without_a_system_message_gets_one_with_the_instruction() -> None:
    server = openai_replies(StreamServer(), text_turn(GOOD))
    adapter = openai_adapter(server, output_mode="prompted")
    user = Message(role="user", content="Capital of France?")

    collect(adapter, make_request([user], output_schema=SCHEMA_DICT))

    first = server.bodies()[0]["messages"][0]
    assert first["role"] == "system" and "JSON Schema" in first["content"]


# ---------------------------------------------------------------- tool mode


def test_tool_mode_with_other_tools_requires_a_call_and_keeps_them() -> None:
    server = openai_replies(StreamServer(), text_turn(GOOD))
    adapter = openai_adapter(server, output_mode="tool")

    collect(adapter, make_request(FIRST_PROMPT, tools=TOOLS, output_schema=SCHEMA_DICT))

    body = server.bodies()[0]
    assert [t["function"]["name"] for t in body["tools"]] == [
        "get_weather",
        "search_notes",
        FINAL_ANSWER_TOOL,
    ]
    assert body["tool_choice"] == "required"
    assert body["tools"][-1]["function"]["parameters"] == SCHEMA_DICT
    assert body["tools"][-1]["function"]["strict"] is True


def test_tool_mode_alone_forces_the_final_answer_on_anthropic() -> None:
    server = anthropic_replies(StreamServer(), final_call_turn(GOOD))
    adapter = anthropic_adapter(server, output_mode="tool")

    events = collect(adapter, make_request(FIRST_PROMPT, output_schema=SCHEMA_DICT))

    body = server.bodies()[0]
    assert body["tool_choice"] == {"type": "tool", "name": FINAL_ANSWER_TOOL}
    assert body["tools"][0]["input_schema"] == SCHEMA_DICT
    turn = final_turn(events)
    assert json.loads(turn.text) == json.loads(GOOD)
    assert (turn.tool_calls, turn.finish_reason) == ((), "stop")
    assert of_type(events, ToolCallStarted) == []


@tool(name=FINAL_ANSWER_TOOL)
def final_answer(params: City, *, context: ToolContext) -> ToolResult[str]:
    """A user tool with the reserved name."""
    return ToolResult.ok(params.name)


def test_a_tool_named_final_answer_clashes_with_tool_mode() -> None:
    adapter = openai_adapter(StreamServer(), output_mode="tool")
    with pytest.raises(ConfigurationError, match="already offers one"):
        adapter.build_params(make_request(FIRST_PROMPT, tools=[final_answer], output_schema=SCHEMA_DICT))


def test_the_final_answer_among_other_calls_becomes_text_and_the_others_are_renumbered() -> None:
    turn = AssistantTurn(
        text="Here:",
        tool_calls=(
            ToolCall(id="a", name="get_weather", arguments='{"city": "Paris"}'),
            ToolCall(id="f", name=FINAL_ANSWER_TOOL, arguments={"name": "Paris", "population": 1}),
            ToolCall(id="b", name="search_notes", arguments='{"query": "x"}'),
        ),
        usage=USAGE,
        finish_reason="tool_calls",
    )

    async def rewrite() -> list[ModelEvent]:
        async def source():  # type: ignore[no-untyped-def]
            for event in turn_events(turn):
                yield event

        return [event async for event in FinalAnswerReader().read(source())]

    events = asyncio.run(rewrite())
    assembler = ReplyAssembler(provider="test")
    for event in events:
        assembler.add(event)
    rebuilt = assembler.result()
    whole = final_answer_turn(turn)
    assert rebuilt == whole
    assert [c.id for c in rebuilt.tool_calls] == ["a", "b"]
    assert [e.index for e in of_type(events, ToolCallReady)] == [0, 1]
    assert rebuilt.text == 'Here:\n\n{"name":"Paris","population":1}'
    assert rebuilt.finish_reason == "tool_calls"
    assert isinstance(events[-1], ReplyCompleted)


def test_a_reply_without_the_final_answer_passes_unchanged() -> None:
    turn = text_turn("plain")
    assert final_answer_turn(turn) is turn

    async def rewrite() -> list[ModelEvent]:
        async def source():  # type: ignore[no-untyped-def]
            for event in turn_events(turn):
                yield event

        return [event async for event in FinalAnswerReader().read(source())]

    events = asyncio.run(rewrite())
    assert of_type(events, TextDelta) == [TextDelta("plain")]
    assert final_turn(events) == turn


def test_tool_mode_on_the_whole_reply_path() -> None:
    fake = FakeServer().reply(200, openai_completion_body(final_call_turn(GOOD)))
    sync = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=fake.client(), max_retries=0
    )
    adapter = OpenAIAdapter("gpt-test", client=sync, output_mode="tool")

    turn = adapter.complete(make_request(FIRST_PROMPT, output_schema=SCHEMA_DICT))

    assert (turn.text, turn.tool_calls, turn.finish_reason) == (GOOD, (), "stop")
    assert fake.bodies()[0]["tool_choice"] == {"type": "function", "function": {"name": FINAL_ANSWER_TOOL}}


# ---------------------------------------------------------------- auto


REFUSAL = {
    "error": {"message": "response_format: Input should be 'text' or 'json_object'", "type": "server_error"}
}


def test_auto_falls_back_once_and_remembers_it() -> None:
    server = StreamServer().json(500, REFUSAL)
    openai_replies(server, text_turn(GOOD), text_turn(GOOD))
    adapter = openai_adapter(server)

    first = evaluate(city_prompt("auto"), adapter=adapter, session=Session())
    second = evaluate(city_prompt("auto"), adapter=adapter, session=Session())

    assert first.output == second.output == City("Paris", 2100000)
    formats = [body["response_format"]["type"] for body in server.bodies()]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert adapter.output_modes.auto_mode == "json_object"


def test_auto_on_the_whole_reply_path_falls_back_too() -> None:
    fake = FakeServer().reply(
        400, {"error": {"message": "'response_format' of type 'json_schema' is not supported"}}
    )
    fake.reply(200, openai_completion_body(text_turn(GOOD)))
    sync = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=fake.client(), max_retries=0
    )
    adapter = OpenAIAdapter("gpt-test", client=sync)

    turn = adapter.complete(make_request(FIRST_PROMPT, output_schema=SCHEMA_DICT))

    assert turn.text == GOOD
    assert [b["response_format"]["type"] for b in fake.bodies()] == ["json_schema", "json_object"]


def test_auto_gives_up_after_its_last_mode() -> None:
    server = StreamServer().json(500, REFUSAL).json(500, REFUSAL).json(500, REFUSAL)
    adapter = openai_adapter(server)

    with pytest.raises(ProviderError, match="json_object"):
        collect(adapter, make_request(FIRST_PROMPT, output_schema=SCHEMA_DICT))

    assert len(server.requests) == 3  # native, json_object, prompted: each tried once
    assert adapter.output_modes.auto_mode == "prompted"


def test_a_chosen_mode_never_falls_back() -> None:
    server = StreamServer().json(500, REFUSAL)
    adapter = openai_adapter(server, output_mode="native")

    with pytest.raises(ProviderError):
        collect(adapter, make_request(FIRST_PROMPT, output_schema=SCHEMA_DICT))
    assert len(server.requests) == 1


def test_only_a_refused_format_is_a_refusal() -> None:
    assert is_format_refusal(ProviderError("x error 500: response_format unsupported", status_code=500))
    assert not is_format_refusal(ProviderError("x error 500: boom", status_code=500))
    assert not is_format_refusal(RateLimitError("json_schema slow down", status_code=429))
    assert not is_format_refusal(ProviderError("json_schema lost connection", status_code=None))


def test_modes_reject_a_default_they_do_not_support() -> None:
    with pytest.raises(ConfigurationError, match="does not support output mode 'tool'"):
        OutputModes("X", supported=("native",), auto_order=("native",), default="tool")


@pytest.mark.parametrize("choice", ["required", "none"])
def test_tool_mode_keeps_an_explicit_tool_choice(choice: Any) -> None:
    adapter = openai_adapter(StreamServer(), output_mode="tool")
    params = adapter.build_params(
        make_request(FIRST_PROMPT, tools=TOOLS, tool_choice=choice, output_schema=SCHEMA_DICT)
    )
    assert params["tool_choice"] == choice
