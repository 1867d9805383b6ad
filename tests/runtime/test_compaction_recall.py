"""``recall_history``: the originals behind a compaction, by commit hash or by words."""

from __future__ import annotations

from typing import cast

from weakprompt.messages import Message, ToolCall
from weakprompt.runtime.compaction import RecallParams, make_recall_tool, tool_tokens
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.tools import ToolContext
from weakprompt.transcript import Transcript
from weakprompt.transcript.compaction import compaction_metadata


def _ask(transcript: Transcript, **params: str) -> tuple[bool, str]:
    tool = make_recall_tool(transcript)
    result = tool.handler(RecallParams(**params), context=cast("ToolContext", None))
    assert result is not None and not hasattr(result, "__await__")
    return result.success, result.message  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]


def test_recall_shows_a_covered_message_by_hash_and_by_words(transcript: Transcript) -> None:
    transcript.system("sys")
    user = transcript.user("the code is ZX-42")
    call = transcript.assistant("", tool_calls=(ToolCall(id="c1", name="look", arguments={"q": 1}),))
    result = transcript.tool_result("c1", "look", "long " * 2000 + "tail")
    transcript.commit(
        Message("user", "S"), metadata=compaction_metadata("drop", [user.hash], tokens_before=1), tools=None
    )
    ok, text = _ask(transcript, commit=user.hash[:12].upper())
    assert ok and "ZX-42" in text
    ok, text = _ask(transcript, query="code zx-42")
    assert ok and user.hash[:12] in text
    ok, text = _ask(transcript, commit=call.hash[:10])
    assert ok and "called look(" in text and "as c1" in text
    ok, text = _ask(transcript, commit=result.hash[:10])
    assert ok and "more characters]" in text and "result of look (c1)" in text
    ok, text = _ask(transcript, query="tail")
    assert ok
    ok, text = _ask(transcript, query="nowhere")
    assert not ok and "No earlier message contains 'nowhere'" in text
    ok, text = _ask(transcript, commit="deadbeefdeadbeef")
    assert not ok and "deadbeefdeadbeef" in text
    ok, text = _ask(transcript)
    assert not ok and 'commit="' in text


def test_recall_lists_only_the_newest_matches(transcript: Transcript) -> None:
    for index in range(8):
        transcript.user(f"note {index} about apples")
    ok, text = _ask(transcript, query="apples")
    assert ok and "note 7" in text and "note 0" not in text and "(3 older matches not shown)" in text


def test_tool_tokens_count_each_schema(transcript: Transcript) -> None:
    tool = make_recall_tool(transcript)
    assert tool_tokens([tool], DEFAULT_TOKEN_COUNTER) > 20
    assert tool_tokens([], DEFAULT_TOKEN_COUNTER) == 0
