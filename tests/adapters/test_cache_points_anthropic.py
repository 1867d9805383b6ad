"""Anthropic cache breakpoints: after the tools, at the end of the stable system text, on the latest
stable conversation block; never more than four. Bodies recorded through the official SDK."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from anthropic.types.message_create_params import MessageCreateParamsStreaming
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from cache_support import MARK, Status, Who, anthropic_adapter, cache_template, script_anthropic
from stream_support import StreamServer
from weakprompt.adapters.wire.anthropic import MAX_CACHE_POINTS, with_cache_points
from weakprompt.agent import Agent
from weakprompt.session import Session
from weakprompt.store import Store

EPHEMERAL = {"type": "ephemeral"}
STREAMED = TypeAdapter(MessageCreateParamsStreaming)


def marks(value: Any) -> int:
    """How many ``cache_control`` breakpoints ``value`` holds, anywhere."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(marks(v) for v in value)
    return 0


def run_two_turns(tmp_path: Path, **options: Any) -> list[dict[str, Any]]:
    server = script_anthropic(StreamServer(), 2)
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(anthropic_adapter(server, **options), template=cache_template(), store=store)
        session = Session(session_id="s")
        for step in range(2):
            agent.run_sync(f"question {step}", session=session, params=[Status(step), Who("Ada")])
    return server.bodies()


def test_breakpoints_mark_tools_stable_system_and_the_last_stable_block(tmp_path: Path) -> None:
    bodies = run_two_turns(tmp_path)
    for body in bodies:
        STREAMED.validate_python(body)
        assert marks(body) == MAX_CACHE_POINTS
        assert body["tools"][-1]["cache_control"] == EPHEMERAL
        assert all("cache_control" not in tool for tool in body["tools"][:-1])
        stable, session = body["system"]
        assert stable == {
            "type": "text",
            "text": "## 1. Role\n\nYou answer with one fact.",
            "cache_control": EPHEMERAL,
        }
        assert (
            session["text"] == "\n\n## 2. User\n\nThe user is Ada." and session["cache_control"] == EPHEMERAL
        )
        last = body["messages"][-1]
        assert last["role"] == "user"
        *before, context = last["content"]
        assert context["type"] == "text" and context["text"].startswith(MARK.decode())
        assert "cache_control" not in context
        assert (
            before[-1]["cache_control"] == EPHEMERAL
        )  # the user's input or the tool result before the turn text
    # the tool-result turn: the turn text merged into the same user message as the result, after it
    second = bodies[1]["messages"][-1]["content"]
    assert [block["type"] for block in second] == ["tool_result", "text"]


def test_the_conversation_before_the_turn_text_is_the_same_from_one_request_to_the_next(
    tmp_path: Path,
) -> None:
    bodies = run_two_turns(tmp_path)

    def unmarked(value: Any) -> Any:
        """Without breakpoints, text content as its one block (the API reads both the same)."""
        if isinstance(value, dict) and isinstance(value.get("content"), str) and "role" in value:
            value = {**value, "content": [{"type": "text", "text": value["content"]}]}
        if isinstance(value, dict):
            return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [unmarked(v) for v in value]
        return value

    for before, after in itertools.pairwise(bodies):
        assert unmarked(after["system"]) == unmarked(before["system"])
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
        earlier = unmarked(before["messages"])
        earlier[-1]["content"] = earlier[-1]["content"][:-1]  # drop the turn text
        later = unmarked(after["messages"])[: len(earlier)]
        later[-1]["content"] = later[-1]["content"][: len(earlier[-1]["content"])]
        assert later == earlier


def test_cache_points_can_be_turned_off(tmp_path: Path) -> None:
    bodies = run_two_turns(tmp_path, cache_points=False)
    assert all(marks(body) == 0 for body in bodies)
    assert isinstance(bodies[0]["system"], str)


def test_a_request_built_outside_the_loop_gets_no_breakpoints() -> None:
    params: dict[str, Any] = {"system": "s", "messages": [{"role": "user", "content": "hi"}]}
    marked = with_cache_points(params, stable_system_chars=None)
    assert marked["system"] == [{"type": "text", "text": "s", "cache_control": EPHEMERAL}]
    assert marked["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": EPHEMERAL}]}
    ]
    assert params["system"] == "s"  # the input is left as it was


@given(
    tools=st.integers(0, 3),
    system=st.text(max_size=12),
    stable=st.none() | st.integers(0, 14),
    messages=st.lists(st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=3), max_size=4),
    skip=st.integers(0, 6),
)
def test_never_more_than_four_breakpoints(
    tools: int, system: str, stable: int | None, messages: list[list[str]], skip: int
) -> None:
    params: dict[str, Any] = {
        "tools": [{"name": f"t{i}", "input_schema": {"type": "object"}} for i in range(tools)],
        "system": system,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": text} for text in blocks]}
            for blocks in messages
        ],
    }
    marked = with_cache_points(params, stable_system_chars=stable, trailing_blocks=skip)
    assert marks(marked) <= MAX_CACHE_POINTS
    assert "".join(block["text"] for block in marked.get("system") or []) == system
    total = sum(len(blocks) for blocks in messages)
    assert marks(marked["messages"]) == (1 if skip < total else 0)


def test_shapes_that_cannot_carry_a_breakpoint_are_left_as_they_are() -> None:
    params: dict[str, Any] = {"tools": ["odd"], "messages": ["odd", {"role": "user", "content": ["odd"]}]}
    assert with_cache_points(params, stable_system_chars=0) == params
