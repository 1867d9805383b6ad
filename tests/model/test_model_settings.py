"""Model settings: one typed object, merged adapter < prompt < run, mapped per provider, refused if unknown.

The adapters are the official SDKs over ``httpx2.MockTransport`` (and a fake
llama for the local one); the request bodies are checked against the SDKs'
request types.
"""

from __future__ import annotations

import copy
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming as AnthropicParams
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming as OpenAIParams
from pydantic import TypeAdapter

from adapters_support import (
    ANSWER_TURN,
    FIRST_PROMPT,
    TOOLS,
    USER,
    FakeServer,
    anthropic_message_body,
    make_request,
)
from adapters_support import openai_completion_body as completion_body
from stream_support import StreamServer, openai_chunk, sse_data
from weakprompt import (
    Agent,
    FunctionAdapter,
    MarkdownSection,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    evaluate,
)
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.local import LocalAdapter
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.errors import ConfigurationError, PromptValidationError
from weakprompt.model import ModelRequest, ModelSettings, adapter_settings
from weakprompt.model_settings import SETTING_NAMES
from weakprompt.runtime.run_settings import RunSettings
from weakprompt.transcript import Transcript

OPENAI_REQUEST = TypeAdapter(OpenAIParams)
ANTHROPIC_REQUEST = TypeAdapter(AnthropicParams)

settings_strategy = st.builds(
    ModelSettings,
    temperature=st.none() | st.floats(0.0, 2.0),
    top_p=st.none() | st.floats(0.01, 1.0),
    max_output_tokens=st.none() | st.integers(1, 10_000),
    stop=st.none() | st.lists(st.text(min_size=1, max_size=4), max_size=3).map(tuple),
    seed=st.none() | st.integers(-5, 5),
    parallel_tool_calls=st.none() | st.booleans(),
    reasoning_effort=st.none() | st.sampled_from(["minimal", "low", "medium", "high"]),
    thinking_budget=st.none() | st.integers(1, 5000),
    service_tier=st.none() | st.sampled_from(["auto", "flex"]),
    extra=st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(0, 3), max_size=2),
)


@given(settings_strategy, settings_strategy)
def test_merging_puts_every_set_field_of_the_later_layer_over_the_earlier(
    under: ModelSettings, over: ModelSettings
) -> None:
    merged = under.merged(over)
    for name in SETTING_NAMES:
        later = getattr(over, name)
        assert getattr(merged, name) == (getattr(under, name) if later is None else later)
    assert dict(merged.extra) == {**under.extra, **over.extra}
    assert under.merged(None) is under


@given(settings_strategy, settings_strategy, settings_strategy)
def test_merging_three_layers_does_not_depend_on_grouping(
    a: ModelSettings, b: ModelSettings, c: ModelSettings
) -> None:
    assert a.merged(b).merged(c) == a.merged(b.merged(c))


@given(settings_strategy)
def test_the_recorded_json_lists_exactly_the_set_fields(settings: ModelSettings) -> None:
    data = settings.to_json()
    assert set(data) == set(settings.chosen())
    assert ModelSettings(**data) == settings  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("temperature", 2.5, "temperature must be a number in [0.0, 2.0]"),
        ("temperature", float("nan"), "temperature must be a number"),
        ("top_p", 0.0, "top_p must be a number in (0.0, 1.0]"),
        ("max_output_tokens", 0, "max_output_tokens must be an int >= 1"),
        ("thinking_budget", True, "thinking_budget must be an int >= 1"),
        ("seed", 1.5, "seed must be an int"),
        ("stop", "END", "not one string"),
        ("stop", ["ok", ""], "every stop sequence must be a non-empty string"),
        ("stop", 3, "stop must be a sequence of strings"),
        ("reasoning_effort", "max", "reasoning_effort must be one of minimal, low, medium, high"),
        ("service_tier", "", "service_tier must be a non-empty string"),
        ("parallel_tool_calls", "yes", "parallel_tool_calls must be True, False or None"),
        ("extra", ["x"], "extra must be a mapping"),
        ("extra", {"": 1}, "extra keys must be non-empty strings"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(field: str, value: object, says: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^ModelSettings: ") as raised:
        ModelSettings(**{field: value})  # pyright: ignore[reportArgumentType]
    assert says in str(raised.value)


def _openai(server: FakeServer, **options: Any) -> OpenAIAdapter:
    client = openai.OpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.client(), max_retries=0
    )
    return OpenAIAdapter("gpt-test", client=client, **options)


def _anthropic(server: FakeServer, **options: Any) -> AnthropicAdapter:
    client = anthropic.Anthropic(
        api_key="sk-ant-test", base_url="http://fake.test", http_client=server.client(), max_retries=0
    )
    return AnthropicAdapter("claude-test", client=client, **options)


def test_openai_sends_every_setting_it_takes_under_its_own_name() -> None:
    server = FakeServer().reply(200, completion_body(ANSWER_TURN))
    adapter = _openai(server, temperature=0.3, settings=ModelSettings(seed=7, service_tier="flex"))
    request = make_request(
        [USER],
        tools=TOOLS,
        settings=ModelSettings(
            top_p=0.5,
            stop=("END",),
            parallel_tool_calls=False,
            reasoning_effort="low",
            max_output_tokens=99,
            extra={"user": "u-1"},
        ),
    )
    adapter.complete(request)
    body = server.bodies()[0]
    OPENAI_REQUEST.validate_python(body)
    assert body["temperature"] == 0.3 and body["seed"] == 7 and body["service_tier"] == "flex"
    assert body["top_p"] == 0.5 and body["stop"] == ["END"] and body["parallel_tool_calls"] is False
    assert body["reasoning_effort"] == "low" and body["max_completion_tokens"] == 99
    assert body["user"] == "u-1"  # extra, sent as it is


def test_openai_leaves_parallel_tool_calls_out_when_no_tool_is_offered() -> None:
    server = FakeServer().reply(200, completion_body(ANSWER_TURN))
    _openai(server, settings=ModelSettings(parallel_tool_calls=True)).complete(make_request(FIRST_PROMPT))
    assert "parallel_tool_calls" not in server.bodies()[0]


def test_a_setting_openai_does_not_take_is_refused_before_any_request() -> None:
    server = FakeServer()
    adapter = _openai(server)
    with pytest.raises(
        ConfigurationError, match=r"OpenAIAdapter \(gpt-test\) does not support .*thinking_budget"
    ):
        adapter.complete(make_request([USER], settings=ModelSettings(thinking_budget=1000)))
    with pytest.raises(ConfigurationError, match="thinking_budget"):
        _openai(server, settings=ModelSettings(thinking_budget=5))
    assert server.requests == []


def test_anthropic_maps_stop_parallel_calls_and_tier_and_refuses_sampling_its_sdk_lacks() -> None:
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))
    adapter = _anthropic(server, settings=ModelSettings(service_tier="standard_only"))
    adapter.complete(
        make_request([USER], tools=TOOLS, settings=ModelSettings(stop=("STOP",), parallel_tool_calls=False))
    )
    body = server.bodies()[0]
    ANTHROPIC_REQUEST.validate_python(body)
    assert body["stop_sequences"] == ["STOP"] and body["service_tier"] == "standard_only"
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    for refused in (
        ModelSettings(temperature=0.2),
        ModelSettings(seed=1),
    ):
        with pytest.raises(ConfigurationError, match=r"AnthropicAdapter \(claude-test\) does not support"):
            adapter.complete(make_request([USER], settings=refused))
    assert len(server.requests) == 1


def test_anthropic_passes_extra_and_the_settings_output_cap() -> None:
    server = FakeServer().reply(200, anthropic_message_body(ANSWER_TURN))
    _anthropic(server).complete(
        make_request([USER], settings=ModelSettings(max_output_tokens=77, extra={"top_k": 5}))
    )
    body = server.bodies()[0]
    assert body["max_tokens"] == 77 and body["top_k"] == 5


class _FakeLlama:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.metadata = {"tokenizer.chat_template": "{{ messages }}{{ tools }}"}

    def create_chat_completion(self, **kwargs: Any) -> Any:
        self.calls.append(copy.deepcopy(kwargs))
        return completion_body(ANSWER_TURN)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [len(word) for word in text.split()]

    def n_ctx(self) -> int:
        return 512


def test_the_local_model_takes_sampling_settings_and_refuses_the_rest() -> None:
    fake = _FakeLlama()
    adapter = LocalAdapter(llama=fake, temperature=0.4, settings=ModelSettings(top_p=0.9))
    adapter.complete(make_request([USER], settings=ModelSettings(stop=("\n\n",), seed=11)))
    (call,) = fake.calls
    assert (call["temperature"], call["top_p"], call["stop"], call["seed"]) == (0.4, 0.9, ["\n\n"], 11)
    with pytest.raises(
        ConfigurationError,
        match=r"LocalAdapter \(local\) does not support the model setting\(s\) reasoning_effort",
    ):
        adapter.complete(make_request([USER], settings=ModelSettings(reasoning_effort="high")))
    assert len(fake.calls) == 1


def _prompt(settings: ModelSettings | None) -> Prompt[None]:
    section = MarkdownSection(title="Task", key="task", template="Answer briefly.")
    return Prompt(PromptTemplate(ns="tests", key="settings", sections=[section], model_settings=settings))


def test_settings_merge_adapter_then_prompt_then_run_and_each_commit_records_what_was_used() -> None:
    server = StreamServer().stream(sse_data(openai_chunk({"content": "done"}, "stop"), "[DONE]"))
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client()
    )
    adapter = OpenAIAdapter(
        "gpt-test", async_client=client, settings=ModelSettings(temperature=0.1, top_p=0.2, seed=1)
    )
    with Store.open("sqlite://") as store:
        session = Session()
        evaluate(
            _prompt(ModelSettings(top_p=0.3, stop=("A",))),
            adapter=adapter,
            session=session,
            store=store,
            model_settings=ModelSettings(seed=9, max_output_tokens=50),
        )
        body = server.bodies()[0]
        assert (body["temperature"], body["top_p"], body["stop"], body["seed"]) == (0.1, 0.3, ["A"], 9)
        assert body["max_completion_tokens"] == 50
        assistant = [c for c in Transcript(store, session.session_id).log() if c.role == "assistant"]
        assert assistant[-1].metadata["model_settings"] == {
            "temperature": 0.1,
            "top_p": 0.3,
            "max_output_tokens": 50,
            "stop": ["A"],
            "seed": 9,
        }


def test_a_run_without_settings_records_none() -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> str:
        seen.append(request)
        return "ok"

    with Store.open("sqlite://") as store:
        session = Session()
        evaluate(_prompt(None), adapter=FunctionAdapter(model), session=session, store=store)
        (commit,) = [c for c in Transcript(store, session.session_id).log() if c.role == "assistant"]
        assert "model_settings" not in (commit.metadata or {})
    assert seen[0].settings == ModelSettings()
    assert adapter_settings(FunctionAdapter(model)) == ModelSettings()


def test_an_unsupported_run_setting_fails_the_run_before_the_model_is_called() -> None:
    server = FakeServer()
    with pytest.raises(ConfigurationError, match="reasoning_effort"):
        evaluate(
            _prompt(None),
            adapter=LocalAdapter(llama=_FakeLlama()),
            session=Session(),
            model_settings=ModelSettings(reasoning_effort="low"),
        )
    assert server.requests == []


def test_the_output_cap_is_given_once() -> None:
    with pytest.raises(ConfigurationError, match="max_output_tokens is given twice"):
        RunSettings(
            adapter=FunctionAdapter(lambda _r: "x"),
            session=Session(),
            max_output_tokens=10,
            model_settings=ModelSettings(max_output_tokens=20),
        )
    with pytest.raises(ConfigurationError, match="model_settings must be a ModelSettings"):
        RunSettings(
            adapter=FunctionAdapter(lambda _r: "x"), session=Session(), model_settings={"temperature": 1}
        )  # pyright: ignore[reportArgumentType]
    with pytest.raises(PromptValidationError, match="model_settings must be a ModelSettings"):
        _prompt({"seed": 1})  # pyright: ignore[reportArgumentType]


def test_an_agents_model_settings_sit_under_each_calls_field_by_field() -> None:
    seen: list[ModelRequest] = []

    def model(request: ModelRequest) -> str:
        seen.append(request)
        return "ok"

    agent = Agent(
        FunctionAdapter(model), instructions="Answer.", model_settings=ModelSettings(temperature=0.5, seed=2)
    )
    agent.run_sync("hi")
    agent.run_sync("hi", model_settings=ModelSettings(seed=3, stop=("X",)))
    assert seen[0].settings == ModelSettings(temperature=0.5, seed=2)
    assert seen[1].settings == ModelSettings(temperature=0.5, seed=3, stop=("X",))
    Agent(FunctionAdapter(model), instructions="Answer.").run_sync("hi", model_settings=ModelSettings(seed=4))
    assert seen[2].settings == ModelSettings(seed=4)
