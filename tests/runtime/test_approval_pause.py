"""Approval policies pause a run; decisions (inline or on resume) continue it (specs/APPROVAL.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from approval_support import Deleted, PathParams, adapter_after_pause, delete_file, make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.events import ToolInvoked
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import (
    Approve,
    Decision,
    Deny,
    PausedRun,
    ResumeError,
    RunEvent,
    RunFinished,
    RunPaused,
    RunResumed,
    Supply,
    ToolCallDecided,
    ToolResultStored,
    TurnCommitted,
    approval_token,
    evaluate,
    paused_run,
    resume_sync,
)
from weakprompt.session import Session
from weakprompt.store import Store, pause_rows
from weakprompt.tools import ToolResult, tool
from weakprompt.transcript import Transcript


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "runs.db") as opened:
        yield opened


def messages(store: Store, session_id: str) -> list[tuple[str, str, str | None, bool]]:
    compiled = Transcript(store, session_id).compile()
    return [(m.role, m.content, m.tool_call_id, m.is_error) for m in compiled.messages]


def approval_metadata(store: Store, session_id: str) -> dict[str, object]:
    found: dict[str, object] = {}
    for commit in Transcript(store, session_id).log():
        info = commit.metadata.get("approval") if commit.metadata else None
        if info is not None:
            found[commit.content.tool_call_id or ""] = info
    return found


def pause(store: Store, session_id: str = "s1") -> PausedRun:
    response = evaluate(
        make_prompt(),
        adapter=ScriptedAdapter(script()),
        session=Session(session_id=session_id),
        store=store,
        input="Tidy /tmp.",
    )
    assert response.paused is not None and response.output is None
    return response.paused


def test_a_call_needing_approval_pauses_after_the_other_calls(store: Store) -> None:
    session = Session(session_id="s1")
    seen: list[object] = []
    session.bus.subscribe(RunPaused, seen.append)
    invoked: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, invoked.append)
    response = evaluate(
        make_prompt(), adapter=ScriptedAdapter(script()), session=session, store=store, input="Tidy /tmp."
    )
    paused = response.paused
    assert paused is not None
    assert [(p.call_id, p.tool, p.kind) for p in paused.pending] == [
        ("c2", "delete_file", "approval"),
        ("c3", "delete_file", "approval"),
    ]
    assert paused.pending[0].arguments == {"path": "/tmp/a.txt"}
    rendered = make_prompt().render()
    schema = rendered.tool_hashes[rendered.tool_names.index("delete_file")]
    with store.read() as conn:
        store_id = pause_rows.store_id(conn)
    assert paused.pending[0].token == approval_token(
        store_id=store_id,
        session_id="s1",
        seq=1,
        call_id="c2",
        schema_hash=schema,
        arguments={"path": "/tmp/a.txt"},
        key=None,
    )
    # the free call ran and is stored; the waiting ones have neither a result nor an event yet
    assert [e.call_id for e in invoked] == ["c1"]
    assert [m[2] for m in messages(store, "s1") if m[0] == "tool"] == ["c1"]
    assert session[Deleted].all() == ()
    assert len(seen) == 1
    assert paused_run(store, "s1") == paused


def test_resume_in_this_process_runs_the_approved_and_tells_the_model_of_the_denied(store: Store) -> None:
    paused = pause(store)
    first, second = paused.pending
    session = Session(session_id="s1")
    decided: list[ToolCallDecided] = []
    resumed: list[RunResumed] = []
    session.bus.subscribe(ToolCallDecided, decided.append)
    session.bus.subscribe(RunResumed, resumed.append)
    adapter = adapter_after_pause()
    response = resume_sync(
        store,
        "s1",
        [Approve("c2", first.token), Deny("c3", second.token, "Keep b.txt.")],
        prompt=make_prompt(),
        adapter=adapter,
        session=session,
        decided_by="alice",
    )
    assert response.paused is None and response.text == "Done."
    tool_messages = [m for m in messages(store, "s1") if m[0] == "tool"]
    assert [(m[2], m[3]) for m in tool_messages] == [("c1", False), ("c2", False), ("c3", True)]
    assert "denied" in tool_messages[2][1] and "Keep b.txt." in tool_messages[2][1]
    assert session[Deleted].all() == (Deleted("/tmp/a.txt"),)
    # the model saw the denial as a failed result and went on
    last_request = adapter.requests[-1].context.messages
    assert any(m.tool_call_id == "c3" and m.is_error for m in last_request)
    assert [(d.call_id, d.decision, d.decided_by) for d in decided] == [
        ("c2", "approved", "alice"),
        ("c3", "denied", "alice"),
    ]
    assert [r.seq for r in resumed] == [1]
    meta = approval_metadata(store, "s1")
    assert meta["c2"] == {"decision": "approved", "decided_by": "alice"}
    assert paused_run(store, "s1") is None


def test_a_resume_with_a_listener_reports_the_decided_turn_before_the_models_next(store: Store) -> None:
    """The decided calls' results, then their turn as committed (already stored), then the rest of the run."""
    first, second = pause(store).pending
    events: list[RunEvent[Any]] = []
    response = resume_sync(
        store,
        "s1",
        [Approve("c2", first.token), Deny("c3", second.token)],
        prompt=make_prompt(),
        adapter=adapter_after_pause(),
        on_event=events.append,
    )
    ready = [e for e in events if isinstance(e, ToolResultStored)]
    assert [(e.call.id, e.is_error) for e in ready] == [("c2", False), ("c3", True)]
    committed = [e for e in events if isinstance(e, TurnCommitted)]
    assert len(committed) == 2
    before = events[: events.index(committed[0])]  # right after the decided calls' results
    assert [type(e).__name__ for e in before] == ["ToolInvoked"] * 2 + ["ToolResultStored"] * 2
    stored = {commit.hash for commit in Transcript(store, "s1").log()}
    assert all(set(e.commit_hashes) <= stored and e.commit_hashes for e in committed)
    assert events[-1] == RunFinished(response)


def test_edited_arguments_are_validated_run_and_recorded(store: Store) -> None:
    paused = pause(store)
    first, second = paused.pending
    session = Session(session_id="s1")
    with pytest.raises(ResumeError, match="edited arguments for call 'c2' are invalid"):
        resume_sync(
            store,
            "s1",
            [Approve("c2", first.token, {"file": 3}), Deny("c3", second.token)],
            prompt=make_prompt(),
            adapter=adapter_after_pause(),
            session=session,
        )
    assert paused_run(store, "s1") == paused  # refused: still waiting
    resume_sync(
        store,
        "s1",
        [Approve("c2", first.token, {"path": "/tmp/safe.txt"}), Deny("c3", second.token)],
        prompt=make_prompt(),
        adapter=adapter_after_pause(),
        session=session,
        decided_by="bob",
    )
    assert session[Deleted].all() == (Deleted("/tmp/safe.txt"),)
    assert approval_metadata(store, "s1")["c2"] == {
        "decision": "approved_with_edits",
        "decided_by": "bob",
        "original_arguments": {"path": "/tmp/a.txt"},
        "arguments": {"path": "/tmp/safe.txt"},
    }


def test_the_session_state_at_the_pause_is_restored_from_the_store(store: Store) -> None:
    @tool(name="remember", description="Remember a path.")
    def remember(params: PathParams, *, context: object) -> ToolResult[Deleted]:
        return ToolResult(message="ok", value=Deleted(params.path))

    prompt = Prompt(
        PromptTemplate(
            ns="t",
            key="k",
            sections=[MarkdownSection(title="F", key="f", template="x", tools=[remember, delete_file])],
        )
    )
    session = Session(session_id="s2")
    session.register_reducer(Deleted, Deleted, lambda state, event: (*state, event))
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("remember", {"path": "kept"}, id="r1"),
                tool_call("delete_file", {"path": "x"}, id="d1"),
            ),
            text_turn("ok"),
        ]
    )
    paused = evaluate(prompt, adapter=adapter, session=session, store=store).paused
    assert paused is not None
    fresh = Session(session_id="s2")  # another process would start from nothing like this
    resume_sync(
        store,
        "s2",
        [Deny("d1", paused.pending[0].token)],
        prompt=prompt,
        adapter=ScriptedAdapter([text_turn("ok")]),
        session=fresh,
    )
    assert fresh[Deleted].all() == (Deleted("kept"),)


def test_a_slice_that_cannot_be_stored_must_be_handed_in(store: Store) -> None:
    class Local:  # not importable by name: cannot be persisted
        pass

    session = Session(session_id="s3")
    session[Local].append(Local())
    paused = evaluate(make_prompt(), adapter=ScriptedAdapter(script()), session=session, store=store).paused
    assert paused is not None
    decisions = [Deny(p.call_id, p.token) for p in paused.pending]
    with pytest.raises(ResumeError, match="Local"):
        resume_sync(store, "s3", decisions, prompt=make_prompt(), adapter=adapter_after_pause())
    assert paused_run(store, "s3") == paused
    response = resume_sync(
        store, "s3", decisions, prompt=make_prompt(), adapter=adapter_after_pause(), session=session
    )
    assert response.text == "Done."


def test_inline_decisions_give_the_same_transcript_as_pause_and_resume(tmp_path: Path) -> None:
    def decide(paused: PausedRun) -> Sequence[Decision]:
        first, second = paused.pending
        return [Approve(first.call_id, first.token), Deny(second.call_id, second.token, "no")]

    with Store.open(tmp_path / "inline.db") as inline_store:
        done = evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()),
            session=Session(session_id="s1"),
            store=inline_store,
            input="Tidy /tmp.",
            approve=decide,
        )
        assert done.paused is None and done.text == "Done."
        inline = messages(inline_store, "s1")
    with Store.open(tmp_path / "paused.db") as paused_store:
        paused = pause(paused_store)
        resume_sync(paused_store, "s1", decide(paused), prompt=make_prompt(), adapter=adapter_after_pause())
        assert messages(paused_store, "s1") == inline


def test_async_approver_and_deferred_results(store: Store) -> None:
    import asyncio

    from weakprompt.runtime import run

    async def supply(paused: PausedRun) -> Sequence[Decision]:
        (waiting,) = paused.pending
        assert waiting.kind == "deferred" and "waiting for an answer" in waiting.note
        return [Supply(waiting.call_id, waiting.token, "The person said yes.")]

    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("ask_human", {"path": "p"}, id="h1")), text_turn("ok")]
    )
    response = asyncio.run(
        run(make_prompt(), adapter=adapter, session=Session(session_id="s4"), store=store, approve=supply)
    )
    assert response.text == "ok"
    assert ("tool", "The person said yes.", "h1", False) in messages(store, "s4")


def test_a_deferred_call_pauses_and_approve_is_refused_for_it(store: Store) -> None:
    adapter = ScriptedAdapter(
        [tool_call_turn(tool_call("ask_human", {"path": "p"}, id="h1")), text_turn("ok")]
    )
    paused = evaluate(make_prompt(), adapter=adapter, session=Session(session_id="s5"), store=store).paused
    assert paused is not None
    (waiting,) = paused.pending
    with pytest.raises(ResumeError, match="deferred"):
        resume_sync(
            store,
            "s5",
            [Approve("h1", waiting.token)],
            prompt=make_prompt(),
            adapter=ScriptedAdapter([text_turn("ok")]),
        )
    response = resume_sync(
        store,
        "s5",
        [Supply("h1", waiting.token, "failed upstream", is_error=True)],
        prompt=make_prompt(),
        adapter=ScriptedAdapter([text_turn("ok")]),
    )
    assert response.text == "ok"
    assert ("tool", "failed upstream", "h1", True) in messages(store, "s5")


def test_an_already_decided_pause_is_refused(store: Store) -> None:
    paused = pause(store)
    decisions = [Deny(p.call_id, p.token) for p in paused.pending]
    resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())
    with pytest.raises(ResumeError, match="already decided"):
        resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())


def test_a_predicate_policy_and_a_section_policy(store: Store) -> None:
    @tool(name="write", description="Write.", requires_approval=lambda p, ctx: p.path.startswith("/etc"))
    def write(params: PathParams) -> ToolResult[None]:
        return ToolResult(message="written")

    @tool(name="wipe", description="Wipe.")
    def wipe(params: PathParams) -> ToolResult[None]:
        return ToolResult(message="wiped")

    prompt = Prompt(
        PromptTemplate(
            ns="t",
            key="p",
            sections=[
                MarkdownSection(title="W", key="w", template="x", tools=[write]),
                MarkdownSection(title="D", key="d", template="y", tools=[wipe], requires_approval=True),
            ],
        )
    )
    adapter = ScriptedAdapter(
        [
            tool_call_turn(
                tool_call("write", {"path": "/home/x"}, id="w1"),
                tool_call("write", {"path": "/etc/passwd"}, id="w2"),
                tool_call("wipe", {"path": "/"}, id="w3"),
            )
        ]
    )
    paused = evaluate(prompt, adapter=adapter, session=Session(session_id="s6"), store=store).paused
    assert paused is not None
    assert [p.call_id for p in paused.pending] == ["w2", "w3"]
