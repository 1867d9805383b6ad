"""Drafting commits: the shortcuts taken for speed give exactly the hashes of the plain definitions."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.canonical import canonical_json, content_hash
from weakprompt.errors import TranscriptError
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import Message, ToolCall
from weakprompt.store.commit_rows import metadata_json
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.transcript.records import CommitOperation, commit_hash, message_payload
from weakprompt.transcript.writer import draft_commit, place

NOW = datetime(2026, 1, 1, tzinfo=UTC)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text()
)
# Objects with non-string keys are allowed in tool-call arguments: JSON turns the keys into strings.
keys = st.one_of(st.text(max_size=5), st.integers(-20, 20))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
arguments = st.one_of(st.text(max_size=20), st.dictionaries(keys, json_values, max_size=4))
calls = st.builds(ToolCall, st.text(min_size=1, max_size=5), st.text(min_size=1, max_size=5), arguments)
messages = st.one_of(
    st.builds(
        Message, st.just("assistant"), st.text(max_size=30), tool_calls=st.lists(calls, max_size=3).map(tuple)
    ),
    st.builds(Message, st.just("user"), st.text(max_size=30)),
    st.builds(
        Message,
        st.just("tool"),
        st.text(max_size=30),
        tool_call_id=st.text(min_size=1, max_size=5),
        name=st.just("f"),
        is_error=st.booleans(),
    ),
)


def plain_blob_hash(message: Message) -> str:
    """The definition: the hash of the canonical JSON of the payload as a reader decodes it."""
    decoded: JSONValue = json.loads(canonical_json(message_payload(message)))
    return content_hash(decoded)


@given(messages)
def test_property_blob_hash_and_payload_are_those_of_the_decoded_text(message: Message) -> None:
    try:
        plain = plain_blob_hash(message)
    except TranscriptError:  # mixed key types cannot even be sorted: refused by both
        with pytest.raises(TranscriptError):
            draft_commit(
                message,
                edit=None,
                message=None,
                metadata=None,
                tools=(),
                set_hash=None,
                counter=DEFAULT_TOKEN_COUNTER,
                now=NOW,
            )
        return
    draft = draft_commit(
        message,
        edit=None,
        message=None,
        metadata=None,
        tools=(),
        set_hash=None,
        counter=DEFAULT_TOKEN_COUNTER,
        now=NOW,
    )
    assert draft.blob_hash == plain
    # the payload kept in memory is what a reader decodes from the stored text
    assert draft.payload == json.loads(draft.canonical)
    assert json.dumps(draft.payload, sort_keys=True) == json.dumps(
        json.loads(draft.canonical), sort_keys=True
    )


def test_object_arguments_with_integer_keys_keep_the_decoded_hash() -> None:
    # 10 sorts before 2 as text but after it as a number: the two encodings differ.
    message = Message("assistant", "", tool_calls=(ToolCall("c", "f", {10: "a", 2: "b"}),))  # type: ignore[dict-item]
    draft = draft_commit(
        message,
        edit=None,
        message=None,
        metadata=None,
        tools=(),
        set_hash=None,
        counter=DEFAULT_TOKEN_COUNTER,
        now=NOW,
    )
    assert canonical_json(message_payload(message)) != canonical_json(
        json.loads(canonical_json(message_payload(message)))
    )
    assert draft.blob_hash == plain_blob_hash(message)


metadata_values = st.dictionaries(keys, json_values, max_size=4)
hashes = st.one_of(st.none(), st.text(max_size=70))


@given(
    message=messages,
    session=st.text(min_size=1, max_size=20),
    parent=hashes,
    target=hashes,
    commit_message=st.one_of(st.none(), st.text(max_size=20)),
    metadata=metadata_values,
)
def test_property_commit_hash_is_the_plain_definition(
    message: Message,
    session: str,
    parent: str | None,
    target: str | None,
    commit_message: str | None,
    metadata: dict[str, JSONValue],  # keys may be ints here: JSON makes them strings
) -> None:
    try:
        draft = draft_commit(
            message,
            edit=None,
            message=commit_message,
            metadata=metadata,
            tools=(),
            set_hash=None,
            counter=DEFAULT_TOKEN_COUNTER,
            now=NOW,
        )
    except TranscriptError:  # input JSON cannot encode: refused before any hashing
        return
    placed = place(draft, session_id=session, parent=parent, seq=0, edit_target=target)
    operation = CommitOperation.APPEND if target is None else CommitOperation.EDIT
    expected = commit_hash(
        session_id=session,
        parent=parent,
        operation=operation,
        edit_target=target,
        blob_hash=draft.blob_hash,
        message=commit_message,
        metadata=json.loads(canonical_json(metadata)),
    )
    assert placed.info.hash == expected
    decoded = json.loads(canonical_json(metadata))
    assert draft.metadata == decoded
    assert canonical_json(draft.metadata) == canonical_json(decoded)  # same types too (True is not 1)
    assert draft.metadata_text == (metadata_json(decoded) if decoded else "{}")  # the stored text
    assert placed.info.operation is operation


def test_metadata_copy_shares_nothing_with_the_caller() -> None:
    """Plain metadata (strings, integers, nested objects) is copied, not decoded, and not shared."""
    usage: dict[str, JSONValue] = {"input_tokens": 10, "cached": True, "model": "m", "none": None}
    metadata: dict[str, JSONValue] = {"usage": usage, "n": 1}
    draft = draft_commit(
        Message("assistant", "hi"),
        edit=None,
        message=None,
        metadata=metadata,
        tools=(),
        set_hash=None,
        counter=DEFAULT_TOKEN_COUNTER,
        now=NOW,
    )
    usage["input_tokens"] = 99
    metadata["n"] = 2
    expected_usage = {"input_tokens": 10, "cached": True, "model": "m", "none": None}
    assert draft.metadata == {"usage": expected_usage, "n": 1}
    assert draft.metadata["usage"] is not usage
