"""An approval covers exactly the call a person was shown, once: never a later call that reuses its id."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn, ToolCall
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import (
    Approve,
    Decision,
    Deny,
    PausedRun,
    ResumeError,
    ToolDispatcher,
    evaluate,
    resume_sync,
)
from weakprompt.runtime.approval import decisions_to_json
from weakprompt.session import Session
from weakprompt.store import Store, pause_rows
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


@dataclass(frozen=True)
class FileParams:
    path: str


RAN: list[tuple[str, str]] = []  # (call id, path) of every delete that really ran


@tool(name="delete_file", description="Delete a file.", requires_approval=True)
def delete_file(params: FileParams, *, context: ToolContext) -> ToolResult[None]:
    RAN.append((context.call_id or "", params.path))
    return ToolResult(message=f"deleted {params.path}")


def make_prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/exact",
            key="delete",
            sections=[MarkdownSection(title="Files", key="files", template="Tidy.", tools=[delete_file])],
        )
    )


@pytest.fixture(autouse=True)
def _fresh_log() -> None:
    RAN.clear()


def delete(path: str, call_id: str = "call_0") -> AssistantTurn:
    return tool_call_turn(tool_call("delete_file", {"path": path}, id=call_id))


def test_repeated_call_id_never_runs_on_an_earlier_approval(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        first = evaluate(
            make_prompt(),
            adapter=ScriptedAdapter([delete("/tmp/x")]),
            session=Session(session_id="s"),
            store=store,
            input="go",
        ).paused
        assert first is not None
        after = ScriptedAdapter([delete("/home/user/EVERYTHING"), text_turn("done")])
        response = resume_sync(
            store,
            "s",
            [Approve("call_0", first.pending[0].token)],
            prompt=make_prompt(),
            adapter=after,
            decided_by="alice",
        )
        assert RAN == [("call_0", "/tmp/x")]  # the second call_0 did not run on alice's approval
        second = response.paused
        assert second is not None and second.seq == 2  # it waits for its own decision
        assert [(p.call_id, p.arguments) for p in second.pending] == [
            ("call_0", {"path": "/home/user/EVERYTHING"})
        ]
        with pytest.raises(ResumeError, match="does not match"):  # the first token does not decide it
            resume_sync(
                store, "s", [Approve("call_0", first.pending[0].token)], prompt=make_prompt(), adapter=after
            )
        resume_sync(
            store, "s", [Deny("call_0", second.pending[0].token)], prompt=make_prompt(), adapter=after
        )
    assert RAN == [("call_0", "/tmp/x")]


def test_repeated_call_id_never_runs_on_an_earlier_inline_approval() -> None:
    shown: list[list[tuple[str, object]]] = []

    def approve_only_tmp(paused: PausedRun) -> list[Decision]:
        shown.append([(p.call_id, p.arguments["path"]) for p in paused.pending])
        return [
            Approve(p.call_id, p.token) if p.arguments["path"] == "/tmp/x" else Deny(p.call_id, p.token)
            for p in paused.pending
        ]

    adapter = ScriptedAdapter([delete("/tmp/x"), delete("/home/user/EVERYTHING"), text_turn("done")])
    evaluate(make_prompt(), adapter=adapter, session=Session(session_id="i"), approve=approve_only_tmp)
    assert shown == [[("call_0", "/tmp/x")], [("call_0", "/home/user/EVERYTHING")]]
    assert RAN == [("call_0", "/tmp/x")]


def test_two_waiting_calls_of_one_reply_with_one_id_the_second_is_answered_with_a_failure(
    tmp_path: Path,
) -> None:
    reply = tool_call_turn(
        tool_call("delete_file", {"path": "/tmp/x"}, id="dup"),
        tool_call("delete_file", {"path": "/etc"}, id="dup"),
    )
    with Store.open(tmp_path / "d.db") as store:
        paused = evaluate(
            make_prompt(), adapter=ScriptedAdapter([reply]), session=Session(session_id="d"), store=store
        ).paused
        assert paused is not None
        assert [p.arguments for p in paused.pending] == [{"path": "/tmp/x"}]
        results = [m for m in Transcript(store, "d").compile().messages if m.role == "tool"]
        assert len(results) == 1 and results[0].is_error
        assert "already used by another call of this reply" in results[0].content
        resume_sync(
            store,
            "d",
            [Approve("dup", paused.pending[0].token)],
            prompt=make_prompt(),
            adapter=ScriptedAdapter([text_turn("done")]),
        )
    assert RAN == [("dup", "/tmp/x")]


def test_the_dispatcher_approves_one_execution_and_remembers_nothing() -> None:
    dispatcher = ToolDispatcher([delete_file], session=Session())
    call = ToolCall("call_0", "delete_file", {"path": "/tmp/x"})
    assert dispatcher.execute(call, approved=True).success
    assert dispatcher.holds(ToolCall("call_0", "delete_file", {"path": "/home"}))
    assert dispatcher.holds(call)  # not even the same call again
    assert RAN == [("call_0", "/tmp/x")]


# -- the property: nothing unapproved ever runs ---------------------------------------------------------

IDS = st.sampled_from(["call_0", "call_1"])
PATHS = st.sampled_from(["/a", "/b", "/c"])
TURNS = st.lists(st.lists(st.tuples(IDS, PATHS), min_size=1, max_size=3), min_size=1, max_size=4)
CHOICES = st.sampled_from(["approve", "deny", "edit", "replay", "swap"])


def _script(turns: Sequence[Sequence[tuple[str, str]]]) -> list[AssistantTurn]:
    replies = [
        tool_call_turn(*(tool_call("delete_file", {"path": path}, id=call_id) for call_id, path in calls))
        for calls in turns
    ]
    return [*replies, text_turn("done")]


class Decider:
    """Decides each pause from hypothesis' draws, keeping what it approved (and old tokens to replay)."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.allowed: list[Counter[tuple[str, str]]] = []  # per decision: (call id, path) it allows once
        self.old_tokens: list[str] = []

    def decide(self, paused: PausedRun, *, cheat: bool) -> tuple[list[Decision], bool]:
        """The decisions, and whether a wrong token was planted (the resume must then be refused)."""
        decisions: list[Decision] = []
        allowed: Counter[tuple[str, str]] = Counter()
        planted = False
        for index, waiting in enumerate(paused.pending):
            choice = (
                self.data.draw(CHOICES) if cheat else self.data.draw(st.sampled_from(["approve", "deny"]))
            )
            path = waiting.arguments["path"]
            assert isinstance(path, str)
            if choice == "replay" and self.old_tokens:  # a token of an earlier pause: same ids, same paths
                decisions.append(Approve(waiting.call_id, self.data.draw(st.sampled_from(self.old_tokens))))
                planted = True
            elif choice == "swap" and len(paused.pending) > 1:
                other = paused.pending[(index + 1) % len(paused.pending)]
                decisions.append(Approve(waiting.call_id, other.token))
                planted = True
            elif choice == "edit":
                edited = self.data.draw(PATHS)
                decisions.append(Approve(waiting.call_id, waiting.token, {"path": edited}))
                allowed[(waiting.call_id, edited)] += 1
            elif choice == "deny":
                decisions.append(Deny(waiting.call_id, waiting.token))
            else:
                decisions.append(Approve(waiting.call_id, waiting.token))
                allowed[(waiting.call_id, path)] += 1
        self.old_tokens.extend(p.token for p in paused.pending if p.token not in self.old_tokens)
        if not planted:
            self.allowed.append(allowed)
        return decisions, planted


def _check_runs(before: int, allowed: Counter[tuple[str, str]]) -> None:
    ran = Counter(RAN[before:])
    assert not ran - allowed, f"ran without approval: {ran - allowed}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=TURNS, data=st.data())
def test_property_no_unapproved_call_ever_runs_across_resumes(
    tmp_path: Path, turns: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    RAN.clear()
    decider = Decider(data)
    adapter = ScriptedAdapter(_script(turns))  # one script across the run and all its resumes
    with Store.open(tmp_path / f"{uuid.uuid4().hex}.db") as store:
        paused = evaluate(make_prompt(), adapter=adapter, session=Session(session_id="p"), store=store).paused
        assert RAN == []  # every call needs approval
        while paused is not None:
            decisions, planted = decider.decide(paused, cheat=True)
            before = len(RAN)
            if planted:
                with pytest.raises(ResumeError):
                    resume_sync(store, "p", decisions, prompt=make_prompt(), adapter=adapter)
                assert len(RAN) == before
                decisions, _ = decider.decide(paused, cheat=False)
            paused = resume_sync(store, "p", decisions, prompt=make_prompt(), adapter=adapter).paused
            _check_runs(before, decider.allowed[-1])


@settings(max_examples=40, deadline=None)
@given(turns=TURNS, data=st.data())
def test_property_no_unapproved_call_ever_runs_inline(
    turns: list[list[tuple[str, str]]], data: st.DataObject
) -> None:
    RAN.clear()
    decider = Decider(data)
    marks: list[int] = []

    def approve(paused: PausedRun) -> list[Decision]:
        marks.append(len(RAN))
        return decider.decide(paused, cheat=False)[0]

    evaluate(make_prompt(), adapter=ScriptedAdapter(_script(turns)), session=Session(), approve=approve)
    marks.append(len(RAN))
    assert marks[0] == 0  # nothing ran before the first decision
    for index, allowed in enumerate(decider.allowed):
        ran = Counter(RAN[marks[index] : marks[index + 1]])
        assert not ran - allowed, f"ran without approval: {ran - allowed}"


def test_a_claimed_pause_whose_call_id_was_answered_in_an_earlier_turn_is_replayed_after_a_crash(
    tmp_path: Path,
) -> None:
    with Store.open(tmp_path / "crash.db") as store:
        first = evaluate(
            make_prompt(),
            adapter=ScriptedAdapter([delete("/a")]),
            session=Session(session_id="c"),
            store=store,
        ).paused
        assert first is not None
        second = resume_sync(
            store,
            "c",
            [Approve("call_0", first.pending[0].token)],
            prompt=make_prompt(),
            adapter=ScriptedAdapter([delete("/b")]),
        ).paused
        assert second is not None
        decisions = decisions_to_json([Approve("call_0", second.pending[0].token)])
        with store.write() as conn:  # claimed by a resume that died before running the call
            assert pause_rows.claim_pause(conn, "c", 2, decisions_json=decisions, decided_by="x", now="2026")
        response = resume_sync(store, "c", prompt=make_prompt(), adapter=ScriptedAdapter([text_turn("done")]))
    assert response.paused is None and response.text == "done"
    assert RAN == [("call_0", "/a"), ("call_0", "/b")]  # the earlier call_0 result did not count for /b


@pytest.mark.parametrize("named", [True, False])
def test_a_crash_in_a_later_decided_turn_never_replays_an_older_pause_s_approval(
    tmp_path: Path, named: bool
) -> None:
    with Store.open(tmp_path / "old.db") as store:
        first = evaluate(
            make_prompt(),
            adapter=ScriptedAdapter([delete("/a")]),
            session=Session(session_id="o"),
            store=store,
        ).paused
        assert first is not None
        resume_sync(
            store,
            "o",
            [Approve("call_0", first.pending[0].token)],
            prompt=make_prompt(),
            adapter=ScriptedAdapter([text_turn("done")]),
        )
        # later, a turn decided inline (no stored pause) dies while its calls run: its journal row stays
        calls: dict[str, object] = {"calls": ["call_0"], "run": {}}
        if named:
            calls["pause"] = 0
        row = pause_rows.JournalRow("o", None, None, json.dumps(calls, sort_keys=True), "2026")
        with store.write() as conn:
            pause_rows.write_journal(conn, row)
        with pytest.raises(ResumeError, match="nothing to resume"):
            resume_sync(store, "o", prompt=make_prompt(), adapter=ScriptedAdapter([text_turn("again")]))
    assert RAN == [("call_0", "/a")]  # alice's approval of /a was used once
