"""Text rules: a lone surrogate from a model, a tool or a user never ends a run.

JSON can spell a lone surrogate (``"\\ud800"``) and Python decodes it, but
UTF-8 cannot encode one. Everything the transcript stores as JSON (message
text, tool calls, tool results, metadata) keeps it exactly; the two fields
stored as plain text (the session id and a caller's commit message) refuse
it with a TranscriptError naming the field, before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop_support import arithmetic_prompt
from weakprompt.canonical import canonical_json, content_hash, find_surrogate, parse_canonical_json
from weakprompt.errors import TranscriptError
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import Message, ToolCall
from weakprompt.store import Store
from weakprompt.tokens import ByteEstimateCounter
from weakprompt.transcript import Transcript

# Surrogates alone, as halves of what would be a pair, and next to real astral characters.
tricky = st.sampled_from(["\ud800", "\udfff", "\udc80", "\ud83d", "\ude00", "\U0001f600", "\\", '"', "\x00"])
texts = st.text(st.one_of(st.characters(categories=["Cs"]), st.characters(), tricky), max_size=12)
json_values: st.SearchStrategy[JSONValue] = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**40), 2**40), texts),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8,
)


# --- canonical JSON ---------------------------------------------------------------------------------


@given(json_values)
def test_property_canonical_json_is_utf8_and_reads_back_exactly(value: JSONValue) -> None:
    text = canonical_json(value)
    text.encode("utf-8")  # never raises: surrogates are escaped
    assert parse_canonical_json(text) == value
    assert canonical_json(parse_canonical_json(text)) == text


@given(st.recursive(st.text(), lambda inner: st.lists(inner, max_size=3), max_leaves=6))
def test_property_text_without_surrogates_encodes_as_before(value: JSONValue) -> None:
    """Hashes of everything stored before this rule are unchanged."""
    before = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    assert canonical_json(value) == before


def test_an_escaped_surrogate_pair_stays_two_code_points() -> None:
    value = {"\ud83d\ude00": "\ud83d\ude00", "real": "\U0001f600"}
    text = canonical_json(value)
    assert text == '{"real":"\U0001f600","\\ud83d\\ude00":"\\ud83d\\ude00"}'
    assert json.loads(text) != value  # a plain decoder merges the pair into one character
    assert parse_canonical_json(text) == value


def test_parse_canonical_json_still_refuses_what_is_not_json() -> None:
    with pytest.raises(ValueError):
        parse_canonical_json('{"a": "\\ud800"')


def test_find_surrogate_gives_the_first_index() -> None:
    assert find_surrogate("plain") is None
    assert find_surrogate("é\U0001f600") is None
    assert find_surrogate("ab\udc80c\ud800") == 2


# --- the transcript ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shared_store() -> Iterator[Store]:
    with (
        tempfile.TemporaryDirectory(prefix="wp-text-rules-") as folder,
        Store.open(Path(folder) / "t.db") as store,
    ):
        yield store


def _row_counts(store: Store) -> tuple[int, int, int]:
    path = store.url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as raw:
        return tuple(  # type: ignore[return-value]
            raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("commits", "blobs", "commit_tools")
        )


calls = st.builds(
    ToolCall,
    id=texts.filter(bool),
    name=texts.filter(bool),
    arguments=st.one_of(texts, st.dictionaries(texts, json_values, max_size=3)),
)


@st.composite
def turns(draw: st.DrawFn) -> dict[str, object]:
    return {
        "session": draw(texts.filter(bool)),
        "system": draw(texts),
        "user": draw(texts),
        "assistant": draw(texts),
        "calls": draw(st.lists(calls, max_size=2)),
        "results": draw(st.lists(texts, min_size=2, max_size=2)),
        "message": draw(st.none() | texts),
        "metadata": draw(st.dictionaries(texts, json_values, max_size=3)),
        "in_turn": draw(st.booleans()),
    }


_counter = iter(range(10**9))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns())
def test_property_surrogates_in_every_field_round_trip_or_are_refused_before_writing(
    shared_store: Store, turn: dict[str, object]
) -> None:
    session = f"{next(_counter)}:{turn['session']}"
    message = turn["message"]
    assert message is None or isinstance(message, str)
    metadata = turn["metadata"]
    assert isinstance(metadata, dict)
    tool_calls: list[ToolCall] = turn["calls"]  # type: ignore[assignment]
    results: list[str] = turn["results"]  # type: ignore[assignment]
    refused = (
        find_surrogate(session) is not None
        or "\x00" in session
        or (message is not None and (find_surrogate(message) is not None or "\x00" in message))
    )
    written: list[Message] = [
        Message("system", str(turn["system"])),
        Message("user", str(turn["user"])),
        Message("assistant", str(turn["assistant"]), tool_calls=tuple(tool_calls)),
        *(
            Message("tool", results[i % 2], tool_call_id=call.id, name=call.name)
            for i, call in enumerate(tool_calls)
        ),
    ]
    before = _row_counts(shared_store)
    try:
        t = Transcript(shared_store, session)
        t.set_tools([{"name": "f", "description": "\ud800 in a description is fine"}])
        if turn["in_turn"]:
            with t.turn():
                infos = [t.commit(m, message=message, metadata=metadata) for m in written]
        else:
            infos = [t.commit(m, message=message, metadata=metadata) for m in written]
    except TranscriptError as exc:
        assert refused, exc
        assert "session_id" in str(exc) or "commit message" in str(exc)
        assert _row_counts(shared_store) == before
        return
    assert not refused
    fresh = Transcript(shared_store, session)
    log = fresh.log()
    assert [c.hash for c in log] == [c.hash for c in infos]
    for stored, given_message, info in zip(log, written, infos, strict=True):
        assert stored == info
        assert stored.content == attrs.evolve(given_message, metadata=metadata)
        assert stored.metadata == metadata
        assert stored.message == message
    assert fresh.compile() == t.compile()
    assert fresh.compile().tools == t.compile().tools


def test_a_surrogate_in_the_session_id_is_refused_naming_it(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        with pytest.raises(TranscriptError, match=r"session_id contains a lone surrogate at index 2"):
            Transcript(store, "ab\ud800")


def test_a_surrogate_in_a_commit_message_is_refused_naming_it(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        t = Transcript(store, "s")
        with pytest.raises(TranscriptError, match=r"commit message contains a lone surrogate at index 0"):
            t.user("fine", message="\udc80")
        with pytest.raises(TranscriptError, match="commit message contains a NUL"):
            t.user("fine", message="a\x00")
        assert t.log() == []


def test_a_surrogate_in_an_edit_target_or_lookup_is_no_such_commit(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        t = Transcript(store, "s")
        t.user("x")
        with pytest.raises(TranscriptError, match="edit target must be a commit hash"):
            t.user("y", edit="\ud800")
        with pytest.raises(TranscriptError, match="no commit"):
            t.get("\ud800")
        with pytest.raises(TranscriptError, match="no commit"):
            t.get_commit_tools("\ud800")
        with pytest.raises(TranscriptError, match="blob hash"):
            t.get_blob("\ud800")
        assert t.tool_versions("f\ud800") == []


def test_a_surrogate_in_a_tool_schema_name_is_refused_naming_the_tool(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        t = Transcript(store, "s")
        with pytest.raises(TranscriptError, match=r"tool 'x\\ud800' \(#1\) name contains a lone surrogate"):
            t.set_tools([{"name": "ok"}, {"name": "x\ud800"}])


def test_the_default_message_of_a_tool_result_spells_the_surrogate_out(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        t = Transcript(store, "s")
        t.assistant("", tool_calls=[ToolCall("c\ud800", "ec\ud800ho\x00", "{}")])
        result = t.tool_result("c\ud800", "ec\ud800ho\x00", "out \udfff")
        assert result.message == "tool result: ec\\ud800ho"
        again = Transcript(store, "s").get(result.hash)
        assert again.content.name == "ec\ud800ho\x00"
        assert again.content.content == "out \udfff"


class StrictCounter:
    """A tokenizer that refuses text UTF-8 cannot encode, as real ones do."""

    exact = True

    def count(self, text: str) -> int:
        return len(text.encode("utf-8"))


def test_token_counters_never_see_a_surrogate(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        t = Transcript(store, "s", token_counter=StrictCounter())
        commit = t.assistant("a\ud800", tool_calls=[ToolCall("i", "n\udc80", {"k": "\udfff"})])
        # what the counter was given: arguments JSON cannot hold as plain text are written with the
        # surrogate escaped (ToolCall.arguments_json, the one encoding every consumer reads)
        shown = ["a\ufffd", "n\ufffd", '{"k":"\\udfff"}']
        assert commit.token_count == sum(len(text.encode()) for text in shown)
    assert ByteEstimateCounter().count("\ud800" * 4) == 3


# --- end to end ---------------------------------------------------------------------------------------


def test_evaluate_completes_when_the_model_sends_and_the_tool_echoes_a_lone_surrogate(
    tmp_path: Path,
) -> None:
    from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
    from weakprompt.runtime import evaluate
    from weakprompt.session import Session

    adapter = ScriptedAdapter(
        [
            # What a provider sends: JSON text, the surrogate spelled as an escape.
            tool_call_turn(tool_call("echo", '{"text": "\\ud800"}', id="call_s"), text="thinking \udfff"),
            text_turn("done \udc80"),
        ]
    )
    path = tmp_path / "run.db"
    with Store.open(path) as store:
        response = evaluate(
            arithmetic_prompt(), adapter=adapter, session=Session(), input="hi \ud83d", store=store
        )
    assert response.text == "done \udc80"
    # The dispatcher refuses a lone surrogate in arguments with a failed result the model can read
    # (specs/TOOLS.md); the run goes on and every text, surrogates included, is stored exactly.
    refusal = response.tool_executions[0].message
    assert not response.tool_executions[0].result.success
    assert "lone surrogate" in refusal and "$.text" in refusal
    with Store.open(path) as store:
        log = Transcript(store, response.session_id).log()
    by_role = {c.role: c.content for c in log}
    assert [c.content.content for c in log if c.role == "user"] == ["hi \ud83d"]
    assert by_role["tool"].content == refusal
    assert [c.content.content for c in log if c.role == "assistant"] == ["thinking \udfff", "done \udc80"]


@pytest.mark.parametrize(
    "call",
    [
        ToolCall("c1", "echo", {"text": "\ud800"}),  # object arguments, as an adapter may parse them
        ToolCall("c1", "echo", '{"text": "\ud800"}'),  # a raw surrogate in the argument text
        ToolCall("c1", "ec\ud800ho", "{}"),  # a tool name
        ToolCall("c\ud800", "echo", '{"text": "x"}'),  # a call id
        ToolCall("c1", "echo", {"text": "\ud800" * 20_000}),  # an oversized echo: stored, previewed
    ],
    ids=["object arguments", "raw argument text", "tool name", "call id", "oversized output"],
)
def test_evaluate_completes_when_a_raw_surrogate_reaches_the_output_store(
    tmp_path: Path, call: ToolCall
) -> None:
    from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call_turn
    from weakprompt.runtime import evaluate
    from weakprompt.session import Session

    adapter = ScriptedAdapter([tool_call_turn(call), text_turn("done")])
    with Store.open(tmp_path / "run.db") as store:
        response = evaluate(arithmetic_prompt(), adapter=adapter, session=Session(), input="hi", store=store)
    assert response.text == "done"


def test_content_hash_of_a_surrogate_is_the_hash_of_its_escape() -> None:
    assert content_hash("\ud800") == hashlib.sha256(b'"\\ud800"').hexdigest()
