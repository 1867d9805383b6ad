"""Previews, summaries and the size policy."""

from __future__ import annotations

import pytest

from weakprompt.errors import ConfigurationError
from weakprompt.runtime.results import (
    DEFAULT_MAX_BYTES,
    PREVIEW_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    SizePolicy,
    SummaryInput,
    SummaryRegistry,
    default_summary,
    handle_text,
    make_preview,
    register_summary,
)
from weakprompt.runtime.results.extraction import DocumentStats
from weakprompt.runtime.results.preview import EMPTY_PREVIEW, safe_text
from weakprompt.runtime.results.summaries import DEFAULT_SUMMARIES


def test_short_output_is_its_own_preview() -> None:
    assert make_preview(b"one\ntwo\n") == "one\ntwo"


def test_long_output_is_cut_at_a_line_boundary_with_the_count_of_hidden_lines() -> None:
    lines = [f"line number {i:03d}" for i in range(100)]
    preview = make_preview("\n".join(lines).encode())
    assert len(preview) <= PREVIEW_MAX_CHARS
    body, marker = preview.rsplit("\n", 1)
    shown = body.split("\n")
    assert shown == lines[: len(shown)]
    assert marker == f"... ({100 - len(shown)} more lines)"
    # As many whole lines as fit: one more would not.
    with_one_more = "\n".join(lines[: len(shown) + 1]) + f"\n... ({100 - len(shown) - 1} more lines)"
    assert len(with_one_more) > PREVIEW_MAX_CHARS


def test_a_single_huge_line_is_cut_inside_the_line() -> None:
    preview = make_preview(b'{"k": "' + b"v" * 5000 + b'"}')
    assert len(preview) <= PREVIEW_MAX_CHARS
    assert preview.startswith('{"k": "vvv')
    assert preview.endswith("\n... (1 more lines)")


def test_error_previews_start_with_error() -> None:
    assert make_preview(b"boom", is_error=True) == "Error: boom"
    long_error = make_preview(("x" * 80 + "\n").encode() * 20, is_error=True)
    assert long_error.startswith("Error: xxx") and len(long_error) <= PREVIEW_MAX_CHARS


def test_empty_output_preview() -> None:
    assert make_preview(b"") == EMPTY_PREVIEW
    assert make_preview(b"", is_error=True) == "Error: " + EMPTY_PREVIEW


def test_crlf_and_control_characters() -> None:
    assert make_preview(b"a\r\nb\r\n") == "a\nb"
    assert safe_text(b"tab\there\x07bell\x00") == "tab\there\ufffdbell\ufffd"
    assert safe_text("zwj\u200d nbsp\xa0 emoji \U0001f600".encode()) == "zwj\u200d nbsp\xa0 emoji \U0001f600"
    assert safe_text(b"\xff") == "\ufffd"


def test_preview_needs_room() -> None:
    with pytest.raises(ValueError, match="at least 40"):
        make_preview(b"x", max_chars=10)


def _item(tool: str = "t", *, is_error: bool = False) -> SummaryInput:
    return SummaryInput(
        tool_name=tool, arguments="{}", data=b"a\nb\n", size_bytes=4, lines=2, tokens=1, is_error=is_error
    )


def test_default_summary_is_one_line_with_lines_and_bytes() -> None:
    assert default_summary(_item("grep")) == "grep: 2 lines, 4 bytes"
    assert default_summary(_item("grep", is_error=True)) == "grep failed: 2 lines, 4 bytes"
    assert _item().text == "a\nb\n"
    assert "4 bytes" in repr(_item())


def test_registry_flattens_caps_and_falls_back() -> None:
    registry = SummaryRegistry()
    registry.register("t", lambda item: "first line\nsecond   line")
    assert registry.summarize(_item()) == "first line second line"
    registry.register("t", lambda item: "w" * 1000)
    summary = registry.summarize(_item())
    assert len(summary) == SUMMARY_MAX_CHARS and summary.endswith("...")
    registry.register("t", lambda item: "   ")
    assert registry.summarize(_item()) == "t: 2 lines, 4 bytes"
    registry.register("t", lambda item: None)  # type: ignore[arg-type, return-value]
    assert registry.summarize(_item()) == "t: 2 lines, 4 bytes"
    registry.unregister("t")
    registry.unregister("never registered")
    assert registry.function_for("t") is None


def test_registry_rejects_bad_registrations() -> None:
    registry = SummaryRegistry()
    with pytest.raises(ConfigurationError, match="tool_name"):
        registry.register("", lambda item: "x")
    with pytest.raises(ConfigurationError, match="not callable"):
        registry.register("t", "not a function")  # type: ignore[arg-type]


def test_register_summary_uses_the_default_registry() -> None:
    register_summary("test_outputs_preview_tool", lambda item: "custom")
    try:
        assert DEFAULT_SUMMARIES.summarize(_item("test_outputs_preview_tool")) == "custom"
    finally:
        DEFAULT_SUMMARIES.unregister("test_outputs_preview_tool")


def _stats(size: int, tokens: int = 1) -> DocumentStats:
    return DocumentStats(size_bytes=size, lines=1, tokens=tokens)


def test_size_policy_bytes_and_token_budget() -> None:
    policy = SizePolicy()
    assert policy.max_bytes == DEFAULT_MAX_BYTES == 12288
    assert policy.oversize_reason(_stats(12288), None) is None
    assert policy.oversize_reason(_stats(12289), None) == "max_bytes"
    assert policy.oversize_reason(_stats(100, tokens=50), 49) == "token_budget"
    assert policy.oversize_reason(_stats(100, tokens=50), 50) is None
    assert not SizePolicy(use_token_budget=False).is_oversized(_stats(100, tokens=50), 0)
    assert policy.is_oversized(_stats(100, tokens=1), 0)


@pytest.mark.parametrize("value", [0, 1023, True, 1.5, "big"])
def test_size_policy_rejects_bad_caps(value: object) -> None:
    with pytest.raises(ConfigurationError, match="max_bytes must be an int >= 1024"):
        SizePolicy(max_bytes=value)  # type: ignore[arg-type]


def test_handle_text_is_the_extraction_handle_message() -> None:
    text = handle_text("abc-123", DocumentStats(size_bytes=123456, lines=789, tokens=45678))
    assert text == (
        "Tool output is too large (123456 bytes, 789 lines, 45678 tokens).\n"
        'Call tool_output(handle = "abc-123", extract = "what to extract").\n'
        "Provide precise and detailed instructions in `extract` about what you are looking for."
    )
