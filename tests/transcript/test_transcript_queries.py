"""Seed-000 phases 1-2: tool_result(edit=) and the tool query API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.transcript import CommitInfo, CommitOperation, ToolTurn, Transcript


@pytest.fixture
def t(tmp_path: Path) -> Iterator[Transcript]:
    with Store.open(tmp_path / "q.db", clock=FakeClock()) as store:
        yield Transcript(store, "agent")


def agent_session(t: Transcript) -> dict[str, CommitInfo]:
    """system, user, one grep call, a two-tool call (grep + read), a final answer."""
    out: dict[str, CommitInfo] = {}
    out["system"] = t.system("You search code.")
    out["user"] = t.user("Where is main defined?")
    out["call1"] = t.assistant("", tool_calls=[ToolCall("g1", "grep", '{"pattern": "def main"}')])
    out["grep1"] = t.tool_result("g1", "grep", "src/app.py:10:def main():\n" + "noise\n" * 50)
    out["call2"] = t.assistant(
        "Checking both.",
        tool_calls=[
            ToolCall("g2", "grep", '{"pattern": "main("}'),
            ToolCall("r1", "read", '{"path": "src/app.py"}'),
        ],
    )
    out["grep2"] = t.tool_result("g2", "grep", "src/app.py:40:    main()")
    out["read1"] = t.tool_result("r1", "read", "def main():\n    run()", is_error=False)
    out["answer"] = t.assistant("main is in src/app.py line 10.")
    return out


# --- phase 1: tool_result(edit=) -----------------------------------------------------------------


def test_tool_result_edit_basic(t: Transcript) -> None:
    c = agent_session(t)
    edit = t.tool_result("g1", "grep", "src/app.py:10", edit=c["grep1"].hash)
    assert edit.operation is CommitOperation.EDIT
    assert edit.edit_target == c["grep1"].hash
    assert t.get(c["grep1"].hash).content.content.startswith("src/app.py:10:def main():\nnoise")


def test_tool_result_edit_preserves_call_id_and_name(t: Transcript) -> None:
    c = agent_session(t)
    edit = t.tool_result("g1", "grep", "short", edit=c["grep1"].hash)
    assert (edit.content.tool_call_id, edit.content.name) == ("g1", "grep")
    compiled = t.compile().messages[3]
    assert (compiled.tool_call_id, compiled.name, compiled.content) == ("g1", "grep", "short")


def test_tool_result_edit_compiled_shows_new_text_at_original_position(t: Transcript) -> None:
    c = agent_session(t)
    before = t.compile()
    t.tool_result("g1", "grep", "src/app.py:10", edit=c["grep1"].hash)
    after = t.compile()
    assert len(after.messages) == len(before.messages)
    assert after.messages[3].content == "src/app.py:10"
    assert [m.content for i, m in enumerate(after.messages) if i != 3] == [
        m.content for i, m in enumerate(before.messages) if i != 3
    ]
    assert after.token_count < before.token_count
    params = after.to_openai_params()["messages"]
    assert params[3] == {"role": "tool", "tool_call_id": "g1", "content": "src/app.py:10"}


def test_tool_result_edit_log_shows_both(t: Transcript) -> None:
    c = agent_session(t)
    edit = t.tool_result("g1", "grep", "src/app.py:10", edit=c["grep1"].hash, message="trimmed grep")
    log = t.log()
    assert log[3].hash == c["grep1"].hash and log[-1].hash == edit.hash
    assert log[-1].message == "trimmed grep"
    assert c["grep1"].message == "tool result: grep"
    assert [x.content.content for x in log].count("src/app.py:10") == 1


def test_tool_result_error_flag_round_trips(t: Transcript) -> None:
    t.assistant("", tool_calls=[ToolCall("x", "f", "{}")])
    failed = t.tool_result("x", "f", "boom", is_error=True, metadata={"attempt": 1})
    assert t.get(failed.hash).content.is_error
    assert t.compile().messages[-1].is_error
    assert t.compile().messages[-1].metadata == {"attempt": 1}


# --- phase 2: query API --------------------------------------------------------------------------


def test_find_tool_results_all(t: Transcript) -> None:
    c = agent_session(t)
    assert [r.hash for r in t.find_tool_results()] == [c["grep1"].hash, c["grep2"].hash, c["read1"].hash]


def test_find_tool_results_by_name(t: Transcript) -> None:
    c = agent_session(t)
    assert [r.hash for r in t.find_tool_results(name="grep")] == [c["grep1"].hash, c["grep2"].hash]
    assert [r.hash for r in t.find_tool_results(name="read")] == [c["read1"].hash]
    assert t.find_tool_results(name="nope") == []


def test_find_tool_results_after_is_exclusive(t: Transcript) -> None:
    c = agent_session(t)
    assert [r.hash for r in t.find_tool_results(after=c["grep1"].hash)] == [c["grep2"].hash, c["read1"].hash]
    assert [r.hash for r in t.find_tool_results(after=c["call2"].hash)] == [c["grep2"].hash, c["read1"].hash]
    assert [r.hash for r in t.find_tool_results(name="grep", after=c["call2"].hash)] == [c["grep2"].hash]
    assert t.find_tool_results(after=c["answer"].hash) == []


def test_find_tool_results_after_unknown_commit_is_an_error(t: Transcript) -> None:
    agent_session(t)
    with pytest.raises(TranscriptError, match="no commit 'feed'"):
        t.find_tool_results(after="feed")


def test_find_tool_results_returns_the_current_version_of_edited_results(t: Transcript) -> None:
    c = agent_session(t)
    edit = t.tool_result("g1", "grep", "short", edit=c["grep1"].hash)
    found = t.find_tool_results(name="grep")
    assert [r.hash for r in found] == [edit.hash, c["grep2"].hash]
    # An edit is positioned where its target is.
    assert [r.hash for r in t.find_tool_results(after=edit.hash)] == [c["grep2"].hash, c["read1"].hash]


def test_find_tool_calls_all(t: Transcript) -> None:
    c = agent_session(t)
    assert [x.hash for x in t.find_tool_calls()] == [c["call1"].hash, c["call2"].hash]


def test_find_tool_calls_by_name(t: Transcript) -> None:
    c = agent_session(t)
    assert [x.hash for x in t.find_tool_calls(name="read")] == [c["call2"].hash]
    assert [x.hash for x in t.find_tool_calls(name="grep")] == [c["call1"].hash, c["call2"].hash]
    assert t.find_tool_calls(name="write") == []


def test_find_tool_turns_groups_correctly(t: Transcript) -> None:
    c = agent_session(t)
    turns = t.find_tool_turns()
    assert [turn.call.hash for turn in turns] == [c["call1"].hash, c["call2"].hash]
    assert turns[0].results == (c["grep1"],)
    assert turns[0].tool_names == ("grep",)
    assert turns[0].all_hashes == (c["call1"].hash, c["grep1"].hash)
    assert turns[0].result_hashes == (c["grep1"].hash,)
    assert turns[0].total_tokens == c["call1"].token_count + c["grep1"].token_count


def test_find_tool_turns_multi_tool(t: Transcript) -> None:
    c = agent_session(t)
    turn = t.find_tool_turns()[1]
    assert turn.tool_names == ("grep", "read")
    assert turn.result_hashes == (c["grep2"].hash, c["read1"].hash)
    assert turn.total_tokens == sum(x.token_count for x in (c["call2"], c["grep2"], c["read1"]))


def test_find_tool_turns_by_name(t: Transcript) -> None:
    c = agent_session(t)
    assert [turn.call.hash for turn in t.find_tool_turns(name="read")] == [c["call2"].hash]
    assert len(t.find_tool_turns(name="grep")) == 2
    assert t.find_tool_turns(name="write") == []


def test_find_tool_turns_empty(t: Transcript) -> None:
    t.user("hi")
    t.assistant("hello")
    assert t.find_tool_turns() == []
    assert t.find_tool_calls() == []
    assert t.find_tool_results() == []


def test_find_tool_turns_results_in_conversation_order_and_orphans_ignored(t: Transcript) -> None:
    call = t.assistant("", tool_calls=[ToolCall("b", "f", "{}"), ToolCall("a", "f", "{}")])
    ra = t.tool_result("a", "f", "A")
    t.tool_result("zzz", "f", "orphan")
    rb = t.tool_result("b", "f", "B")
    pending = t.assistant("", tool_calls=[ToolCall("later", "f", "{}")])
    turns = t.find_tool_turns()
    assert turns[0].call == call
    assert turns[0].result_hashes == (ra.hash, rb.hash)
    assert turns[1] == ToolTurn(call=pending, results=(), tool_names=("f",))


def test_find_tool_turns_reflects_edits(t: Transcript) -> None:
    c = agent_session(t)
    edit = t.tool_result("g2", "grep", "line 40", edit=c["grep2"].hash)
    turn = t.find_tool_turns()[1]
    assert turn.result_hashes == (edit.hash, c["read1"].hash)
    assert turn.total_tokens == c["call2"].token_count + edit.token_count + c["read1"].token_count


def test_tool_turn_is_frozen(t: Transcript) -> None:
    agent_session(t)
    turn = t.find_tool_turns()[0]
    with pytest.raises(AttributeError):
        turn.results = ()  # type: ignore[misc]
