"""Valid by construction: every request a compacting run sends pairs its calls and fits the window.

Hypothesis writes sessions (several runs on one session, parallel calls,
reasoning parts, large and small results, edits of stored results between
runs, failing summarizers) and checks each compiled request: pairing and
order here, then encoded for every SDK adapter (Chat Completions, Responses,
Anthropic, Gemini), where it must pass that provider's ``request_rules``
validator and the official SDK's request types. The default run is short;
``WEAKPROMPT_COMPACTION_EXAMPLES`` (the benchmark sets 10,000) makes it long.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction_support import LongSession, make_lookup, request_problems, summarizer
from request_rules_support import check_sdk_shapes, sdk_adapters
from weakprompt import Agent, CompactionSettings
from weakprompt.adapters.testing import FunctionAdapter, estimate_usage, text_turn, tool_call
from weakprompt.errors import ContextWindowExceededError, InvalidRequestError
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.parts import ReasoningPart, TextPart
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.transcript import Transcript

EXAMPLES = int(os.environ.get("WEAKPROMPT_COMPACTION_EXAMPLES", "20"))
ADAPTERS = sdk_adapters()

Issuer = Literal["function", "anthropic", "openai", "gemini"]


def _reasoning_part(issuer: Issuer, call_id: str) -> ReasoningPart:
    """Reasoning as each provider returns it (the run's own model, or one a fallback switched from)."""
    if issuer == "anthropic":
        return ReasoningPart(text="thinking", issuer="anthropic:claude-test", signature="sig")
    if issuer == "openai":
        return ReasoningPart(text="", issuer="openai:o4-test", encrypted="enc", id=f"rs_{call_id}")
    if issuer == "gemini":
        return ReasoningPart(text="thinking", issuer="gemini:gemini-test", signature="c2ln", id=call_id)
    return ReasoningPart(text="thinking", issuer="function:function", signature="sig")


@dataclass(frozen=True)
class Step:
    calls: int  # parallel calls in this reply (0: a text answer ends the run)
    reasoning: bool
    size: int  # characters of each result
    issuer: Issuer = "function"  # whose reasoning the reply carries


@dataclass
class Script:
    """Replays the steps of one run; remembers which call ids came with reasoning."""

    steps: list[Step]
    reasoned: set[str]
    requests: list[ModelRequest] = field(default_factory=list[ModelRequest])
    at: int = 0

    def __call__(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        step = self.steps[self.at] if self.at < len(self.steps) else Step(0, False, 0)
        self.at += 1
        if step.calls == 0:
            return text_turn("done")
        calls = tuple(
            tool_call("lookup", {"topic": f"t{self.at}x{i}", "size": step.size}) for i in range(step.calls)
        )
        if not step.reasoning:
            return AssistantTurn(text="", tool_calls=calls)
        self.reasoned.update(c.id for c in calls)
        parts = (_reasoning_part(step.issuer, calls[0].id), TextPart("ok"))
        return AssistantTurn(text="ok", tool_calls=calls, parts=parts)


steps = st.lists(
    st.builds(
        Step,
        calls=st.integers(1, 3),
        reasoning=st.booleans(),
        size=st.sampled_from([40, 400, 1600, 3000]),
        issuer=st.sampled_from(["function", "anthropic", "openai", "gemini"]),
    ),
    max_size=14,
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(steps, min_size=1, max_size=3),
    window=st.sampled_from([4096, 6144, 8192]),
    keep=st.integers(1, 4),
    threshold=st.sampled_from([0.6, 0.8, 0.9]),
    summarize=st.sampled_from(["ok", "broken", "off"]),
    edit=st.booleans(),
)
def test_every_compacted_request_is_valid_for_every_sdk_and_fits(
    runs: list[list[Step]], window: int, keep: int, threshold: float, summarize: str, edit: bool
) -> None:
    def broken(_request: ModelRequest) -> str:
        raise RuntimeError("down")

    compaction = CompactionSettings(
        context_window=window,
        threshold=threshold,
        target=threshold / 2,
        keep_recent_turns=keep,
        summarize=summarize != "off",
        summarizer=summarizer() if summarize == "ok" else FunctionAdapter(broken),
        reserve_output=512,
    )
    store = Store.open("sqlite://")
    session = Session()
    reasoned: set[str] = set()
    try:
        for index, run_steps in enumerate(runs):
            script = Script(run_steps, reasoned)
            agent = Agent(FunctionAdapter(script), instructions="Look things up.", tools=[make_lookup()])
            try:
                agent.run_sync(
                    f"task {index}", session=session, store=store, max_turns=40, compaction=compaction
                )
            except ContextWindowExceededError:
                # Only when even the last unit alone cannot fit (3 results of 3000 characters, small window).
                assert max((s.calls * s.size for s in run_steps), default=0) > window
            for request in script.requests:
                messages = request.context.messages
                assert request_problems(messages) == []
                reported = estimate_usage(request, text_turn("x"), DEFAULT_TOKEN_COUNTER).input_tokens
                assert reported + compaction.reserve_output <= window * 1.1
                for message in messages:
                    if message.role == "assistant" and any(c.id in reasoned for c in message.tool_calls):
                        assert any(p.kind == "reasoning" for p in message.parts)
                for adapter in ADAPTERS:  # the provider's validator and the SDK's request types
                    check_sdk_shapes(adapter, request)
            if edit:  # a stored result rewritten between runs (as compress_tool_calls does)
                transcript = Transcript(store, session.session_id)
                results = transcript.find_tool_results()
                if results:
                    first = results[0]
                    transcript.tool_result(
                        first.content.tool_call_id or "", first.content.name or "", "short", edit=first.hash
                    )
    finally:
        store.close()


def test_the_sdk_check_refuses_a_compacted_request_that_lost_a_tool_result() -> None:
    """The property above is not vacuous: the same check refuses a call left without its result."""
    model = LongSession(steps=30)
    settings_ = CompactionSettings(context_window=4096, summarizer=summarizer(), keep_recent_turns=2)
    agent = Agent(FunctionAdapter(model), instructions="Look things up.", tools=[make_lookup()], max_turns=40)
    with Store.open("sqlite://") as store:
        agent.run_sync("Go.", store=store, compaction=settings_)
    request = model.requests[-1]
    assert request.context.messages[1].content.startswith("[Summary of the")  # it was compacted
    for adapter in ADAPTERS:
        check_sdk_shapes(adapter, request)
    messages, hashes = request.context.messages, request.context.commit_hashes
    orphan = next(i for i, m in enumerate(messages) if m.role == "tool")
    left = attrs.evolve(
        request.context,
        messages=messages[:orphan] + messages[orphan + 1 :],
        commit_hashes=hashes[:orphan] + hashes[orphan + 1 :],
    )
    broken = attrs.evolve(request, context=left)
    for adapter in ADAPTERS:
        with pytest.raises(InvalidRequestError):
            check_sdk_shapes(adapter, broken)
