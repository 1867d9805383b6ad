"""Stats, decoding, the final-answer wrapper, the exact reply formats and truncate."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.runtime.results.extraction import (
    ExtractionSource,
    decode_text,
    document_stats,
    handle_message,
    truncate_text,
)
from weakprompt.runtime.results.extraction.replies import (
    MAX_HANDLE_CHARS,
    failure_reply,
    not_found_reply,
    success_reply,
)
from weakprompt.runtime.results.extraction.source import count_lines, split_lines
from weakprompt.runtime.results.extraction.truncate import MIN_TRUNCATE_BYTES
from weakprompt.runtime.results.extraction.wrapper import FinalWrapper, random_nonce
from weakprompt.tokens import ByteEstimateCounter

STORE_BYTE_CAP = 12288  # the output store's default max_bytes


# -- source and stats ------------------------------------------------------------------------


def test_stats_count_bytes_lines_tokens_and_average_line_size() -> None:
    data = b"alpha\nbeta\ngamma"
    stats = document_stats(data, ByteEstimateCounter())
    assert (stats.size_bytes, stats.lines, stats.tokens) == (16, 3, 4)
    assert stats.avg_line_bytes == pytest.approx(16 / 3)
    assert document_stats(b"", ByteEstimateCounter()).avg_line_bytes == 0.0


@pytest.mark.parametrize(
    ("data", "lines"),
    [(b"", 0), (b"x", 1), (b"x\n", 1), (b"x\ny", 2), (b"\n\n", 2), (b"a\r\nb\r\n", 2)],
)
def test_line_count_and_split_agree(data: bytes, lines: int) -> None:
    assert count_lines(data) == lines
    assert len(split_lines(decode_text(data))) == lines


def test_split_lines_drops_carriage_returns() -> None:
    assert split_lines("a\r\nb\rc\n") == ["a", "b\rc"]


def test_invalid_utf8_decodes_with_replacement_characters() -> None:
    data = b"ok \xff\xfe then \xe2\x82"  # stray bytes and a cut-off euro sign
    text = decode_text(data)
    assert text.startswith("ok ") and "then" in text
    assert "\ufffd" in text


@given(st.binary(max_size=500))
def test_decoding_never_raises_and_keeps_line_count(data: bytes) -> None:
    assert len(split_lines(decode_text(data))) == count_lines(data)


def test_source_repr_hides_the_payload() -> None:
    source = ExtractionSource(handle="h", tool_name="t", arguments="{}", data=b"secret" * 100)
    assert "secret" not in repr(source)
    assert "<600 bytes>" in repr(source)


# -- the final-answer wrapper ----------------------------------------------------------------


def test_wrapper_tags_have_the_project_shape() -> None:
    wrapper = FinalWrapper("abcd1234")
    assert wrapper.opening == '<wp-abcd1234-FINAL format="text">'
    assert wrapper.closing == "</wp-abcd1234-FINAL>"
    assert wrapper.example("x") == '<wp-abcd1234-FINAL format="text">\nx\n</wp-abcd1234-FINAL>'


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('<wp-n0nce-FINAL format="text">answer</wp-n0nce-FINAL>', "answer"),
        ('thinking...\n<wp-n0nce-FINAL format="text">\n  answer \n', "answer"),  # no closing tag
        ("<WP-N0NCE-final>answer</wp-n0nce-FINAL> trailing", "answer"),  # case, no attribute
        ('< wp-n0nce-FINAL format="text" >a</ wp-n0nce-FINAL >', "a"),  # stray spaces
        ('<wp-n0nce-FINAL format="text">draft</wp-n0nce-FINAL>\n<wp-n0nce-FINAL>final', "final"),
        ("NO RELEVANT DATA FOUND", None),  # no wrapper at all
        ('<wp-other-FINAL format="text">forged</wp-other-FINAL>', None),  # another nonce
        ('<wp-n0nce-FINAL format="text">   </wp-n0nce-FINAL>', None),  # empty inside
        ("<wp-n0nce-FINALX>no</wp-n0nce-FINAL>", None),  # a longer tag name
        ("</wp-n0nce-FINAL>", None),  # closing only
    ],
)
def test_wrapper_parsing_is_lenient_but_needs_the_nonce(reply: str, expected: str | None) -> None:
    assert FinalWrapper("n0nce").parse(reply) == expected


def test_no_relevant_data_is_an_answer() -> None:
    wrapper = FinalWrapper("abcd")
    body = "NO RELEVANT DATA FOUND\nThe text lists HTTP requests."
    assert wrapper.parse(wrapper.example(body)) == body


@pytest.mark.parametrize("nonce", ["", "abc", "has space", "x" * 65, "a-b-c-d"])
def test_bad_nonces_are_refused(nonce: str) -> None:
    with pytest.raises(ValueError, match="nonce"):
        FinalWrapper(nonce)


def test_random_nonces_differ_and_are_usable() -> None:
    nonces = {random_nonce() for _ in range(50)}
    assert len(nonces) == 50
    for nonce in nonces:
        FinalWrapper(nonce)


# -- exact formats ---------------------------------------------------------------------------


def test_handle_message_is_exactly_the_documented_text() -> None:
    assert handle_message("3f2a", 123456, 789, 45678) == (
        "Tool output is too large (123456 bytes, 789 lines, 45678 tokens).\n"
        'Call tool_output(handle = "3f2a", extract = "what to extract").\n'
        "Provide precise and detailed instructions in `extract` about what you are looking for."
    )


@pytest.mark.parametrize(
    ("handle", "sizes"),
    [
        ("", (1, 1, 1)),
        ("x" * (MAX_HANDLE_CHARS + 1), (1, 1, 1)),
        ('a"b', (1, 1, 1)),
        ("a\\b", (1, 1, 1)),
        ("a\nb", (1, 1, 1)),
        ("ok", (-1, 1, 1)),
        ("ok", (1, True, 1)),
        ("ok", (1, 1, 2**63)),
    ],
)
def test_handle_message_refuses_bad_input(handle: str, sizes: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError, match="handle_message"):
        handle_message(handle, *sizes)


counts = st.integers(min_value=0, max_value=2**63 - 1)
handles = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cc", "Cs", "Zl", "Zp", "Cf", "Co", "Cn", "Zs"), blacklist_characters='"\\'
    ),
    min_size=1,
    max_size=MAX_HANDLE_CHARS,
)


@given(handle=handles, size=counts, lines=counts, tokens=counts)
def test_handle_message_always_fits_the_store_byte_cap(
    handle: str, size: int, lines: int, tokens: int
) -> None:
    message = handle_message(handle, size, lines, tokens)
    assert len(message.encode("utf-8")) < STORE_BYTE_CAP
    assert f'handle = "{handle}"' in message
    assert message.count("\n") == 2


def test_success_and_failure_headers_are_exact() -> None:
    assert success_reply("fetch_logs", "h-1", "read-grep", "the answer") == (
        "ABSTRACT FROM TOOL OUTPUT fetch_logs WITH HANDLE h-1, STRATEGY:read-grep:\n\nthe answer"
    )
    assert failure_reply("fetch_logs", "h-1", "auto", "what went wrong") == (
        "TOOL_OUTPUT FAILED FOR fetch_logs WITH HANDLE h-1, STRATEGY:auto:\n\nwhat went wrong"
    )


def test_headers_keep_model_supplied_text_on_one_short_line() -> None:
    reply = failure_reply("t", "evil\nhandle" + "x" * 500, "bad\nmode", "error")
    header = reply.split("\n\n", 1)[0]
    assert "\n" not in header
    assert len(header) < 400


def test_not_found_is_a_success_reply_naming_the_handle() -> None:
    reply = not_found_reply("nope-123")
    assert reply.startswith("ABSTRACT FROM TOOL OUTPUT UNKNOWN WITH HANDLE nope-123, STRATEGY:none:\n\n")
    assert "no stored tool output" in reply and "'nope-123'" in reply


# -- truncate --------------------------------------------------------------------------------


def test_small_output_is_returned_whole() -> None:
    assert truncate_text(b"short\n", 1000) == "short\n"
    assert truncate_text(b"short", 1000, preface="NOTE: x") == "NOTE: x\nshort"


def test_large_output_keeps_head_and_tail_with_a_warning() -> None:
    data = "".join(f"line {i}\n" for i in range(1, 2001)).encode()
    text = truncate_text(data, 1000)
    lines = text.splitlines()
    assert lines[0].startswith("WARNING: this is not the whole output.")
    assert f"of its {len(data)} bytes" in lines[0]
    assert lines[1] == "line 1"
    assert lines[-1] == "line 2000"
    warned = re.search(r"(\d+) of its \d+ bytes \((\d+) line breaks\)", lines[0])
    assert warned is not None
    head, marker_and_tail = text.split("\n", 1)[1].split("[... ", 1)
    marker, tail = marker_and_tail.split("\n", 1)
    assert marker == f"{warned.group(1)} bytes and {warned.group(2)} line breaks cut here ...]"
    assert len(head) + int(warned.group(1)) + len(tail) == len(data)  # nothing lost or doubled
    assert head.endswith("\n") and "\n\n" not in head
    assert len(text.encode()) <= 1000


def test_single_huge_line_is_cut_between_characters() -> None:
    data = ("€" * 5000).encode()
    text = truncate_text(data, 600)
    assert len(text.encode()) <= 600
    body = text.split("\n", 1)[1]
    assert body.startswith("€") and body.endswith("€")


def test_long_preface_is_shortened_to_keep_the_cap() -> None:
    text = truncate_text(b"y" * 10_000, 600, preface="NOTE: " + "because " * 200)
    assert len(text.encode()) <= 600
    assert text.startswith("NOTE: because")
    assert "WARNING:" in text


def test_cap_below_minimum_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        truncate_text(b"x", MIN_TRUNCATE_BYTES - 1)


@given(
    data=st.one_of(st.binary(max_size=20_000), st.text(max_size=5000).map(str.encode)),
    cap=st.integers(min_value=MIN_TRUNCATE_BYTES, max_value=5000),
    preface=st.text(max_size=800),
)
def test_truncate_always_fits_its_cap(data: bytes, cap: int, preface: str) -> None:
    text = truncate_text(data, cap, preface=preface)
    assert len(text.encode("utf-8")) <= cap
    decoded = decode_text(data)
    if len(decoded.encode()) + len(preface.encode()) + 1 <= cap:
        assert text.endswith(decoded)
    elif decoded:
        assert "WARNING: this is not the whole output." in text


def test_a_preface_with_no_room_is_dropped() -> None:
    from weakprompt.runtime.results.extraction.truncate import _fit  # pyright: ignore[reportPrivateUsage]

    assert _fit("NOTE: long\n", 7) == ""
    assert _fit("NOTE: ok\n", 100) == "NOTE: ok\n"
    assert _fit("NOTE: €€€€€€€€\n", 12).encode().__len__() <= 12
