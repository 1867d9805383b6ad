"""assert_tool_called and assert_transcript: pass quietly, fail with a readable diff."""

from __future__ import annotations

import re

import pytest

from loop_support import AddParams, Sum, arithmetic_prompt
from weakprompt.messages import Message
from weakprompt.runtime import PromptResponse, evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.testing import assert_tool_called, assert_transcript, script
from weakprompt.transcript import Transcript


@pytest.fixture
def run(store: Store, session: Session) -> PromptResponse[object]:
    played = (
        script()
        .call("add", AddParams(a=2, b=3))
        .call("add", '{"a": 1}')
        .call("echo", {"text": "hi"})
        .answer("5")
    )
    return evaluate(arithmetic_prompt(), adapter=played.adapter(), session=session, input="2+3?", store=store)


def test_a_matching_call_passes_and_is_returned(run: PromptResponse[object], session: Session) -> None:
    (event,) = assert_tool_called(run, "add", params=AddParams(a=2, b=3))

    assert event.result.value == Sum(total=5)
    assert assert_tool_called(session, "add", times=2) == assert_tool_called(run, "add")
    assert len(assert_tool_called(session, "add", success=False)) == 1
    assert assert_tool_called(list(session[type(event)].all()), "echo", arguments={"text": "hi"})
    assert_tool_called(session, "missing", times=0)


def test_wrong_params_show_every_call_and_a_diff(session: Session, run: PromptResponse[object]) -> None:
    with pytest.raises(AssertionError) as failure:
        assert_tool_called(session, "add", params=AddParams(a=2, b=4))

    message = str(failure.value)
    assert message.startswith("expected a call to 'add' with these params, found 0")
    assert "calls made:" in message
    assert '#1 add({"a":2,"b":3}) -> ok' in message
    assert '#2 add({"a": 1}) -> failed' in message
    assert '-  "b": 4\n+  "b": 3' in message


def test_wrong_arguments_and_counts_are_explained(session: Session, run: PromptResponse[object]) -> None:
    with pytest.raises(AssertionError, match=r'(?s)-  "text": "bye".*\+  "text": "hi"'):
        assert_tool_called(session, "echo", arguments={"text": "bye"})
    assert len(assert_tool_called(session, "add", times=1, success=True)) == 1
    with pytest.raises(AssertionError, match=r"expected 2 call\(s\) to 'add' that failed, found 1"):
        assert_tool_called(session, "add", times=2, success=False)
    with pytest.raises(AssertionError, match=r"expected 3 call\(s\) to 'add', found 2"):
        assert_tool_called(session, "add", times=3)


def test_no_calls_at_all_says_so() -> None:
    with pytest.raises(AssertionError, match="no tool was called"):
        assert_tool_called(Session(), "add")


def test_params_that_cannot_be_dumped_are_shown_with_repr(
    session: Session, run: PromptResponse[object]
) -> None:
    with pytest.raises(AssertionError, match=r"-<object object at"):
        assert_tool_called(session, "add", params=object())


def test_the_transcript_matches_exactly_patterns_or_anything(
    transcript: Transcript, run: PromptResponse[object]
) -> None:
    messages = assert_transcript(
        transcript,
        [
            ("user", "2+3?"),
            ("assistant", ""),
            ("tool", '{"total":5}'),
            ("assistant", ...),
            ("tool", re.compile(r".*'add'.*")),
            ("assistant", ""),
            ("tool", "echo: hi"),
            ("assistant", "5"),
        ],
        roles=("user", "assistant", "tool"),
    )

    assert len(messages) == 8
    assert assert_transcript(
        transcript.compile(), [("system", ...), *[(m.role, m.content) for m in messages]]
    )


def test_a_different_transcript_fails_with_a_unified_diff(
    transcript: Transcript, run: PromptResponse[object]
) -> None:
    with pytest.raises(AssertionError) as failure:
        assert_transcript(transcript, [("user", "2+2?"), ("assistant", ...)], roles=("user", "assistant"))

    message = str(failure.value)
    assert message.startswith("the transcript differs from the expected 2 message(s) (5 found)")
    assert "--- expected\n+++ transcript" in message
    assert "-user: 2+2?\n+user: 2+3?" in message
    assert " assistant: ..." in message  # matched lines stay context, not noise
    assert "+assistant: 5" in message


def test_messages_can_be_given_directly() -> None:
    messages = [Message(role="user", content="hi"), Message(role="assistant", content="hello")]

    assert assert_transcript(messages, [("user", "hi"), ("assistant", re.compile("hel+o"))]) == tuple(
        messages
    )
    with pytest.raises(AssertionError, match=r"\+assistant: hello"):
        assert_transcript(messages, [("user", "hi"), ("assistant", re.compile("bye"))])
    with pytest.raises(AssertionError, match=r"-assistant: hi\n\+user: hi"):
        assert_transcript(messages, [("assistant", "hi"), ("assistant", ...)])


def test_broken_arguments_are_compared_as_text(session: Session, store: Store) -> None:
    played = script().call("echo", '{"text": ').answer("sorry")
    evaluate(arithmetic_prompt(), adapter=played.adapter(), session=session, input="echo", store=store)

    (event,) = assert_tool_called(session, "echo", success=False)
    with pytest.raises(AssertionError, match=r'\+"\{\\"text\\": "'):
        assert_tool_called(session, "echo", arguments={"text": "x"})
    assert event.params is None
