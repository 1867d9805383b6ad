"""Summaries: the summarizer call, provenance, failures, budget, usage and events."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks_support import GREP_OUTPUT, start_call, summarizer, user_text
from weakprompt.adapters.testing import estimate_usage
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.clock import FakeClock
from weakprompt.errors import AdapterError, ConfigurationError
from weakprompt.events import EventBus, ToolResultSummarized
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.runtime import ModelRequest
from weakprompt.store import Store
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.transcript import PendingToolResult, SummaryAttempt, Transcript
from weakprompt.transcript.hooks import ToolResultHooks
from weakprompt.transcript.summarize import build_summary_request_text, request_summary


@pytest.fixture
def t() -> Iterator[Transcript]:
    with Store.open("sqlite://", clock=FakeClock()) as store:
        transcript = Transcript(store, "sum")
        start_call(transcript, ToolCall("g1", "grep", "{}"))
        yield transcript


def summarize_all(t: Transcript, **kwargs: object) -> None:
    t.on("tool_result", lambda p: p.summarize(**kwargs))  # type: ignore[arg-type]


# --- provenance -----------------------------------------------------------------------------------


def test_summarized_from_resolves_to_the_original(t: Transcript) -> None:
    t.hooks.summarizer = summarizer()
    summarize_all(t)
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    original = t.get_blob(str(commit.metadata["summarized_from"]))
    assert original.content == GREP_OUTPUT
    assert (original.role, original.tool_call_id, original.name) == ("tool", "g1", "grep")
    assert commit.metadata["triggered_by"] == "hook:test_summarize_calls.summarize_all.<locals>.<lambda>"


@given(st.text(min_size=40, max_size=400))
def test_summarized_from_is_the_hash_the_plain_commit_would_have(text: str) -> None:
    with Store.open("sqlite://") as store:
        plain = Transcript(store, "plain").tool_result("c", "tool", text)
        hooked = Transcript(store, "hooked")
        hooked.hooks.summarizer = summarizer("s")
        hooked.on("tool_result", lambda p: p.summarize())
        commit = hooked.tool_result("c", "tool", text)
        assert commit.content.content == "s"
        assert commit.metadata["summarized_from"] == plain.blob_hash
        assert hooked.get_blob(plain.blob_hash).content == text


def test_get_blob_of_an_unknown_hash_fails_clearly(t: Transcript) -> None:
    from weakprompt.errors import TranscriptError

    with pytest.raises(TranscriptError, match="no stored blob 'abc'"):
        t.get_blob("abc")
    with pytest.raises(TranscriptError, match="non-empty string"):
        t.get_blob("")


# --- failures keep the original -------------------------------------------------------------------


def failing(_: ModelRequest) -> AssistantTurn:
    raise AdapterError("provider down", provider="sum")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (failing, "summarizer sum:tiny raised AdapterError: provider down"),
        ("   ", "summarizer sum:tiny returned an empty answer"),
        (GREP_OUTPUT + " and more", "was not shorter than the result"),
    ],
)
def test_summarizer_failure_commits_the_original_with_the_reason(
    t: Transcript, reply: object, reason: str
) -> None:
    t.hooks.summarizer = summarizer(reply)  # type: ignore[arg-type]
    results: list[bool] = []
    t.on("tool_result", lambda p: results.append(p.summarize()))
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert results == [False]
    assert commit.content.content == GREP_OUTPUT
    assert reason in str(commit.metadata["summarization_error"])
    assert "summarized_from" not in commit.metadata


def test_tool_calls_without_text_count_as_an_empty_answer(t: Transcript) -> None:
    reply = AssistantTurn(tool_calls=(ToolCall("x", "grep", "{}"),))
    adapter = summarizer(lambda _: reply)
    t.hooks.summarizer = adapter
    summarize_all(t)
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert commit.metadata["summarization_error"] == "summarizer sum:tiny returned an empty answer"
    # The call happened, so it is counted: the test adapter charges its estimate of the call.
    (request,) = adapter.requests
    usage = estimate_usage(request, reply, DEFAULT_TOKEN_COUNTER)
    assert usage.input_tokens > 0 and usage.output_tokens == 2  # "grep" and "{}"
    assert commit.metadata["summary_usage"] == {
        "input_tokens": usage.input_tokens,
        "output_tokens": 2,
        "cached_input_tokens": 0,
        "model_calls": 1,
    }


def test_a_later_success_clears_the_error(t: Transcript) -> None:
    replies = iter([None, "short"])

    def flaky(_: ModelRequest) -> str:
        reply = next(replies)
        if reply is None:
            raise AdapterError("once")
        return reply

    t.hooks.summarizer = summarizer(flaky)
    errors: list[str | None] = []

    def handler(p: PendingToolResult) -> None:
        while not p.summarize():
            errors.append(p.summarization_error)
        errors.append(p.summarization_error)

    t.on("tool_result", handler)
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert errors[-1] is None and len(errors) == 2
    assert commit.content.content == "short"
    assert "summarization_error" not in commit.metadata


def test_no_summarizer_is_a_configuration_error_and_the_original_is_kept(t: Transcript) -> None:
    summarize_all(t)
    with pytest.raises(ConfigurationError, match="no summarizer for tool results"):
        t.tool_result("g1", "grep", GREP_OUTPUT)
    last = t.log()[-1]
    assert last.content.content == GREP_OUTPUT
    assert str(last.metadata["hook_error"]).startswith("ConfigurationError: no summarizer")


def test_explicit_summarizer_wins(t: Transcript) -> None:
    default, chosen = summarizer("default"), summarizer("chosen", name="other")
    t.hooks.summarizer = default
    t.on("tool_result", lambda p: p.summarize(summarizer=chosen))
    assert t.tool_result("g1", "grep", GREP_OUTPUT).content.content == "chosen"
    assert default.requests == ()


def test_bad_summarizer_arguments(t: Transcript) -> None:
    with pytest.raises(ConfigurationError, match="must be a ProviderAdapter"):
        t.hooks.summarizer = "gpt"  # type: ignore[assignment]
    t.hooks.summarizer = summarizer()
    for kwargs, error, match in (
        ({"target_tokens": 0}, ValueError, "target_tokens must be a positive int"),
        ({"target_tokens": True}, ValueError, "target_tokens must be a positive int"),
        ({"instructions": 5}, ConfigurationError, "instructions must be a string"),
    ):
        summarize_all(t, **kwargs)
        with pytest.raises(error, match=match):
            t.tool_result("g1", "grep", GREP_OUTPUT)


# --- budget and usage -----------------------------------------------------------------------------


def test_summaries_are_charged_to_the_budget(t: Transcript) -> None:
    tracker = BudgetTracker(Budget(max_model_calls=10))
    t.hooks.budget_tracker = tracker
    t.hooks.summarizer = summarizer()
    usages: list[Usage] = []
    t.on("tool_result", lambda p: (p.summarize(), usages.append(p.usage)))
    t.tool_result("g1", "grep", GREP_OUTPUT)
    assert tracker.usage == Usage(input_tokens=50, output_tokens=7, model_calls=1)
    assert usages == [tracker.usage]


def test_adapter_usage_without_a_call_count_counts_one_call(t: Transcript) -> None:
    tracker = BudgetTracker(Budget())
    t.hooks.budget_tracker = tracker
    t.hooks.summarizer = summarizer(lambda _: AssistantTurn(text="s", usage=Usage(input_tokens=3)))
    summarize_all(t)
    t.tool_result("g1", "grep", GREP_OUTPUT)
    assert tracker.usage == Usage(input_tokens=3, model_calls=1)


def test_an_exhausted_budget_skips_the_call_and_keeps_the_original(t: Transcript) -> None:
    tracker = BudgetTracker(Budget(max_model_calls=1))
    tracker.record(Usage(model_calls=1))
    t.hooks.budget_tracker = tracker
    model = summarizer()
    t.hooks.summarizer = model
    summarize_all(t)
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert model.requests == ()
    assert commit.content.content == GREP_OUTPUT
    assert str(commit.metadata["summarization_error"]).startswith("not summarized: budget exhausted")
    assert "summary_usage" not in commit.metadata


def test_evaluation_binding_lends_adapter_budget_events_and_usage(t: Transcript) -> None:
    model = summarizer()
    tracker = BudgetTracker(Budget())
    dispatcher = EventBus()
    events: list[ToolResultSummarized] = []
    dispatcher.subscribe(ToolResultSummarized, events.append)
    spent: list[Usage] = []
    summarize_all(t)
    with t.hooks.evaluation(
        adapter=model, budget_tracker=tracker, dispatcher=dispatcher, on_usage=spent.append
    ):
        commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    assert len(model.requests) == 1
    assert spent == [tracker.usage] and tracker.usage.model_calls == 1
    [event] = events
    assert (event.tool_call_id, event.tool_name, event.commit_hash) == ("g1", "grep", commit.hash)
    assert event.summarized_from == commit.metadata["summarized_from"]
    assert event.error is None and event.summarizer == "sum:tiny"
    assert event.original_tokens == t.token_counter.count(GREP_OUTPUT)
    assert event.summary_tokens == commit.token_count
    assert event.created_at == commit.created_at
    assert t.hooks.current_evaluation() is None
    # outside the evaluation there is no default summarizer any more
    with pytest.raises(ConfigurationError):
        t.tool_result("g2", "grep", GREP_OUTPUT)


def test_configured_summarizer_beats_the_evaluation_adapter(t: Transcript) -> None:
    mine, evaluation = summarizer("mine"), summarizer("eval")
    t.hooks.summarizer = mine
    summarize_all(t)
    with t.hooks.evaluation(adapter=evaluation):
        assert t.tool_result("g1", "grep", GREP_OUTPUT).content.content == "mine"
    assert evaluation.requests == ()


def test_nested_evaluations_use_the_innermost(t: Transcript) -> None:
    outer, inner = summarizer("outer"), summarizer("inner")
    summarize_all(t)
    with t.hooks.evaluation(adapter=outer):
        with t.hooks.evaluation(adapter=inner):
            assert t.tool_result("a", "grep", GREP_OUTPUT).content.content == "inner"
        assert t.tool_result("b", "grep", GREP_OUTPUT).content.content == "outer"


def test_the_same_tracker_is_charged_once(t: Transcript) -> None:
    tracker = BudgetTracker(Budget())
    t.hooks.budget_tracker = tracker
    summarize_all(t)
    with t.hooks.evaluation(adapter=summarizer(), budget_tracker=tracker):
        t.tool_result("g1", "grep", GREP_OUTPUT)
    assert tracker.usage.model_calls == 1


def test_failed_summaries_publish_an_event_with_the_error(t: Transcript) -> None:
    dispatcher = EventBus()
    events: list[ToolResultSummarized] = []
    dispatcher.subscribe(ToolResultSummarized, events.append)
    t.hooks.dispatcher = dispatcher
    t.hooks.summarizer = summarizer(failing)
    summarize_all(t)
    commit = t.tool_result("g1", "grep", GREP_OUTPUT)
    [event] = events
    assert event.error is not None and "provider down" in event.error
    assert event.summary_tokens == event.original_tokens
    assert event.summarized_from == commit.blob_hash  # unchanged: the commit holds the original
    assert event.usage == Usage()


def test_a_failing_subscriber_does_not_break_the_commit(
    t: Transcript, caplog: pytest.LogCaptureFixture
) -> None:
    dispatcher = EventBus()

    def broken(_: ToolResultSummarized) -> None:
        raise RuntimeError("subscriber bug")

    dispatcher.subscribe(ToolResultSummarized, broken)
    t.hooks.dispatcher = dispatcher
    t.hooks.summarizer = summarizer()
    summarize_all(t)
    assert t.tool_result("g1", "grep", GREP_OUTPUT).content.content == "app.py:10 defines main"
    assert "subscriber bug" in caplog.text or "raised on ToolResultSummarized" in caplog.text


def test_registry_setters_validate() -> None:
    hooks = ToolResultHooks()
    with pytest.raises(ConfigurationError, match="EventBus"):
        hooks.dispatcher = object()  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match="BudgetTracker"):
        hooks.budget_tracker = object()  # type: ignore[assignment]
    with pytest.raises(ConfigurationError, match="adapter must be a ProviderAdapter"):
        with hooks.evaluation(adapter=object()):  # type: ignore[arg-type]
            pass
    hooks.dispatcher = None
    hooks.budget_tracker = None
    hooks.summarizer = None
    assert (hooks.dispatcher, hooks.budget_tracker, hooks.summarizer) == (None, None, None)


# --- the request itself ---------------------------------------------------------------------------


def test_request_text_layout() -> None:
    text = build_summary_request_text("grep", "line", instructions="  paths only ", target_tokens=None)
    assert (
        text
        == "Tool: grep\nWhat to keep: paths only\n\nOutput to shorten:\n<tool_output>\nline\n</tool_output>"
    )
    bare = build_summary_request_text("grep", "line", instructions=None, target_tokens=5)
    assert "What to keep" not in bare and "Length: at most about 5 tokens." in bare


def test_request_summary_without_target_sets_no_output_cap(t: Transcript) -> None:
    model = summarizer()
    attempt = request_summary(model, tool_name="grep", content="abc", token_counter=t.token_counter)
    assert attempt == SummaryAttempt(
        text="app.py:10 defines main",
        error=None,
        usage=Usage(input_tokens=50, output_tokens=7, model_calls=1),
        summarizer="sum:tiny",
    )
    assert attempt.ok
    assert model.requests[0].max_output_tokens is None
    assert user_text(model.requests[0]).endswith("<tool_output>\nabc\n</tool_output>")
    assert model.requests[0].context.token_count > 0


def test_large_target_caps_output_at_twice_the_goal(t: Transcript) -> None:
    model = summarizer()
    request_summary(model, tool_name="g", content="abc", target_tokens=500, token_counter=t.token_counter)
    assert model.requests[0].max_output_tokens == 1000


def test_an_empty_result_is_not_sent_to_the_summarizer(t: Transcript) -> None:
    model = summarizer()
    t.hooks.summarizer = model
    summarize_all(t)
    commit = t.tool_result("g1", "grep", " \n")
    assert model.requests == ()
    assert commit.metadata["summarization_error"] == "not summarized: the result is empty"


def test_a_bad_target_fails_even_when_no_call_would_be_made(t: Transcript) -> None:
    t.hooks.summarizer = summarizer()
    summarize_all(t, target_tokens=-3)
    with pytest.raises(ValueError, match="target_tokens must be a positive int or None, got -3"):
        t.tool_result("g1", "grep", "")
