"""Invariants of the output store and the size policy, checked with hypothesis."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.runtime.results import (
    MIN_MAX_BYTES,
    PREVIEW_MAX_CHARS,
    SizePolicy,
    ToolOutputStore,
    handle_for,
    handle_text,
    make_preview,
    payload_hash,
)
from weakprompt.runtime.results.extraction import DocumentStats
from weakprompt.runtime.results.extraction.source import split_lines
from weakprompt.runtime.results.handles import HANDLE_NAMESPACE
from weakprompt.store import Store

# One store for the whole module: hypothesis runs many examples; ids never repeat.
_STORE = Store.open("sqlite://")
_OUTPUTS = ToolOutputStore(_STORE, "props")
_IDS = itertools.count()

_MAX_COUNT = 2**63 - 1


@given(st.binary(max_size=4096))
def test_store_round_trips_any_bytes_exactly(data: bytes) -> None:
    call_id = f"c{next(_IDS)}"
    ref = _OUTPUTS.store_result(call_id, "t", "{}", data)
    found = _OUTPUTS.get_result(call_id)
    assert found is not None
    assert found.data == data
    assert ref.size_bytes == len(data)
    by_handle = _OUTPUTS.get_by_handle(ref.handle)
    assert by_handle is not None and by_handle.data == data


@given(st.text(max_size=2000))
def test_store_round_trips_any_text_as_utf8(text: str) -> None:
    call_id = f"t{next(_IDS)}"
    _OUTPUTS.store_result(call_id, "t", "{}", text)
    found = _OUTPUTS.get_result(call_id)
    assert found is not None
    assert found.data == text.encode("utf-8", errors="surrogatepass")


@given(st.text(max_size=40), st.text(max_size=70))
def test_handles_are_the_uuid5_of_the_session_and_the_hash(session_id: str, stored_hash: str) -> None:
    name = f"{session_id}\n{stored_hash}"
    try:
        expected = str(uuid.uuid5(HANDLE_NAMESPACE, name))
    except UnicodeEncodeError:  # a lone surrogate: refused alike
        with pytest.raises(UnicodeEncodeError):
            handle_for(session_id, stored_hash)
        return
    assert handle_for(session_id, stored_hash) == expected


@given(st.binary(max_size=256), st.binary(max_size=256))
def test_handles_follow_content_within_a_session(a: bytes, b: bytes) -> None:
    same = handle_for("s", payload_hash(a)) == handle_for("s", payload_hash(b))
    assert same == (a == b)
    assert handle_for("s", payload_hash(a)) != handle_for("other", payload_hash(a))


@given(
    handle=st.uuids().map(str),
    size=st.integers(0, _MAX_COUNT),
    lines=st.integers(0, _MAX_COUNT),
    tokens=st.integers(0, _MAX_COUNT),
    max_bytes=st.integers(MIN_MAX_BYTES, 10**9),
)
def test_handle_message_is_always_under_the_byte_cap(
    handle: str, size: int, lines: int, tokens: int, max_bytes: int
) -> None:
    text = handle_text(handle, DocumentStats(size_bytes=size, lines=lines, tokens=tokens))
    assert len(text.encode("utf-8")) < SizePolicy(max_bytes=max_bytes).max_bytes
    assert f'handle = "{handle}"' in text


@given(st.binary(max_size=6000), st.booleans())
def test_preview_is_short_printable_and_a_prefix_of_the_text(data: bytes, is_error: bool) -> None:
    preview = make_preview(data, is_error=is_error)
    assert len(preview) <= PREVIEW_MAX_CHARS
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0 for c in preview)
    assert preview.startswith("Error: ") == is_error


_LINE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), max_size=120)


@given(st.lists(_LINE, min_size=1, max_size=60).filter(lambda lines: "\n".join(lines) != ""))
def test_preview_shows_whole_leading_lines_and_counts_the_rest(lines: list[str]) -> None:
    text = "\n".join(lines)
    expected = split_lines(text)
    preview = make_preview(text.encode())
    if len("\n".join(expected)) <= PREVIEW_MAX_CHARS:
        assert preview == "\n".join(expected)
        return
    body, marker = preview.rsplit("\n", 1)
    assert marker.startswith("... (") and marker.endswith(" more lines)")
    hidden = int(marker[5 : -len(" more lines)")])
    shown = body.split("\n")
    if hidden == len(expected):  # the first line alone was too long: cut inside it
        assert len(shown) == 1 and expected[0].startswith(shown[0])
    else:
        assert shown == expected[: len(shown)]
        assert hidden == len(expected) - len(shown)
