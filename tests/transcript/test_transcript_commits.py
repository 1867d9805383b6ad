"""Committing: hashes, edits with provenance, usage, and refusing bad input without writing."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import Message, ToolCall, Usage
from weakprompt.store import Store
from weakprompt.tokens import ByteEstimateCounter
from weakprompt.transcript import CommitOperation, Transcript


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "t.db", clock=FakeClock()) as opened:
        yield opened


def counts(store: Store) -> tuple[int, int, int, int]:
    with store.read() as conn:
        return tuple(  # type: ignore[return-value]
            conn.exec_driver_sql(f"SELECT count(*) FROM {t}").scalar()
            for t in ("commits", "blobs", "tool_definitions", "commit_tools")
        )


def test_commits_chain_with_parents_and_sequence(store: Store) -> None:
    t = Transcript(store, "s")
    assert t.head is None
    a = t.system("sys")
    b = t.user("hi")
    c = t.assistant("hello")
    assert (a.parent, b.parent, c.parent) == (None, a.hash, b.hash)
    assert [x.seq for x in (a, b, c)] == [0, 1, 2]
    assert t.head == c.hash
    assert [x.hash for x in t.log()] == [a.hash, b.hash, c.hash]
    assert all(x.operation is CommitOperation.APPEND for x in t.log())
    assert t.get(b.hash) == b


def test_returned_commit_equals_stored_commit(store: Store) -> None:
    t = Transcript(store, "s")
    info = t.assistant(
        "calling",
        tool_calls=[ToolCall("c1", "f", {"x": [1, 2]}), ToolCall("c2", "g", "{bad")],
        metadata={"k": "v"},
        message="first call",
    )
    assert t.get(info.hash) == info
    assert info.content.tool_calls == (ToolCall("c1", "f", {"x": [1, 2]}), ToolCall("c2", "g", "{bad"))
    assert info.message == "first call"
    assert info.content.metadata == {"k": "v"}


def test_a_commits_text_and_its_commit_message_read_as_such(store: Store) -> None:
    """``commit.text`` is what the message says; ``commit.message`` is the commit message."""
    t = Transcript(store, "s")
    result = t.tool_result("c1", "grep", "3 hits")
    assert result.text == "3 hits" == result.content.content
    assert result.message == "tool result: grep"
    plain = t.user("hi")
    assert (plain.text, plain.message) == ("hi", None)
    stored = t.get(plain.hash)
    assert stored is not None and stored.text == "hi"


def test_hash_ignores_time_and_tools_but_not_content(tmp_path: Path) -> None:
    def build(path: Path, *, advance: float, tools: list[dict[str, object]] | None) -> list[str]:
        clock = FakeClock()
        with Store.open(path, clock=clock) as store:
            t = Transcript(store, "s")
            t.set_tools(tools)  # type: ignore[arg-type]
            out = [t.system("sys").hash]
            clock.advance(advance)
            out.append(t.user("hi").hash)
            return out

    first = build(tmp_path / "a.db", advance=1, tools=None)
    assert build(tmp_path / "b.db", advance=999, tools=[{"name": "f"}]) == first
    with Store.open(tmp_path / "c.db") as store:
        t = Transcript(store, "s")
        t.system("sys")
        assert t.user("hi!").hash != first[1]


def test_hash_depends_on_session_parent_metadata_and_message(store: Store) -> None:
    a = Transcript(store, "a").user("same")
    b = Transcript(store, "b").user("same")
    assert a.hash != b.hash
    t = Transcript(store, "c")
    x = t.user("same")
    y = t.user("same")
    assert x.hash != y.hash and y.parent == x.hash
    assert x.blob_hash == y.blob_hash == a.blob_hash  # one blob, three commits
    assert counts(store)[1] == 1
    z1 = Transcript(store, "d").user("same", metadata={"k": 1})
    z2 = Transcript(store, "d2").user("same", metadata={"k": 1})
    assert z1.hash != z2.hash  # session differs
    m1 = Transcript(store, "e").user("same", message="one")
    m2 = Transcript(store, "e").user("same", message="one")
    assert m1.hash != m2.hash


def test_assistant_usage_is_recorded_in_metadata(store: Store) -> None:
    t = Transcript(store, "s")
    usage = Usage(input_tokens=120, output_tokens=7, cached_input_tokens=100, model_calls=1)
    info = t.assistant("hi", usage=usage, metadata={"model": "m"})
    assert info.usage == usage
    assert t.get(info.hash).metadata == {
        "model": "m",
        "usage": {"input_tokens": 120, "output_tokens": 7, "cached_input_tokens": 100, "model_calls": 1},
    }
    assert t.user("q").usage is None


def test_token_counts_use_the_transcript_counter(store: Store) -> None:
    t = Transcript(store, "s", token_counter=ByteEstimateCounter(bytes_per_token=1))
    info = t.assistant("abcd", tool_calls=[ToolCall("i", "fn", '{"a":1}')])
    assert info.token_count == 4 + 2 + 7
    default = Transcript(store, "d").user("x" * 10)
    assert default.token_count == math.ceil(10 / 4)


def test_commit_with_explicit_operation(store: Store) -> None:
    t = Transcript(store, "s")
    first = t.commit(Message("user", "v1"))
    edit = t.commit(Message("user", "v2"), operation=CommitOperation.EDIT, edit_target=first.hash)
    assert edit.operation is CommitOperation.EDIT and edit.edit_target == first.hash
    assert [m.content for m in t.compile().messages] == ["v2"]
    assert t.commit(Message("user", "v3"), operation="EDIT", edit_target=edit.hash).edit_target == first.hash  # type: ignore[arg-type]


# --- edits --------------------------------------------------------------------------------------------


def test_edit_replaces_in_place_and_keeps_the_original(store: Store) -> None:
    t = Transcript(store, "s")
    t.system("sys")
    question = t.user("What is 2+2?")
    t.assistant("5")
    fixed = t.user("What is 2+3?", edit=question.hash)
    compiled = t.compile()
    assert [m.content for m in compiled.messages] == ["sys", "What is 2+3?", "5"]
    assert compiled.commit_hashes[1] == fixed.hash
    assert [c.content.content for c in t.log()] == ["sys", "What is 2+2?", "5", "What is 2+3?"]
    assert t.get(question.hash).content.content == "What is 2+2?"


def test_edit_of_an_edit_targets_the_original(store: Store) -> None:
    t = Transcript(store, "s")
    original = t.user("a")
    e1 = t.user("b", edit=original.hash)
    e2 = t.user("c", edit=e1.hash)
    assert e2.edit_target == original.hash
    assert [m.content for m in t.compile().messages] == ["c"]


def test_edit_of_missing_commit_is_refused_and_nothing_written(store: Store) -> None:
    t = Transcript(store, "s")
    t.user("a")
    before = counts(store)
    with pytest.raises(TranscriptError, match="no such commit"):
        t.user("b", edit="0" * 64)
    with pytest.raises(TranscriptError, match="must be a commit hash"):
        t.user("b", edit="")
    assert counts(store) == before


def test_edit_of_another_sessions_commit_is_refused(store: Store) -> None:
    other = Transcript(store, "other").user("theirs")
    t = Transcript(store, "mine")
    t.user("mine")
    before = counts(store)
    with pytest.raises(TranscriptError, match="belongs to session 'other'"):
        t.user("hijack", edit=other.hash)
    assert counts(store) == before
    assert [m.content for m in Transcript(store, "other").compile().messages] == ["theirs"]


def test_edit_must_keep_the_role(store: Store) -> None:
    t = Transcript(store, "s")
    question = t.user("q")
    with pytest.raises(TranscriptError, match="keep the role"):
        t.assistant("a", edit=question.hash)
    assert len(t.log()) == 1


def test_tool_result_edit_must_keep_call_id_and_name(store: Store) -> None:
    t = Transcript(store, "s")
    t.assistant("", tool_calls=[ToolCall("c1", "grep", "{}")])
    result = t.tool_result("c1", "grep", "long output")
    with pytest.raises(TranscriptError, match="tool_call_id and name"):
        t.tool_result("c2", "grep", "short", edit=result.hash)
    with pytest.raises(TranscriptError, match="tool_call_id and name"):
        t.tool_result("c1", "find", "short", edit=result.hash)
    assert len(t.log()) == 2


def test_append_with_edit_target_and_edit_without_target_are_refused(store: Store) -> None:
    t = Transcript(store, "s")
    first = t.user("a")
    with pytest.raises(TranscriptError, match="only allowed with operation=EDIT"):
        t.commit(Message("user", "b"), edit_target=first.hash)
    with pytest.raises(TranscriptError, match="needs edit_target"):
        t.commit(Message("user", "b"), operation=CommitOperation.EDIT)
    assert len(t.log()) == 1


# --- bad input ----------------------------------------------------------------------------------------


def test_non_json_metadata_is_refused(store: Store) -> None:
    t = Transcript(store, "s")
    with pytest.raises(TranscriptError, match="metadata is not JSON-serialisable"):
        t.user("x", metadata={"when": object()})  # type: ignore[dict-item]
    with pytest.raises(TranscriptError, match="metadata is not JSON-serialisable"):
        t.user("x", metadata={"nan": float("nan")})
    assert counts(store) == (0, 0, 0, 0)


def test_non_json_tool_call_arguments_are_refused_naming_the_call(store: Store) -> None:
    t = Transcript(store, "s")
    with pytest.raises(TranscriptError, match=r"tool call 'c9' \(search\)"):
        t.assistant("", tool_calls=[ToolCall("c9", "search", {"q": {1, 2}})])  # type: ignore[dict-item]
    assert counts(store) == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("message", "needle"),
    [
        (Message("robot", "x"), "unknown message role"),  # type: ignore[arg-type]
        (Message("user", b"bytes"), "content must be a string"),  # type: ignore[arg-type]
    ],
)
def test_malformed_messages_are_refused(store: Store, message: Message, needle: str) -> None:
    with pytest.raises(TranscriptError, match=needle):
        Transcript(store, "s").commit(message)
    assert counts(store) == (0, 0, 0, 0)


def test_bad_commit_message_and_session_id(store: Store) -> None:
    with pytest.raises(TranscriptError, match="commit message must be a string"):
        Transcript(store, "s").user("x", message=3)  # type: ignore[arg-type]
    with pytest.raises(TranscriptError, match="non-empty string"):
        Transcript(store, "")
    with pytest.raises(TranscriptError, match="longer than 255"):
        Transcript(store, "x" * 256)


def test_get_of_unknown_or_foreign_commit(store: Store) -> None:
    other = Transcript(store, "other").user("x")
    t = Transcript(store, "s")
    with pytest.raises(TranscriptError, match="no commit"):
        t.get(other.hash)
    with pytest.raises(TranscriptError, match="no commit"):
        t.get("nope")


def test_repr_names_the_session(store: Store) -> None:
    assert "session_id='s'" in repr(Transcript(store, "s"))


def test_usage_metadata_that_is_not_usage_reads_as_none(store: Store) -> None:
    info = Transcript(store, "s").assistant("x", metadata={"usage": "unknown"})
    assert info.usage is None
    partial = Transcript(store, "p").assistant(
        "x", metadata={"usage": {"input_tokens": 5, "bogus": 1, "output_tokens": "7"}}
    )
    assert partial.usage == Usage(input_tokens=5)


def test_decoding_stored_payloads_is_defensive() -> None:
    from weakprompt.transcript.records import message_from_payload

    with pytest.raises(TranscriptError, match="not a JSON object"):
        message_from_payload(["user", "x"], {})
    with pytest.raises(TranscriptError, match="unknown role"):
        message_from_payload({"role": "robot", "content": "x"}, {})
    decoded = message_from_payload(
        {"role": "assistant", "content": 7, "tool_calls": ["junk", {"id": "a", "name": "f", "arguments": 3}]},
        {},
    )
    assert decoded == Message("assistant", "", tool_calls=(ToolCall("a", "f", "{}"),))


def test_stored_values_are_detached_from_the_callers_objects(store: Store) -> None:
    t = Transcript(store, "s")
    meta: dict[str, object] = {"tags": ["a"], "pair": (1, 2)}
    args: dict[str, object] = {"paths": ["x"]}
    info = t.assistant("", tool_calls=[ToolCall("c", "f", args)], metadata=meta)  # type: ignore[arg-type]
    meta["tags"].append("later")  # type: ignore[attr-defined]
    args["paths"].append("later")  # type: ignore[attr-defined]
    compiled = t.compile()
    assert compiled.messages[0].metadata == {"tags": ["a"], "pair": [1, 2]}
    assert compiled.messages[0].tool_calls[0].arguments == {"paths": ["x"]}
    assert info.metadata == t.get(info.hash).metadata
    assert compiled == Transcript(store, "s").compile()
