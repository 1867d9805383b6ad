"""The parts of approval and resume one at a time: persisted session state, stored rows, refusals."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from approval_support import Deleted, adapter_after_pause, make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.canonical import canonical_json
from weakprompt.errors import VisibilityExpansionRequired
from weakprompt.messages import ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import (
    Approve,
    Deny,
    PausedRun,
    ResumeError,
    Supply,
    ToolCallPending,
    ToolDispatcher,
    evaluate,
    paused_run,
    paused_runs,
    resume_sync,
)
from weakprompt.runtime.approval import decisions_from_json, decisions_to_json, pending_from_json
from weakprompt.runtime.pausing import publish_decisions_for
from weakprompt.runtime.resumption import AnswerStep, RunContext, RunStep
from weakprompt.session import PersistedState, Session, SessionStateError, persist_state, restore_state
from weakprompt.store import Store, pause_rows
from weakprompt.tools import CallDeferred, ToolContext, ToolResult, needs_approval, tool
from weakprompt.transcript import Transcript


@dataclass(frozen=True)
class Lossy:
    """Dumps to something that does not parse back equal: a set-like tuple field given a list."""

    items: tuple[int, ...]

    def __eq__(self, other: object) -> bool:
        return False

    __hash__ = object.__hash__


def test_persisted_state_round_trips_and_names_what_it_cannot_store() -> None:
    class Local:
        pass

    session = Session(session_id="p")
    session[Deleted].append(Deleted("a"))
    session[Local].append(Local())
    session[Lossy].append(Lossy((1,)))
    state = persist_state(session)
    assert list(state.slices) == ["approval_support:Deleted"]
    assert set(state.unpersisted) == {f"{__name__}:Lossy", next(n for n in state.unpersisted if "Local" in n)}
    again = PersistedState.from_json(state.to_json())
    fresh = Session(session_id="p")
    restore_state(fresh, again)
    assert fresh[Deleted].all() == (Deleted("a"),)


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "not an object"),
        ({"slices": {}, "unpersisted": []}, "unpersisted"),
    ],
)
def test_damaged_persisted_state_is_refused(data: object, problem: str) -> None:
    with pytest.raises(SessionStateError, match=problem):
        PersistedState.from_json(data)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("slices", "problem"),
    [
        ({"no_such_module_here:Thing": []}, "cannot be restored"),
        ({"approval_support:make_prompt": []}, "cannot be restored"),
        ({"approval_support:Deleted": {"path": "x"}}, "not a list"),
        ({"approval_support:Deleted": [{"nope": 1}]}, "no longer parses"),
    ],
)
def test_restoring_refuses_what_no_longer_reads_back(slices: dict[str, object], problem: str) -> None:
    session = Session(session_id="p")
    session[Deleted].append(Deleted("kept"))
    with pytest.raises(SessionStateError, match=problem):
        restore_state(session, PersistedState(slices=slices, unpersisted={}))  # pyright: ignore[reportArgumentType]
    assert session[Deleted].all() == (Deleted("kept"),)


def test_a_policy_predicate_that_raises_asks_for_approval() -> None:
    def broken(params: object, context: ToolContext) -> bool:
        raise RuntimeError("boom")

    context = ToolContext(session=Session())
    assert needs_approval(broken, None, context) is True
    assert needs_approval(lambda p, c: False, None, context) is False


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        '[{"kind": "other", "call_id": "c", "tool": "t", "arguments": {}, "schema_hash": "", "token": ""}]',
        '[{"kind": "approval", "call_id": "c", "tool": "t", "arguments": [], "schema_hash": ""}]',
        '[{"kind": "approval"}]',
    ],
)
def test_damaged_pending_rows_are_refused(text: str) -> None:
    with pytest.raises(ResumeError, match="damaged"):
        pending_from_json(text)


def test_decisions_round_trip_and_damaged_ones_are_refused() -> None:
    decisions = (
        Approve("a", "t", {"x": 1}),
        Approve("b", "t"),
        Deny("c", "t", "no"),
        Supply("d", "t", "r", True),
    )
    assert decisions_from_json(decisions_to_json(decisions)) == decisions
    with pytest.raises(ResumeError, match="not a list"):
        decisions_from_json("{}")
    with pytest.raises(ResumeError, match="unknown decision"):
        decisions_from_json(canonical_json([{"decision": "maybe", "call_id": "a", "token": "t"}]))


def test_run_context_from_anything_else_is_empty() -> None:
    assert RunContext.from_json(None) == RunContext()
    assert RunContext.from_json({"turn_start": 3, "expanded": "x"}) == RunContext()


def test_a_pause_on_an_in_memory_store_and_the_listing() -> None:
    with Store.open("sqlite://") as store:
        paused = evaluate(
            make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id="m"), store=store
        ).paused
        assert paused is not None
        assert paused_runs(store) == [paused]
        with store.read() as conn:
            assert pause_rows.read_journal(conn, "m") is None


def pause(store: Store) -> PausedRun:
    paused = evaluate(
        make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id="s1"), store=store
    ).paused
    assert paused is not None
    return paused


def test_refusals_name_what_is_wrong(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as store:
        with pytest.raises(ResumeError, match="no paused run"):
            resume_sync(store, "s1", [Deny("c", "t")], prompt=make_prompt(), adapter=adapter_after_pause())
        with pytest.raises(ResumeError, match="no stored run"):
            resume_sync(store, "s1", prompt=make_prompt(), adapter=adapter_after_pause())
        paused = pause(store)
        first, second = paused.pending
        cases: list[tuple[list[object], str]] = [
            ([Approve("c2", first.token), "nonsense"], "not an Approve"),
            ([Approve("c2", first.token, [1]), Deny("c3", second.token)], "not a JSON object"),  # type: ignore[list-item]
            (
                [Approve("c2", first.token, {"path": float("nan")}), Deny("c3", second.token)],
                "not a JSON object",
            ),
        ]
        for decisions, problem in cases:
            with pytest.raises(ResumeError, match=problem):
                resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())  # pyright: ignore[reportArgumentType]
        other = Prompt(
            PromptTemplate(ns="t", key="k", sections=[MarkdownSection(title="F", key="f", template="x")])
        )
        with pytest.raises(ResumeError, match="no longer offers tool 'delete_file'"):
            resume_sync(
                store,
                "s1",
                [Deny("c2", first.token), Deny("c3", second.token)],
                prompt=other,
                adapter=adapter_after_pause(),
            )
        assert paused_run(store, "s1") == paused


def test_a_tool_changed_since_the_pause_is_refused(tmp_path: Path) -> None:
    @tool(name="delete_file", description="Delete a file, differently.", requires_approval=True)
    def changed(params: Deleted) -> ToolResult[None]:
        return ToolResult(message="x")

    with Store.open(tmp_path / "c.db") as store:
        paused = pause(store)
        prompt = Prompt(
            PromptTemplate(
                ns="t", key="k", sections=[MarkdownSection(title="F", key="f", template="x", tools=[changed])]
            )
        )
        with pytest.raises(ResumeError, match="changed since the pause"):
            resume_sync(
                store,
                "s1",
                [Deny(p.call_id, p.token) for p in paused.pending],
                prompt=prompt,
                adapter=adapter_after_pause(),
            )


def test_claimed_but_stopped_before_running_resumes_from_the_stored_decisions(tmp_path: Path) -> None:
    with Store.open(tmp_path / "k.db") as store:
        paused = pause(store)
        decisions = [Approve(p.call_id, p.token) for p in paused.pending]
        with store.write() as conn:  # a resume that claimed the pause, then died before its turn
            assert pause_rows.claim_pause(
                conn, "s1", paused.seq, decisions_json=decisions_to_json(decisions), decided_by="x", now="t"
            )
        response = resume_sync(store, "s1", prompt=make_prompt(), adapter=adapter_after_pause())
        assert response.text == "Done."
        tool_ids = [m.tool_call_id for m in Transcript(store, "s1").compile().messages if m.role == "tool"]
        assert tool_ids == ["c1", "c2", "c3"]
        with pytest.raises(ResumeError, match="final answer"):
            resume_sync(store, "s1", prompt=make_prompt(), adapter=adapter_after_pause())


def test_a_slice_that_no_longer_imports_fails_after_the_claim_with_a_note(tmp_path: Path) -> None:
    with Store.open(tmp_path / "n.db") as store:
        paused = pause(store)
        with store.write() as conn:
            row = conn.execute(pause_rows.tables.paused_runs.select()).mappings().one()
            state = row["state_json"].replace('"slices":{}', '"slices":{"gone_module:Gone":[]}')
            conn.execute(pause_rows.tables.paused_runs.update().values(state_json=state))
        with pytest.raises(SessionStateError) as caught:
            resume_sync(
                store,
                "s1",
                [Deny(p.call_id, p.token) for p in paused.pending],
                prompt=make_prompt(),
                adapter=adapter_after_pause(),
            )
        assert any("claimed" in note for note in caught.value.__notes__)


def test_the_dispatcher_holds_defers_and_answers() -> None:
    @tool(name="later", description="Deferred by return.")
    def later(params: Deleted) -> ToolResult[None]:
        return CallDeferred("queue")  # type: ignore[return-value]

    @tool(name="guarded", description="Needs approval.", requires_approval=True)
    def guarded(params: Deleted) -> ToolResult[None]:
        return ToolResult(message="ran")

    session = Session()
    dispatcher = ToolDispatcher([later, guarded], session=session)
    with pytest.raises(ToolCallPending) as deferred:
        dispatcher.execute(ToolCall("l1", "later", {"path": "p"}))
    assert deferred.value.kind == "deferred" and deferred.value.note == "queue"
    assert dispatcher.holds(ToolCall("g1", "guarded", {"path": "p"}))
    assert not dispatcher.holds(ToolCall("g1", "guarded", "not json"))
    assert not dispatcher.holds(ToolCall("g1", "guarded", {"wrong": 1}))
    assert not dispatcher.holds(ToolCall("x", "unknown", {}))
    assert not dispatcher.holds(ToolCall("l1", "later", {"path": "p"}))
    with pytest.raises(ToolCallPending):
        dispatcher.execute(ToolCall("g1", "guarded", {"path": "p"}))
    assert dispatcher.execute(ToolCall("g1", "guarded", {"path": "p"}), approved=True).message == "ran"
    # the approval was for that one execution: the same call is held again
    assert dispatcher.holds(ToolCall("g1", "guarded", {"path": "p"}))
    answered = dispatcher.answer(ToolCall("l1", "later", {"path": "p"}), ToolResult.error("denied"))
    assert not answered.success and answered.event.call_id == "l1"


def test_decision_events_skip_calls_nobody_decided() -> None:
    session = Session(session_id="e")
    seen: list[object] = []
    session.bus.subscribe_all(seen.append)
    call = ToolCall("a", "t", {})
    publish_decisions_for(
        session,
        "e",
        [RunStep(call, None), AnswerStep(call, "x", True, {"decision": "denied", "message": "m"})],
        "bob",
    )
    assert len(seen) == 1


def test_an_approved_call_may_open_sections(tmp_path: Path) -> None:
    @tool(name="open_more", description="Asks for more sections.", requires_approval=True)
    def open_more(params: Deleted) -> ToolResult[None]:
        raise VisibilityExpansionRequired(("extra",), reason="need it")

    prompt = Prompt(
        PromptTemplate(
            ns="t",
            key="v",
            sections=[
                MarkdownSection(title="F", key="f", template="x", tools=[open_more]),
            ],
        )
    )
    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("open_more", {"path": "p"}, id="o1")), text_turn("ok")]
    )
    with Store.open(tmp_path / "v.db") as store:
        paused = evaluate(prompt, adapter=adapter, session=Session(session_id="v"), store=store).paused
        assert paused is not None
        response = resume_sync(
            store,
            "v",
            [Approve("o1", paused.pending[0].token)],
            prompt=prompt,
            adapter=ScriptedAdapter([text_turn("ok")]),
        )
        assert response.text == "ok"
        tool_messages = [m for m in Transcript(store, "v").compile().messages if m.role == "tool"]
        assert [m.tool_call_id for m in tool_messages] == ["o1"]


def test_a_new_run_supersedes_the_journal_a_failed_run_left(tmp_path: Path) -> None:
    with Store.open(tmp_path / "j.db") as store:
        with store.write() as conn:
            row = pause_rows.JournalRow(
                session_id="j", head_hash=None, reply_json=None, calls_json="{}", created_at="t"
            )
            pause_rows.write_journal(conn, row)
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter([text_turn("hi")]),
            session=Session(session_id="j"),
            store=store,
        )
        with store.read() as conn:
            assert pause_rows.read_journal(conn, "j") is None


def test_the_testing_kit_checks_a_tool_that_needs_approval_as_approved() -> None:
    from hypothesis import settings as hypothesis_settings
    from hypothesis.stateful import run_state_machine_as_test

    from approval_support import delete_file as needs_approval_tool
    from weakprompt.testing import check_tool, prompt_state_machine

    check_tool(needs_approval_tool)
    machine = prompt_state_machine(make_prompt())
    run_state_machine_as_test(
        machine, settings=hypothesis_settings(max_examples=5, stateful_step_count=5, deadline=None)
    )


def test_the_pause_is_stored_in_the_transaction_of_its_turn() -> None:
    from test_loop_turns import write_transactions

    with Store.open("sqlite://") as store:
        tracer = write_transactions(store)
        transactions = next(tracer)
        pause(store)
        tracer.close()
    with_pause = [t for t in transactions if any(sql.startswith("INSERT INTO paused_runs") for sql in t)]
    assert len(with_pause) == 1
    # the reply and the result of the call that ran (c1), stored together with the pause
    assert sum(1 for sql in with_pause[0] if sql.startswith("INSERT INTO commits")) == 2
