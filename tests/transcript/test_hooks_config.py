"""Seed-000 phase 4: configure_tool_summarization()."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks_support import GREP_OUTPUT, READ_OUTPUT, start_call, summarizer, user_text
from weakprompt.adapters.testing import FunctionAdapter
from weakprompt.clock import FakeClock
from weakprompt.errors import ConfigurationError
from weakprompt.messages import ToolCall
from weakprompt.store import Store
from weakprompt.transcript import (
    PendingToolResult,
    ToolSummarizationConfig,
    ToolSummarizationHook,
    Transcript,
    shaped_by_output_pipeline,
)


@pytest.fixture
def t() -> Iterator[Transcript]:
    with Store.open("sqlite://", clock=FakeClock()) as store:
        transcript = Transcript(store, "config")
        start_call(transcript, ToolCall("g1", "grep", "{}"), ToolCall("r1", "read", "{}"))
        yield transcript


@pytest.fixture
def model() -> FunctionAdapter:
    return summarizer("SUMMARY")


def test_config_per_tool_instructions(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(instructions={"grep": "only file:line pairs"}, summarizer=model)
    grep = t.tool_result("g1", "grep", GREP_OUTPUT)
    read = t.tool_result("r1", "read", READ_OUTPUT * 40)
    assert grep.content.content == "SUMMARY"
    assert grep.metadata["triggered_by"] == "tool_summarization:instructions"
    assert read.content.content == READ_OUTPUT * 40  # no instructions, no threshold: untouched
    [request] = model.requests
    assert "What to keep: only file:line pairs" in user_text(request)


def test_per_tool_instructions_apply_even_to_small_results(t: Transcript) -> None:
    model = summarizer("x")
    t.configure_tool_summarization(instructions={"grep": "paths"}, auto_threshold=10_000, summarizer=model)
    assert t.tool_result("g1", "grep", "src/app.py:10 def main(): pass").content.content == "x"


def test_config_auto_threshold(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(auto_threshold=100, summarizer=model)
    commit = t.tool_result("r1", "read", READ_OUTPUT * 40)
    assert commit.content.content == "SUMMARY"
    assert commit.metadata["triggered_by"] == "tool_summarization:auto_threshold"
    assert "What to keep" not in user_text(model.requests[0])


def test_config_under_threshold_passthrough(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(auto_threshold=100, summarizer=model)
    commit = t.tool_result("r1", "read", READ_OUTPUT)
    assert commit.content.content == READ_OUTPUT
    assert model.requests == ()
    assert (
        commit.metadata["triggered_by"]
        == "hook:weakprompt.transcript.summarization_config.ToolSummarizationHook"
    )


@given(size=st.integers(min_value=0, max_value=300), threshold=st.integers(min_value=0, max_value=300))
def test_threshold_boundary_is_strictly_greater(size: int, threshold: int) -> None:
    with Store.open("sqlite://") as store:
        t = Transcript(store, "b")
        model = summarizer("s")
        t.configure_tool_summarization(auto_threshold=threshold, summarizer=model)
        text = "abcd" * size  # exactly `size` tokens with the 4-bytes-per-token estimate
        commit = t.tool_result("c", "tool", text)
        summarized = size > threshold and size > 1  # a 1-token result cannot get shorter
        assert (commit.content.content == "s") is summarized
        assert len(model.requests) == (1 if size > threshold else 0)


def test_config_default_instructions(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(
        instructions={"grep": "grep rule"},
        auto_threshold=50,
        default_instructions="keep definitions",
        summarizer=model,
    )
    t.tool_result("r1", "read", READ_OUTPUT * 40)
    t.tool_result("g1", "grep", GREP_OUTPUT)
    texts = [user_text(r) for r in model.requests]
    assert "What to keep: keep definitions" in texts[0] and "Tool: read" in texts[0]
    assert "What to keep: grep rule" in texts[1]


def test_config_override_with_custom_handler(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(auto_threshold=1, summarizer=model)

    def custom(p: PendingToolResult) -> None:
        p.edit_result("custom")

    t.on("tool_result", custom)
    assert t.tool_result("g1", "grep", GREP_OUTPUT).content.content == "custom"
    assert model.requests == ()
    t.off("tool_result")
    assert t.tool_result("r1", "read", GREP_OUTPUT).content.content == GREP_OUTPUT


def test_configuring_again_replaces_the_config(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(instructions={"grep": "a"}, summarizer=model)
    config = t.configure_tool_summarization(instructions={"read": "b"}, summarizer=model)
    handler = t.hooks.handler("tool_result")
    assert isinstance(handler, ToolSummarizationHook)
    assert handler.config is config and handler.summarizer is model
    assert "ToolSummarizationHook(ToolSummarizationConfig(" in repr(handler)
    assert t.tool_result("g1", "grep", GREP_OUTPUT).content.content == GREP_OUTPUT


def test_failed_calls_are_not_summarized_unless_asked(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(instructions={"grep": "a"}, summarizer=model)
    error = "Error: " + GREP_OUTPUT
    assert t.tool_result("g1", "grep", error, is_error=True).content.content == error
    assert model.requests == ()
    t.configure_tool_summarization(instructions={"grep": "a"}, summarizer=model, summarize_errors=True)
    assert t.tool_result("g1", "grep", error, is_error=True).content.content == "SUMMARY"


def test_target_tokens_reaches_the_summarizer(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(auto_threshold=0, target_tokens=40, summarizer=model)
    t.tool_result("g1", "grep", GREP_OUTPUT)
    assert "about 40 tokens" in user_text(model.requests[0])
    assert model.requests[0].max_output_tokens == 80


def test_without_summarizer_the_transcript_default_is_used(t: Transcript, model: FunctionAdapter) -> None:
    t.hooks.summarizer = model
    t.configure_tool_summarization(auto_threshold=0)
    assert t.tool_result("g1", "grep", GREP_OUTPUT).content.content == "SUMMARY"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"instructions": ["grep"]}, "instructions must map tool names to text"),
        ({"instructions": {"": "x"}}, "tool names must be non-empty strings"),
        ({"instructions": {"grep": " "}}, r"instructions\['grep'\] must be non-empty text"),
        ({"auto_threshold": -1}, "auto_threshold must be an int >= 0"),
        ({"auto_threshold": 2.5}, "auto_threshold must be an int >= 0"),
        ({"auto_threshold": True}, "auto_threshold must be an int >= 0"),
        ({"target_tokens": 0}, "target_tokens must be an int >= 1"),
        ({"default_instructions": "x"}, "default_instructions only guide results over auto_threshold"),
        ({"default_instructions": "", "auto_threshold": 3}, "default_instructions must be non-empty text"),
        ({"summarize_errors": "yes"}, "summarize_errors must be a bool"),
    ],
)
def test_bad_config_fails_clearly(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        ToolSummarizationConfig(**kwargs)  # type: ignore[arg-type]


def test_bad_summarizer_is_refused(t: Transcript) -> None:
    with pytest.raises(ConfigurationError, match="summarizer must be a ProviderAdapter"):
        t.configure_tool_summarization(auto_threshold=1, summarizer="model")  # type: ignore[arg-type]
    assert t.hooks.handler("tool_result") is None


def test_config_instructions_are_read_only() -> None:
    source = {"grep": "a"}
    config = ToolSummarizationConfig(instructions=source)
    source["read"] = "b"
    assert dict(config.instructions) == {"grep": "a"}
    with pytest.raises(TypeError):
        config.instructions["x"] = "y"  # type: ignore[index]
    assert ToolSummarizationConfig().instructions_for("grep", 10**6) is None
    assert ToolSummarizationConfig(instructions=None).instructions == {}  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "metadata"),
    [
        ("grep", {"stored_output": {"oversized": True, "handle": "h"}}),
        ("get_tool_result", {"loaded_tool_result": {"tool_call_id": "g0"}}),
        ("tool_output", {}),
    ],
)
def test_results_shaped_by_the_output_pipeline_are_kept(
    t: Transcript, model: FunctionAdapter, name: str, metadata: dict[str, object]
) -> None:
    t.configure_tool_summarization(instructions={name: "shorten"}, auto_threshold=0, summarizer=model)
    commit = t.tool_result("g1", name, GREP_OUTPUT, metadata=metadata)  # type: ignore[arg-type]
    assert commit.content.content == GREP_OUTPUT
    assert model.requests == ()
    assert shaped_by_output_pipeline(name, commit.metadata) is not None


def test_inline_stored_results_may_be_summarized(t: Transcript, model: FunctionAdapter) -> None:
    t.configure_tool_summarization(auto_threshold=0, summarizer=model)
    stored = {"stored_output": {"oversized": False, "handle": "h"}}
    commit = t.tool_result("g1", "grep", GREP_OUTPUT, metadata=stored)  # type: ignore[arg-type]
    assert commit.content.content == "SUMMARY"
    assert commit.metadata["stored_output"] == stored["stored_output"]
    assert shaped_by_output_pipeline("grep", stored) is None  # type: ignore[arg-type]
