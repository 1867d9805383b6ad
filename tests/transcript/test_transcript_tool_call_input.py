"""``Transcript.assistant(tool_calls=...)`` takes ToolCall objects and says so when given anything else."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.transcript import Transcript


@pytest.fixture
def store() -> Iterator[Store]:
    with Store.open("sqlite://", clock=FakeClock()) as opened:
        yield opened


@pytest.mark.parametrize(
    ("tool_calls", "message"),
    [
        ([{"id": "c1", "name": "add", "arguments": "{}"}], r"tool_calls\[0\] is a dict, expected a ToolCall"),
        ([ToolCall("c1", "add"), ("c2", "add")], r"tool_calls\[1\] is a tuple, expected a ToolCall"),
        (ToolCall("c1", "add"), r"tool_calls must be a sequence of ToolCall, got a ToolCall"),
        ({"id": "c1"}, r"tool_calls must be a sequence of ToolCall, got a dict"),
        ("c1", r"tool_calls must be a sequence of ToolCall, got a str"),
        (iter([ToolCall("c1", "add")]), r"tool_calls must be a sequence of ToolCall, got a list_iterator"),
    ],
)
def test_anything_but_tool_calls_is_a_transcript_error_naming_the_type(
    store: Store, tool_calls: object, message: str
) -> None:
    transcript = Transcript(store, "s")
    with pytest.raises(TranscriptError, match=message) as caught:
        transcript.assistant("", tool_calls=tool_calls)  # type: ignore[arg-type]
    assert "ToolCall(id=..., name=..., arguments=...)" in str(caught.value)
    assert transcript.log() == []  # nothing was written


def test_tool_calls_in_a_list_or_tuple_are_recorded(store: Store) -> None:
    transcript = Transcript(store, "s")
    calls = [ToolCall("c1", "add", '{"a": 1}'), ToolCall("c2", "sub")]
    commit = transcript.assistant("", tool_calls=calls)
    assert commit.content.tool_calls == tuple(calls)
    assert transcript.assistant("", tool_calls=tuple(calls)).content.tool_calls == tuple(calls)
