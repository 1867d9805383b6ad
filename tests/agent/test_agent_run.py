"""Agent: the four ways to run, sessions, overrides, reuse, and refusals that name the argument."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weakprompt import (
    Agent,
    Budget,
    BudgetExceededError,
    ConfigurationError,
    ForceTool,
    FunctionAdapter,
    MarkdownSection,
    MaxTurnsExceededError,
    ModelRequest,
    Prompt,
    PromptRenderError,
    PromptTemplate,
    ScriptedAdapter,
    Session,
    Store,
    ToolCall,
    tool,
)
from weakprompt.adapters.testing import text_turn, tool_call, tool_call_turn
from weakprompt.errors import SessionBusyError
from weakprompt.events import ToolResultStored
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import RunEvent, RunFinished


@dataclass(frozen=True)
class Weather:
    city: str
    celsius: float


TEMPERATURES = {"Lisbon": 21.5, "Oslo": 4.0}


@tool
def lookup_weather(city: str) -> Weather:
    """Current temperature of a city."""
    return Weather(city, TEMPERATURES[city])


def weather_model(request: ModelRequest) -> AssistantTurn | str:
    """Looks the city of the user's message up, then answers with the tool's result as JSON."""
    last = request.context.messages[-1]
    if last.role == "tool":
        return last.content
    city = next(name for name in TEMPERATURES if name in last.content)
    return tool_call_turn(ToolCall(id=f"call-{city}", name="lookup_weather", arguments={"city": city}))


def weather_agent(**kwargs: object) -> Agent[Weather]:
    return Agent(
        FunctionAdapter(weather_model),
        instructions="You answer weather questions.",
        tools=[lookup_weather],
        output_type=Weather,
        **kwargs,  # type: ignore[arg-type]
    )


def never_answers(request: ModelRequest) -> AssistantTurn:
    return tool_call_turn(tool_call("lookup_weather", {"city": "Oslo"}))


# -- the four ways to run ---------------------------------------------------------------------


def test_run_sync_answers_with_the_typed_output_of_the_instructions_agent() -> None:
    response = weather_agent().run_sync("How warm is Lisbon?")
    assert response.output == Weather("Lisbon", 21.5)
    assert response.turns == 2 and response.tool_calls == 1


def test_run_is_the_async_twin() -> None:
    response = asyncio.run(weather_agent().run("How warm is Oslo?"))
    assert response.output == Weather("Oslo", 4.0)


def test_a_pydantic_output_type_is_parsed_into_the_model() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Forecast(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        city: str
        celsius: float

    model = ScriptedAdapter(['{"city": "Oslo", "celsius": 4}'])
    agent = Agent(model, instructions="Forecast.", output_type=Forecast)
    output = agent.run_sync("Oslo?").output
    assert isinstance(output, Forecast) and output.celsius == 4.0


def test_tools_given_as_an_iterator_are_all_offered() -> None:
    agent = Agent(ScriptedAdapter(["ok"]), instructions="x", tools=iter([lookup_weather]))
    assert agent.run_sync("hi").rendered.tool_names == ("lookup_weather",)


def test_an_agent_without_output_type_answers_in_text() -> None:
    agent = Agent(ScriptedAdapter(["Hello there."]), instructions="Greet the user.")
    response = agent.run_sync("Hi")
    assert response.text == "Hello there." and response.output is None


def test_stream_hands_over_the_events_and_ends_with_the_response() -> None:
    async def main() -> list[RunEvent[Weather]]:
        async with weather_agent().stream("How warm is Lisbon?") as events:
            return [event async for event in events]

    events = asyncio.run(main())
    assert any(isinstance(e, ToolResultStored) and e.call.name == "lookup_weather" for e in events)
    last = events[-1]
    assert isinstance(last, RunFinished) and last.response.output == Weather("Lisbon", 21.5)


def test_stream_sync_hands_over_the_events_and_ends_with_the_response() -> None:
    with weather_agent().stream_sync("How warm is Oslo?") as events:
        seen = list(events)
    last = seen[-1]
    assert isinstance(last, RunFinished) and last.response.output == Weather("Oslo", 4.0)


def test_a_streamed_run_still_tells_the_agents_on_event_listener() -> None:
    heard: list[object] = []
    agent = weather_agent(on_event=heard.append)
    with agent.stream_sync("How warm is Oslo?") as events:
        streamed = list(events)
    assert heard == streamed


def test_an_async_on_event_listener_of_a_stream_is_awaited() -> None:
    heard: list[object] = []

    async def listen(event: RunEvent[object]) -> None:
        await asyncio.sleep(0)
        heard.append(event)

    async def main() -> int:
        async with weather_agent().stream("How warm is Oslo?", on_event=listen) as events:
            return len([event async for event in events])

    assert asyncio.run(main()) == len(heard) > 0


def test_a_failed_sync_stream_raises_the_runs_error_after_its_events() -> None:
    agent = Agent(FunctionAdapter(never_answers), instructions="Loop.", tools=[lookup_weather], max_turns=2)
    seen: list[RunEvent[None]] = []
    with pytest.raises(MaxTurnsExceededError), agent.stream_sync("go") as events:
        seen.extend(events)
    assert any(isinstance(event, ToolResultStored) for event in seen)


def test_leaving_a_sync_stream_early_stops_the_run() -> None:
    calls: list[int] = []

    def model(request: ModelRequest) -> AssistantTurn:
        calls.append(1)
        return never_answers(request)

    agent = Agent(FunctionAdapter(model), instructions="Loop.", tools=[lookup_weather], max_turns=50)
    with agent.stream_sync("go") as events:
        for event in events:
            if isinstance(event, ToolResultStored):
                break
    assert len(calls) < 50


def test_a_stream_with_bad_settings_fails_when_called_not_while_iterating() -> None:
    with pytest.raises(ConfigurationError, match="max_turns"):
        weather_agent().stream_sync("x", max_turns=0)


def test_run_sync_works_from_inside_a_running_event_loop() -> None:
    async def main() -> Weather:
        return weather_agent().run_sync("How warm is Lisbon?").output

    assert asyncio.run(main()) == Weather("Lisbon", 21.5)


# -- sessions ---------------------------------------------------------------------------------


def _history_lengths() -> tuple[FunctionAdapter, list[int]]:
    seen: list[int] = []

    def model(request: ModelRequest) -> str:
        seen.append(len(request.context.messages))
        return "ok"

    return FunctionAdapter(model), seen


def test_without_a_session_every_run_is_a_new_conversation(tmp_path: Path) -> None:
    adapter, seen = _history_lengths()
    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(adapter, instructions="Chat.", store=store)
        first, second = agent.run_sync("one"), agent.run_sync("two")
    assert first.session_id != second.session_id
    assert seen[0] == seen[1]


def test_a_session_id_continues_the_stored_conversation(tmp_path: Path) -> None:
    adapter, seen = _history_lengths()
    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(adapter, instructions="Chat.", store=store)
        first = agent.run_sync("one", session="user-42")
        second = agent.run_sync("two", session="user-42")
    assert first.session_id == second.session_id == "user-42"
    assert seen[1] == seen[0] + 2  # the first question and its answer come before the second


def test_a_session_object_is_the_runs_session() -> None:
    session = Session(session_id="mine")
    response = Agent(ScriptedAdapter(["ok"]), instructions="Chat.").run_sync("hi", session=session)
    assert response.session_id == "mine"


def test_a_session_id_without_a_store_is_refused_naming_both() -> None:
    agent = Agent(ScriptedAdapter(["ok"]), instructions="Chat.")
    with pytest.raises(ConfigurationError, match=r"session='user-42'.*store="):
        agent.run_sync("hi", session="user-42")


def test_a_store_given_to_the_call_is_enough_for_a_session_id() -> None:
    with Store.open("sqlite://") as store:
        agent = Agent(ScriptedAdapter(["ok"]), instructions="Chat.")
        assert agent.run_sync("hi", session="s1", store=store).session_id == "s1"
        assert "s1" in store.session_ids()


@pytest.mark.parametrize("bad", [42, b"user", ["s"]], ids=["int", "bytes", "list"])
def test_a_session_of_another_type_is_refused_naming_session(bad: object) -> None:
    agent = Agent(ScriptedAdapter(["ok"]), instructions="Chat.")
    with pytest.raises(ConfigurationError, match=r"Agent\.run_sync: session= takes a Session"):
        agent.run_sync("hi", session=bad)  # type: ignore[arg-type]


def test_an_empty_session_id_is_refused() -> None:
    with Store.open("sqlite://") as store:
        agent = Agent(ScriptedAdapter(["ok"]), instructions="Chat.", store=store)
        with pytest.raises(ConfigurationError, match="empty session id"):
            agent.run_sync("hi", session="  ")


# -- defaults and overrides -------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(default=st.integers(1, 4), override=st.none() | st.integers(1, 4))
def test_a_calls_max_turns_wins_over_the_agents_and_the_agents_applies_otherwise(
    default: int, override: int | None
) -> None:
    calls: list[int] = []

    def model(request: ModelRequest) -> AssistantTurn:
        calls.append(1)
        return never_answers(request)

    agent = Agent(FunctionAdapter(model), instructions="Loop.", tools=[lookup_weather], max_turns=default)
    with pytest.raises(MaxTurnsExceededError):
        if override is None:
            agent.run_sync("go")
        else:
            agent.run_sync("go", max_turns=override)
    assert len(calls) == (default if override is None else override)


def test_the_agents_tool_choice_forces_the_first_call_and_a_call_can_undo_it() -> None:
    choices: list[object] = []

    def model(request: ModelRequest) -> AssistantTurn | str:
        choices.append(request.tool_choice)
        return weather_model(request)

    agent = Agent(
        FunctionAdapter(model),
        instructions="Weather.",
        tools=[lookup_weather],
        output_type=Weather,
        tool_choice=ForceTool("lookup_weather"),
    )
    agent.run_sync("Lisbon?")
    assert choices == [ForceTool("lookup_weather"), "auto"]
    choices.clear()
    agent.run_sync("Lisbon?", tool_choice="auto")
    assert choices == ["auto", "auto"]


def test_an_adapter_given_to_the_call_runs_that_call_only() -> None:
    agent = Agent(ScriptedAdapter(["from the agent's model"] * 2), instructions="Chat.")
    assert (
        agent.run_sync("hi", adapter=ScriptedAdapter(["from the call's model"])).text
        == "from the call's model"
    )
    assert agent.run_sync("hi").text == "from the agent's model"


def test_a_budget_override_replaces_the_agents_budget() -> None:
    agent = Agent(
        FunctionAdapter(never_answers),
        instructions="Loop.",
        tools=[lookup_weather],
        budget=Budget(max_model_calls=1),
    )
    with pytest.raises(BudgetExceededError):
        agent.run_sync("go")
    with pytest.raises(MaxTurnsExceededError):
        agent.run_sync("go", budget=None, max_turns=3)


def test_params_are_bound_to_the_prompt_for_one_run() -> None:
    @dataclass(frozen=True)
    class Task:
        city: str

    seen: list[str] = []

    def model(request: ModelRequest) -> str:
        seen.append(request.context.messages[0].content)
        return "ok"

    agent = Agent(FunctionAdapter(model), instructions="Talk about $city.", params_type=Task)
    agent.run_sync(params=(Task("Lisbon"),))
    agent.run_sync(params=[Task("Oslo")])
    assert "Talk about Lisbon." in seen[0] and "Talk about Oslo." in seen[1]
    with pytest.raises(PromptRenderError):
        agent.run_sync()  # the section needs its params


def test_params_that_are_not_a_tuple_are_refused_naming_params() -> None:
    @dataclass(frozen=True)
    class Task:
        city: str

    agent = Agent(ScriptedAdapter(["ok"]), instructions="About $city.", params_type=Task)
    with pytest.raises(ConfigurationError, match=r"params= takes a tuple .* not Task"):
        agent.run_sync(params=Task("Lisbon"))  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="not str"):
        agent.run_sync(params="Lisbon")


def test_plain_instructions_keep_a_dollar_sign_as_text() -> None:
    seen: list[str] = []

    def model(request: ModelRequest) -> str:
        seen.append(request.context.messages[0].content)
        return "ok"

    Agent(FunctionAdapter(model), instructions="A coffee costs $3; $city is not a placeholder.").run_sync()
    assert "A coffee costs $3; $city is not a placeholder." in seen[0]


def test_a_template_agent_runs_the_given_tree_and_a_prompt_keeps_its_bindings() -> None:
    @dataclass(frozen=True)
    class Task:
        city: str

    template: PromptTemplate[Weather] = PromptTemplate(
        ns="t",
        key="weather",
        output_type=Weather,
        sections=[
            MarkdownSection(title="Task", key="task", template="How warm is $city?", params_type=Task),
            MarkdownSection(title="Tools", key="tools", template="Look it up.", tools=[lookup_weather]),
        ],
    )
    by_template = Agent(FunctionAdapter(weather_model), template=template)
    assert by_template.template is template
    assert by_template.run_sync("Lisbon", params=(Task("Lisbon"),)).output == Weather("Lisbon", 21.5)
    bound = Agent(FunctionAdapter(weather_model), template=Prompt(template).bind(Task("Oslo")))
    assert bound.run_sync("Oslo").output == Weather("Oslo", 4.0)


# -- reuse ------------------------------------------------------------------------------------


def test_one_agent_serves_many_threads_at_once() -> None:
    agent = weather_agent()
    cities = ["Lisbon", "Oslo"] * 8
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda city: agent.run_sync(f"How warm is {city}?").output, cities))
    assert answers == [Weather(city, TEMPERATURES[city]) for city in cities]


def test_one_agent_serves_many_tasks_at_once() -> None:
    agent = weather_agent()

    async def main() -> list[Weather]:
        responses = await asyncio.gather(*(agent.run(f"{city}?") for city in ["Oslo", "Lisbon", "Oslo"]))
        return [response.output for response in responses]

    assert asyncio.run(main()) == [Weather("Oslo", 4.0), Weather("Lisbon", 21.5), Weather("Oslo", 4.0)]


def test_two_runs_on_one_stored_session_id_do_not_both_run(tmp_path: Path) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(request: ModelRequest) -> str:
        started.set()
        release.wait(30)
        return "done"

    with Store.open(tmp_path / "runs.db") as store:
        agent = Agent(FunctionAdapter(slow), instructions="Chat.", store=store)
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(agent.run_sync, "a", session="shared")
            assert started.wait(30)
            try:
                with pytest.raises(SessionBusyError, match="shared"):
                    agent.run_sync("b", session="shared")
            finally:
                release.set()
            assert first.result().text == "done"


def test_an_agent_is_frozen_and_says_what_it_runs() -> None:
    agent = weather_agent()
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        agent.max_turns = 3  # type: ignore[misc]
    assert repr(agent) == "Agent('agent/agent', adapter=FunctionAdapter, output_type=Weather)"


# -- refusals that name the argument ----------------------------------------------------------


def test_an_unknown_keyword_is_refused_with_the_closest_name() -> None:
    with pytest.raises(
        TypeError, match=r"Agent\(\) got an unexpected keyword argument 'max_turn'; did you mean 'max_turns'"
    ):
        Agent(ScriptedAdapter([]), instructions="x", max_turn=3)  # type: ignore[call-overload]
    agent = Agent(ScriptedAdapter([]), instructions="x")
    with pytest.raises(
        TypeError,
        match=r"Agent\.run_sync\(\) got an unexpected keyword argument 'budgt'; did you mean 'budget'",
    ):
        agent.run_sync("hi", budgt=None)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"'zzz'; it takes: "):
        agent.run_sync("hi", zzz=1)  # type: ignore[call-arg]


def test_a_deadline_is_a_calls_setting_not_an_agents() -> None:
    with pytest.raises(TypeError, match="'deadline'"):
        Agent(ScriptedAdapter([]), instructions="x", deadline=None)  # type: ignore[call-overload]


def test_a_bad_limit_is_refused_when_the_agent_is_built() -> None:
    with pytest.raises(ConfigurationError, match="max_turns must be an int >= 1"):
        Agent(ScriptedAdapter([]), instructions="x", max_turns=0)


def test_instructions_and_template_are_one_or_the_other() -> None:
    template = PromptTemplate(ns="t", key="k", sections=[MarkdownSection(title="T", key="t", template="x")])
    with pytest.raises(ConfigurationError, match=r"instructions= .* or template= .*not both"):
        Agent(ScriptedAdapter([]), instructions="x", template=template)  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match="needs instructions="):
        Agent(ScriptedAdapter([]))  # type: ignore[call-overload]
    with pytest.raises(ConfigurationError, match=r"tools=, output_type= go with instructions="):
        Agent(ScriptedAdapter([]), template=template, tools=[lookup_weather], output_type=Weather)  # type: ignore[call-overload]


def test_a_template_of_another_type_is_refused_naming_template() -> None:
    with pytest.raises(ConfigurationError, match="template= takes a PromptTemplate or a Prompt, not str"):
        Agent(ScriptedAdapter([]), template="You are helpful.")  # type: ignore[call-overload]


def test_instructions_that_are_not_text_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="instructions= must be text, not list"):
        Agent(ScriptedAdapter([]), instructions=["x"])  # type: ignore[call-overload]


def test_a_model_name_is_not_an_adapter() -> None:
    with pytest.raises(ConfigurationError, match=r"adapter must be a ProviderAdapter .* not str"):
        Agent("openai:gpt-4o", instructions="x")  # type: ignore[call-overload]
    agent = Agent(ScriptedAdapter([]), instructions="x")
    with pytest.raises(ConfigurationError, match=r"Agent\.run_sync: adapter must be"):
        agent.run_sync("hi", adapter="gpt-4o")  # type: ignore[typeddict-item]


def test_input_that_is_not_text_is_refused_naming_input() -> None:
    agent = Agent(ScriptedAdapter(["ok"]), instructions="x")
    with pytest.raises(ConfigurationError, match=r"Agent\.run_sync: input .* or None, not dict"):
        agent.run_sync({"q": "hi"})  # type: ignore[arg-type]


def test_a_text_turn_helper_answer_is_the_text() -> None:
    agent = Agent(ScriptedAdapter([text_turn("fine")]), instructions="x", name="Helper Bot")
    assert agent.template.display_name == "Helper Bot" and agent.run_sync().text == "fine"
