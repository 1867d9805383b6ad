"""Pipeline tools in the loop: tool_output while an output is behind a handle; forcing get_tool_result."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pipeline_support import Outputs, World, fetch_prompt, log_text
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.messages import AssistantTurn
from weakprompt.runtime import ForceTool, ModelRequest, evaluate
from weakprompt.runtime.results import SizePolicy, ToolOutputSettings
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

MEDIUM = log_text(40)  # about 2.4 KB: under the default cap, over a 1 KB one


@pytest.fixture
def transcript() -> Generator[Transcript]:
    with Store.open("sqlite://") as store:
        yield Transcript(store, "s1")


def test_a_handle_from_get_tool_result_makes_tool_output_offered_next_turn(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    prompt = fetch_prompt(Outputs([MEDIUM]))
    evaluate(prompt, adapter=World(None).adapter, session=session, input="first", transcript=transcript)
    call_id = transcript.find_tool_results(name="fetch")[0].content.tool_call_id
    assert call_id is not None
    offered: list[list[str]] = []

    def load(request: ModelRequest) -> AssistantTurn | str | None:
        offered.append([t.name for t in request.tools])
        if request.context.messages[-1].role == "user":
            return tool_call_turn(tool_call("get_tool_result", {"tool_call_id": call_id}))
        return "done"

    tight = ToolOutputSettings(policy=SizePolicy(max_bytes=1024))  # now the stored result is oversized
    world = World(None, next_call=load)
    evaluate(
        prompt,
        adapter=world.adapter,
        session=session,
        input="again",
        transcript=transcript,
        tool_outputs=tight,
    )
    assert "tool_output" not in offered[0]  # nothing oversized when the evaluation began
    assert (
        "Call tool_output(handle" in transcript.find_tool_results(name="get_tool_result")[0].content.content
    )
    assert "tool_output" in offered[1]  # get_tool_result kept it behind a handle: offered from the next turn


def test_an_oversized_output_from_an_earlier_evaluation_is_seen_at_the_start(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    tight = ToolOutputSettings(policy=SizePolicy(max_bytes=1024))
    prompt = fetch_prompt(Outputs([MEDIUM]))
    evaluate(
        prompt,
        adapter=World(None).adapter,
        session=session,
        input="first",
        transcript=transcript,
        tool_outputs=tight,
    )
    offered: list[list[str]] = []

    def answer(request: ModelRequest) -> str:
        offered.append([t.name for t in request.tools])
        return "done"

    evaluate(
        prompt,
        adapter=World(None, next_call=answer).adapter,
        session=session,
        input="again",
        transcript=transcript,
    )
    assert "tool_output" in offered[0]


def test_get_tool_result_can_be_forced_once_the_session_has_a_stored_result(transcript: Transcript) -> None:
    session = Session(session_id="s1")
    prompt = fetch_prompt(Outputs([MEDIUM]))
    force = ForceTool("get_tool_result")
    with pytest.raises(ConfigurationError, match="get_tool_result"):
        evaluate(
            prompt,
            adapter=World(None).adapter,
            session=session,
            input="q",
            transcript=transcript,
            tool_choice=force,
        )
    evaluate(prompt, adapter=World(None).adapter, session=session, input="first", transcript=transcript)
    call_id = transcript.find_tool_results(name="fetch")[0].content.tool_call_id
    assert call_id is not None
    forced: list[object] = []

    def load(request: ModelRequest) -> AssistantTurn | str | None:
        forced.append(request.tool_choice)
        if request.context.messages[-1].role == "user":
            return tool_call_turn(tool_call("get_tool_result", {"tool_call_id": call_id}))
        return "done"

    world = World(None, next_call=load)
    evaluate(
        prompt,
        adapter=world.adapter,
        session=session,
        input="again",
        transcript=transcript,
        tool_choice=force,
    )
    assert forced[0] == force
