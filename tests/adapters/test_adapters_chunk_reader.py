"""ChatChunkReader on loose chunk shapes (OpenAI-compatible servers vary)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from weakprompt.adapters.local import _ChunkFeed
from weakprompt.adapters.wire import ChatChunkReader
from weakprompt.messages import ToolCall
from weakprompt.model import ReplyCompleted, TextDelta, ToolCallStarted


def finish(reader: ChatChunkReader) -> ReplyCompleted:
    last = reader.finish()[-1]
    assert isinstance(last, ReplyCompleted)
    return last


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": None},
        {"choices": ["not a choice"]},
        {"choices": [{"index": 0, "delta": None}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": ["not a call", None]}}]},
    ],
)
def test_shapes_that_carry_nothing_are_skipped(chunk: dict[str, Any]) -> None:
    reader = ChatChunkReader(provider="compat")

    assert reader.read(chunk) == []
    assert finish(reader).turn.text == ""


def test_calls_without_index_id_or_function_are_numbered_by_position() -> None:
    reader = ChatChunkReader(provider="compat")

    events = reader.read(
        {"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "{}"}}, {"id": "b"}]}}]}
    )

    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted(0, "", ""),
        ToolCallStarted(1, "b", ""),
    ]
    assert finish(reader).turn.tool_calls == (ToolCall("", "", "{}"), ToolCall("b", "", ""))


def test_pieces_count_text_even_empty_and_non_empty_arguments() -> None:
    reader = ChatChunkReader(provider="local", call_id=lambda index, name: f"id-{index}-{name}")
    reader.read({"choices": [{"index": 0, "delta": {"content": ""}}]})
    reader.read({"choices": [{"index": 0, "delta": {"content": "a"}}]})
    events = reader.read(
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "x", "function": {"name": "t", "arguments": ""}}]
                    },
                }
            ]
        }
    )

    assert reader.pieces == 2
    assert events == [ToolCallStarted(0, "id-0-t", "t")]  # the rule's id, not the server's
    assert [e for e in reader.finish() if isinstance(e, TextDelta)] == []


def test_a_feed_whose_event_loop_is_closed_reports_the_reader_gone() -> None:
    loop = asyncio.new_event_loop()
    feed = _ChunkFeed(loop)
    loop.close()

    assert feed.put({"choices": []}) is False
    feed.end()  # dropped quietly
