"""The tool-result pipeline runs in one order: redact, then the hook, then the size policy, then stage.

Through the real loop into a real SQLite store: a tool returns text with
secrets in it, a ``tool_result`` hook does something random with what it
sees, and the size policy records every text it measures. The secret must
reach neither the hook nor any stored byte, the hook sees the redacted
text, the size policy sees the hook's output, and what is staged (stored
and committed) is what the model reads next.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hooks_support import start_call
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import TranscriptError
from weakprompt.jsontypes import JSONObject
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import Redactor, evaluate
from weakprompt.runtime.results import (
    OversizeReason,
    SizePolicy,
    ToolOutputSettings,
    ToolOutputStore,
    ToolResultPipeline,
    handle_text,
    output_stats,
)
from weakprompt.runtime.results.extraction import DocumentStats
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import NoParams, ToolContext, ToolResult, tool
from weakprompt.transcript import PendingToolResult, Transcript

SESSION = "order"
CAP = 1024
SECRET = re.compile(r"SECRET-[A-Z]{8}")

Action = Literal["no hook", "approve", "shorten", "grow", "reject"]


@attrs.frozen(kw_only=True)
class RecordingPolicy(SizePolicy):
    """The default size policy, noting the size of every text it is asked about."""

    seen: list[int] = attrs.field(factory=list[int], eq=False)

    def oversize_reason(self, stats: DocumentStats, remaining_tokens: int | None) -> OversizeReason | None:
        self.seen.append(stats.size_bytes)
        return SizePolicy.oversize_reason(self, stats, remaining_tokens)


def redact(text: str) -> str:
    return SECRET.sub("[gone]", text)


@dataclass
class Hook:
    """A ``tool_result`` hook doing ``action``; it keeps what it saw and what it left."""

    action: Action
    times: int = 1
    seen: list[tuple[str, JSONObject]] = field(default_factory=list[tuple[str, JSONObject]])
    left: str | None = None

    def __call__(self, pending: PendingToolResult) -> None:
        self.seen.append((pending.content, dict(pending.metadata)))
        if self.action == "shorten":
            pending.edit_result(pending.content[: max(1, len(pending.content) // (self.times + 1))])
        elif self.action == "grow":
            pending.edit_result(pending.content * (self.times + 1))
        elif self.action == "reject":
            pending.reject("not for the model")
            return
        self.left = pending.content


def prompt(text: str) -> Prompt[None]:
    @tool(name="fetch", description="Fetch the text.")
    def fetch(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message=text)

    return Prompt(
        PromptTemplate(
            ns="tests/order",
            key="order",
            name="order",
            sections=[MarkdownSection(title="T", key="t", template="Fetch.", tools=[fetch])],
        )
    )


def stored_cells(store: Store) -> Iterator[bytes]:
    """Every cell of every table, inflated where it is compressed."""
    with store.read() as conn:
        tables = [row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in conn.exec_driver_sql(f'SELECT * FROM "{table}"'):  # names from sqlite_master
                for cell in row:
                    if isinstance(cell, bytes):
                        yield cell
                        try:
                            yield zlib.decompress(cell)
                        except zlib.error:
                            pass
                    elif isinstance(cell, str):
                        yield cell.encode()


@attrs.frozen
class Run:
    hook: Hook
    policy: RecordingPolicy
    shown: str  # the tool message of the model's next request
    store: Store


@contextmanager
def run(text: str, hook: Hook) -> Iterator[Run]:
    policy = RecordingPolicy(max_bytes=CAP)
    adapter = ScriptedAdapter([tool_call_turn(tool_call("fetch", id="c1")), "done"])
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, SESSION)
        if hook.action != "no hook":
            transcript.on("tool_result", hook)
        evaluate(
            prompt(text),
            adapter=adapter,
            session=Session(session_id=SESSION),
            transcript=transcript,
            redact=redact,
            tool_outputs=ToolOutputSettings(policy=policy),
        )
        shown = adapter.requests[-1].context.messages[-1]
        assert shown.role == "tool" and shown.tool_call_id == "c1"
        yield Run(hook, policy, shown.content, store)


secrets = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=8, max_size=8).map(lambda s: f"SECRET-{s}")
fillers = st.text(alphabet="abcdefghij klmnop\n0123456789", max_size=300)
texts = st.lists(st.one_of(secrets, fillers, fillers.map(lambda s: s * 10)), min_size=1, max_size=12).map(
    " ".join
)
hooks = st.builds(
    Hook,
    action=st.sampled_from(["no hook", "approve", "shorten", "grow", "reject"]),
    times=st.integers(min_value=1, max_value=6),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=texts, hook=hooks)
def test_pipeline_runs_redact_then_hook_then_size_policy_then_stage(text: str, hook: Hook) -> None:
    with run(text, hook) as done:
        stored = ToolOutputStore(done.store, SESSION).get_result("c1")
        cells = [cell.decode("utf-8", "replace") for cell in stored_cells(done.store)]
    # redact first: the hook sees the redacted text, and no secret reaches it or the store
    if hook.action != "no hook":
        [(seen, metadata)] = hook.seen
        assert seen == redact(text)
        assert not SECRET.search(seen) and not SECRET.search(repr(metadata))
    assert not any(SECRET.search(cell) for cell in cells)
    if hook.action == "reject":  # nothing of a rejected result is stored; the model reads why
        assert stored is None
        assert done.shown == "The result of this fetch call was withheld: not for the model."
        return
    approved = redact(text) if hook.left is None else hook.left
    # then the size policy, on what the hook approved
    assert done.policy.seen[-1] == len(approved.encode())
    # then stage: the stored output is the hook's output, and the model reads it or its handle
    assert stored is not None and stored.text == approved
    assert stored.metadata.oversized == (len(approved.encode()) > CAP)
    handle = handle_text(stored.handle, output_stats(stored.metadata))
    assert done.shown == (handle if stored.metadata.oversized else approved)


# -- named regressions of the old order (the output was stored, and shown, before the hook ran) ------


BIG = "".join(f"row {i:05d} ok\n" for i in range(200))  # over CAP


def test_a_rejected_result_never_reaches_the_output_store() -> None:
    with run("the answer is 42", Hook("reject")) as done:
        assert ToolOutputStore(done.store, SESSION).list_results() == []
        assert not any(b"the answer is 42" in cell for cell in stored_cells(done.store))


def test_the_output_store_keeps_what_the_hook_approved() -> None:
    with run("long text " * 20, Hook("shorten", times=1)) as done:
        stored = ToolOutputStore(done.store, SESSION).get_result("c1")
        assert stored is not None and stored.text == done.hook.left == done.shown


def test_a_hook_that_grows_a_result_past_the_cap_gets_a_handle() -> None:
    with run("x" * 600, Hook("grow", times=1)) as done:
        assert done.hook.left == "x" * 1200
        assert done.shown.startswith("Tool output is too large (1200 bytes")


def test_the_hook_sees_the_output_not_its_handle_message_and_is_told_it_is_oversized() -> None:
    with run(BIG, Hook("approve")) as done:
        [(seen, metadata)] = done.hook.seen
        assert seen == BIG
        reference = metadata["stored_output"]
        assert isinstance(reference, dict) and reference["oversized"] is True
        assert done.shown.startswith("Tool output is too large")
        stored = ToolOutputStore(done.store, SESSION).get_result("c1")
        assert stored is not None and stored.handle == reference["handle"]


def test_an_edited_results_original_is_dropped_with_its_turn() -> None:
    """The original a hook rewrote is written in the turn's transaction, not before it."""
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, SESSION)
        transcript.on("tool_result", lambda pending: pending.edit_result("short"))
        pipeline = ToolResultPipeline(ToolOutputStore(store, SESSION))
        call = ToolCall("c1", "fetch", "{}")
        start_call(transcript, call)
        blob = ""
        with pytest.raises(RuntimeError, match="the turn fails"), transcript.turn() as turn:
            processed = pipeline.commit(transcript, call, "the original text", turn=turn)
            assert processed.commit is not None and processed.content == "short"
            blob = str(processed.commit.metadata["edited_from"])
            raise RuntimeError("the turn fails")
        with pytest.raises(TranscriptError, match="no stored blob"):
            transcript.get_blob(blob)
        assert ToolOutputStore(store, SESSION).list_results() == []


# -- the pipeline on its own: the branches the loop rarely takes ------------------------------------


@contextmanager
def bare(hook: Hook, redact: Redactor | None = None) -> Iterator[tuple[Transcript, ToolResultPipeline]]:
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, SESSION)
        transcript.on("tool_result", hook)
        yield transcript, ToolResultPipeline(ToolOutputStore(store, SESSION), redact=redact)


def test_a_raising_hook_leaves_the_redacted_result_committed_and_stored() -> None:
    def broken(pending: PendingToolResult) -> None:
        raise ValueError("hook bug")

    with Store.open("sqlite://") as store:
        transcript = Transcript(store, SESSION)
        transcript.on("tool_result", broken)
        outputs = ToolOutputStore(store, SESSION)
        call = ToolCall("c1", "fetch", "{}")
        start_call(transcript, call)
        with pytest.raises(ValueError, match="hook bug"):
            ToolResultPipeline(outputs, redact=redact).commit(transcript, call, "key SECRET-ABCDEFGH")
        [result] = transcript.find_tool_results()
        assert result.content.content == "key [gone]"
        assert result.metadata["hook_error"] == "ValueError: hook bug"
        stored = outputs.get_result("c1")
        assert stored is not None and stored.text == "key [gone]"


def test_the_loops_own_text_is_hooked_but_neither_redacted_nor_stored() -> None:
    hook = Hook("approve")
    with bare(hook, redact=redact) as (transcript, pipeline):
        call = ToolCall("c1", "open_sections", "{}")
        start_call(transcript, call)
        processed = pipeline.commit(transcript, call, "opened SECRET-ABCDEFGH", framework_text=True)
        assert hook.seen == [("opened SECRET-ABCDEFGH", {})]
        assert processed.content == "opened SECRET-ABCDEFGH" and not processed.stored
        assert pipeline.outputs.list_results() == []


def test_a_hook_on_a_get_tool_result_reply_is_told_it_was_loaded_not_stored() -> None:
    hook = Hook("approve")
    with bare(hook) as (transcript, pipeline):
        call = ToolCall("g1", "get_tool_result", '{"tool_call_id": "c0"}')
        start_call(transcript, call)
        processed = pipeline.commit(transcript, call, "the earlier text")
        [(_, metadata)] = hook.seen
        assert metadata == {"loaded_tool_result": {"tool_call_id": "c0"}}
        assert processed.commit is not None and processed.commit.metadata["loaded_tool_result"] == {
            "tool_call_id": "c0"
        }
        assert pipeline.outputs.list_results() == []
