"""Stored outputs ride in the turn that commits their results: one transaction, events after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.clock import FakeClock
from weakprompt.events import EventBus, ToolResultStored
from weakprompt.messages import AssistantTurn
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelTurnCompleted, evaluate
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import NoParams, ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript
from weakprompt.transcript.lazy import STORED_OUTPUT_KEY


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "o.db", clock=FakeClock()) as opened:
        yield opened


def stored_ids(store: Store, session_id: str) -> list[str]:
    return [r.tool_call_id for r in ToolOutputStore(store, session_id).list_results()]


def committed_ids(store: Store, session_id: str) -> list[str]:
    return [c.content.tool_call_id or "" for c in Transcript(store, session_id).log() if c.role == "tool"]


def test_a_staged_output_is_written_by_the_turn_and_announced_after_it(store: Store) -> None:
    dispatcher = EventBus()
    seen: list[tuple[str, list[str], list[str]]] = []

    def on_stored(event: ToolResultStored) -> None:  # what another reader finds when the event arrives
        seen.append((event.tool_call_id, stored_ids(store, "s"), committed_ids(store, "s")))

    dispatcher.subscribe(ToolResultStored, on_stored)
    outputs = ToolOutputStore(store, "s", dispatcher=dispatcher)
    transcript = Transcript(store, "s")
    references = []
    with transcript.turn() as turn:
        prepared = outputs.prepare("c1", "fetch", '{"u": 1}', "body")
        staged = outputs.stage(turn, prepared, on_stored=references.append)
        transcript.tool_result("c1", "fetch", "body")
        assert stored_ids(store, "s") == [] and staged.reference is None and seen == []
    assert seen == [("c1", ["c1"], ["c1"])]
    assert staged.reference is not None and references == [staged.reference]
    assert (staged.reference.seq, staged.reference.deduplicated) == (0, False)
    assert staged.reference == outputs.get_metadata("c1")


def test_a_turn_that_is_not_stored_stores_no_output(store: Store) -> None:
    dispatcher = EventBus()
    events: list[ToolResultStored] = []
    dispatcher.subscribe(ToolResultStored, events.append)
    outputs = ToolOutputStore(store, "s", dispatcher=dispatcher)
    transcript = Transcript(store, "s")
    with pytest.raises(ValueError, match="late failure"):
        with transcript.turn() as turn:
            outputs.stage(turn, outputs.prepare("c1", "fetch", "{}", "body"))
            transcript.tool_result("c1", "fetch", "body")
            raise ValueError("late failure")
    assert (stored_ids(store, "s"), committed_ids(store, "s"), events) == ([], [], [])


def test_deduplication_inside_a_turn_and_against_earlier_rows(store: Store) -> None:
    outputs = ToolOutputStore(store, "s")
    earlier = outputs.store_result("c0", "fetch", "{}", "same bytes")
    transcript = Transcript(store, "s")
    with transcript.turn() as turn:
        again = outputs.stage(turn, outputs.prepare("c0", "fetch", "{}", "same bytes", oversized=True))
        first = outputs.stage(turn, outputs.prepare("c1", "fetch", "{}", "new bytes"))
        repeat = outputs.stage(turn, outputs.prepare("c1", "fetch", "{}", "new bytes"))
        copy = outputs.stage(turn, outputs.prepare("c2", "fetch", "{}", "same bytes"))
    assert again.reference is not None and first.reference is not None
    assert repeat.reference is not None and copy.reference is not None
    # the same call with the same output: nothing new, the stored row (its flag raised) comes back
    assert (again.reference.seq, again.reference.deduplicated, again.reference.oversized) == (0, True, True)
    assert (first.reference.seq, first.reference.deduplicated) == (1, False)
    # staged twice in one turn: the second finds the first, written earlier in the same transaction
    assert (repeat.reference.seq, repeat.reference.deduplicated) == (1, True)
    # another call, known bytes: a new row, the payload not written again
    assert (copy.reference.seq, copy.reference.deduplicated, copy.reference.handle) == (
        2,
        True,
        earlier.handle,
    )
    assert [r.seq for r in outputs.list_results()] == [0, 1, 2]
    assert outputs.get_metadata("c0") == attrs.evolve(earlier, oversized=True)


def test_a_large_payload_staged_with_a_turn_is_compressed_once(store: Store) -> None:
    outputs = ToolOutputStore(store, "s")
    big = "x" * 100_000  # over the size compressed without looking for a copy first
    transcript = Transcript(store, "s")
    with transcript.turn() as turn:
        staged = outputs.stage(turn, outputs.prepare("c1", "fetch", "{}", big))
        assert staged.prepared.encoded is not None  # encoded before the turn's transaction
    with transcript.turn() as turn:
        known = outputs.stage(turn, outputs.prepare("c2", "fetch", "{}", big))
        assert known.prepared.encoded is None  # stored already: not encoded again
    result = outputs.get_result("c2")
    assert result is not None and result.text == big
    assert known.reference is not None and known.reference.deduplicated


# -- in the loop --------------------------------------------------------------------------------


@tool(name="fetch", description="Fetch something.")
def fetch(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="fetched " + "y" * 20_000)  # over the 12 KB cap: shown by handle


PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="tests/outputs",
        key="turn",
        sections=[MarkdownSection(title="T", key="t", template="Fetch.", tools=[fetch])],
    )
)


def test_the_loops_events_arrive_after_the_turn_is_stored_in_order(store: Store) -> None:
    session = Session()
    order: list[str] = []

    def check(event: object) -> None:  # what a fresh reader of the store sees as each event arrives
        name = type(event).__name__
        commits = committed_ids(store, session.session_id)
        order.append(f"{name} {stored_ids(store, session.session_id)} {commits}")

    for kind in (ModelTurnCompleted, ToolResultStored):
        session.bus.subscribe(kind, check)
    script = [
        AssistantTurn(tool_calls=(tool_call("fetch", {}, id="a"), tool_call("fetch", {}, id="b"))),
        text_turn("done"),
    ]
    evaluate(PROMPT, adapter=ScriptedAdapter(script), session=session, input="go", store=store)
    assert order == [  # one storage event per result: its commit and its stored output together
        "ModelTurnCompleted ['a', 'b'] ['a', 'b']",
        "ToolResultStored ['a', 'b'] ['a', 'b']",
        "ToolResultStored ['a', 'b'] ['a', 'b']",
        "ModelTurnCompleted ['a', 'b'] ['a', 'b']",
    ]


def test_every_result_commit_refers_to_its_stored_output(store: Store) -> None:
    session = Session()
    script = [tool_call_turn(tool_call("fetch", {}, id="a")), text_turn("done")]
    evaluate(PROMPT, adapter=ScriptedAdapter(script), session=session, input="go", store=store)
    (result,) = [c for c in Transcript(store, session.session_id).log() if c.role == "tool"]
    reference = result.metadata[STORED_OUTPUT_KEY]
    stored = ToolOutputStore(store, session.session_id).get_metadata("a")
    assert isinstance(reference, dict) and stored is not None
    assert (reference["handle"], reference["oversized"]) == (stored.handle, True)
    assert result.content.content.startswith("Tool output is too large")


def test_events_of_a_moved_turn_name_the_stored_commits(store: Store) -> None:
    session = Session()
    events: list[ModelTurnCompleted | ToolResultStored] = []
    session.bus.subscribe(ModelTurnCompleted, events.append)
    session.bus.subscribe(ToolResultStored, events.append)

    @tool(name="fetch", description="Fetch, while another writer appends to the session.")
    def meddle(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        Transcript(store, session.session_id).user("from elsewhere")
        return ToolResult(message="ok")

    prompt: Prompt[None] = Prompt(
        PromptTemplate(
            ns="tests/outputs",
            key="moved",
            sections=[MarkdownSection(title="T", key="t", template="Fetch.", tools=[meddle])],
        )
    )
    script = [tool_call_turn(tool_call("fetch", {}, id="a")), text_turn("done")]
    evaluate(prompt, adapter=ScriptedAdapter(script), session=session, input="go", store=store)
    log = {c.hash for c in Transcript(store, session.session_id).log()}
    assert [type(e).__name__ for e in events] == [
        "ModelTurnCompleted",
        "ToolResultStored",
        "ModelTurnCompleted",
    ]
    assert all(e.commit_hash in log for e in events)


def test_a_kept_raw_original_is_stored_with_the_turn_or_not_at_all(store: Store) -> None:
    from weakprompt.errors import TranscriptError
    from weakprompt.runtime.results import ToolResultPipeline
    from weakprompt.transcript.originals import load_message_blob
    from weakprompt.transcript.provenance import REDACTED_FROM

    outputs = ToolOutputStore(store, "s")
    pipeline = ToolResultPipeline(
        outputs, redact=lambda text: text.replace("secret", "[gone]"), keep_raw_original=True
    )
    transcript = Transcript(store, "s")
    call = tool_call("fetch", {}, id="c1")
    with pytest.raises(RuntimeError):
        with transcript.turn() as turn:
            dropped = pipeline.process(call, "a secret", turn=turn)
            raise RuntimeError("the turn fails")
    with pytest.raises(TranscriptError, match="no stored blob"):
        load_message_blob(store, str(dropped.metadata[REDACTED_FROM]))
    with transcript.turn() as turn:
        kept = pipeline.process(call, "a secret", turn=turn)
        transcript.tool_result(call.id, call.name, kept.content, metadata=kept.metadata)
    assert load_message_blob(store, str(kept.metadata[REDACTED_FROM])).content == "a secret"
    assert stored_ids(store, "s") == ["c1"]


def test_without_a_turn_the_pipeline_stores_at_once_and_says_so(store: Store) -> None:
    from weakprompt.runtime.results import ToolResultPipeline

    outputs = ToolOutputStore(store, "s")
    told = []
    processed = ToolResultPipeline(outputs).process(
        tool_call("fetch", {}, id="c1"), "body", on_stored=told.append
    )
    assert processed.reference is not None and processed.staged is None and processed.stored
    assert told == [processed.reference] and stored_ids(store, "s") == ["c1"]
    found = outputs.get_result("c1")
    assert found is not None and found.handle == processed.reference.handle


def test_retention_evaluation_keeps_a_row_an_earlier_evaluation_stored(store: Store) -> None:
    """The same call with the same output again finds the earlier row; discarding it would lose it."""
    session = Session()
    script = [tool_call_turn(tool_call("fetch", {}, id="same")), text_turn("done")]
    evaluate(PROMPT, adapter=ScriptedAdapter(script), session=session, input="one", store=store)
    again = [tool_call_turn(tool_call("fetch", {}, id="same")), text_turn("done")]
    stored: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultStored, stored.append)
    evaluate(
        PROMPT,
        adapter=ScriptedAdapter(again),
        session=session,
        input="two",
        store=store,
        retention="evaluation",
    )
    assert [e.deduplicated for e in stored] == [True]
    assert stored_ids(store, session.session_id) == ["same"]
