"""The framework events: frozen values with unique ids, no runtime import of tools."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime

import attrs
import pytest

from weakprompt.events import PromptExecuted, PromptRendered, ToolInvoked, new_event_id
from weakprompt.messages import Usage
from weakprompt.tools import ToolResult

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_invoked(result: ToolResult[object]) -> ToolInvoked:
    return ToolInvoked(
        prompt_name="demo",
        adapter="scripted",
        name="lookup",
        params=None,
        result=result,
        call_id="call-1",
        session_id="s-1",
        started_at=T0,
        finished_at=T0,
        arguments='{"x": 1}',
    )


def test_event_ids_are_distinct_uuid4_strings() -> None:
    ids = {new_event_id() for _ in range(100)}
    assert len(ids) == 100
    for value in ids:
        parsed = uuid.UUID(value)
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
        assert str(parsed) == value


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_event_ids_differ_in_a_forked_child() -> None:
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.write(write_end, new_event_id().encode())
        os._exit(0)
    os.close(write_end)
    parent_id = new_event_id()
    child_id = os.read(read_end, 64).decode()
    os.waitpid(pid, 0)
    os.close(read_end)
    assert uuid.UUID(child_id).version == 4
    assert child_id != parent_id


def test_tool_invoked_carries_its_fields_and_success() -> None:
    ok = make_invoked(ToolResult.ok({"a": 1}, message="done"))
    failed = make_invoked(ToolResult.error("bad"))
    assert ok.success is True
    assert failed.success is False
    assert ok.arguments == '{"x": 1}'
    assert ok.usage is None
    assert ok.event_id != failed.event_id
    uuid.UUID(ok.event_id)


def test_events_are_frozen() -> None:
    event = make_invoked(ToolResult.ok(1))
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.name = "other"  # type: ignore[misc]


def test_two_events_with_the_same_content_differ_by_id() -> None:
    a = make_invoked(ToolResult.ok(1))
    b = attrs.evolve(a, event_id=new_event_id())
    assert a != b
    assert attrs.evolve(a) == a  # evolve keeps the id


def test_prompt_rendered_requires_a_hash_for_each_tool() -> None:
    event = PromptRendered(
        prompt_ns="ns",
        prompt_key="key",
        prompt_name=None,
        text="hello",
        tool_names=("a", "b"),
        tool_hashes=("h1", "h2"),
        session_id=None,
        created_at=T0,
    )
    assert event.tool_names == ("a", "b")
    with pytest.raises(ValueError, match="2 tool names but 1 tool hashes"):
        attrs.evolve(event, tool_hashes=("h1",))


def test_prompt_executed_holds_any_output() -> None:
    event = PromptExecuted(
        prompt_name="p",
        adapter="a",
        text="final",
        output={"answer": 42},
        usage=Usage(input_tokens=3, output_tokens=4, model_calls=1),
        turns=2,
        session_id="s",
        created_at=T0,
    )
    assert event.output == {"answer": 42}
    assert event.usage.total_tokens == 7


def test_importing_events_does_not_import_tools_or_session() -> None:
    code = (
        "import sys, weakprompt.events\n"
        "names = ('weakprompt.tools', 'weakprompt.session', 'weakprompt.resources')\n"
        "bad = [m for m in names if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
