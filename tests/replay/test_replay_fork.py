"""``fork``: a recorded session branched at a commit and continued with another model and input."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from replay_support import make_prompt, record
from weakprompt import (
    Agent,
    Approve,
    Deny,
    MarkdownSection,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    ToolResult,
    Transcript,
    evaluate,
    tool,
)
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.cli import cli
from weakprompt.errors import TranscriptError
from weakprompt.replay import fork, replay_sync
from weakprompt.runtime import ResumeError, paused_runs, resume_sync


def test_a_fork_continues_with_another_model_and_input_and_the_parent_is_untouched(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        parent_log = Transcript(store, "rec").log()
        final = parent_log[-1]
        made = fork(store, "rec", at=final.hash, new_session="what-if")
        other = ScriptedAdapter([text_turn('{"total": 3}')])
        agent = Agent(other, instructions="unused", store=store)
        prompt = make_prompt()
        response = evaluate(
            prompt, adapter=other, session=Session(session_id=made), store=store, input="Cups only?"
        )
        assert response.output is not None
        sent = [m.content for m in other.requests[0].context.messages]
        assert sent[1] == "How many mugs and cups?" and sent[-1] == "Cups only?"
        assert [c.hash for c in Transcript(store, "rec").log()] == [c.hash for c in parent_log]
        # the recorded session still replays identically; the fork's own run replays too
        assert replay_sync(store, "rec", prompt=make_prompt()).identical
        assert agent.store is store


def test_an_agent_runs_on_a_fork_by_its_id(tmp_path: Path) -> None:
    db = record(tmp_path / "rec.db")
    with Store.open(db) as store:
        made = fork(store, "rec", at=Transcript(store, "rec").log()[1].hash)
        assert made.startswith("rec.fork-")
        adapter = ScriptedAdapter([text_turn("Twelve mugs.")])
        agent = Agent(adapter, instructions="Answer stock questions.", store=store)
        assert agent.run_sync("And mugs alone?", session=made).text == "Twelve mugs."
        assert [m.role for m in adapter.requests[0].context.messages] == ["system", "user", "user"]


def test_fork_refuses_a_commit_of_another_session(tmp_path: Path) -> None:
    db = record(tmp_path / "a.db", session_id="a")
    with Store.open(db) as store:
        Transcript(store, "b").user("hello")
        with pytest.raises(TranscriptError, match="not in the chain of session 'a'"):
            fork(store, "a", at=Transcript(store, "b").log()[0].hash)


def test_fork_command_prints_the_new_session_and_refuses_bad_input(tmp_path: Path) -> None:
    db = str(record(tmp_path / "rec.db"))
    with Store.open(db) as store:
        head = Transcript(store, "rec").log()[-1].hash
    made = CliRunner().invoke(cli, ["fork", db, "rec", "--at", head[:10], "--as", "branch"])
    assert made.exit_code == 0, made.output
    assert made.output.strip() == "branch"
    with Store.open(db) as store:
        assert Transcript(store, "branch").head == head
    again = CliRunner().invoke(cli, ["fork", db, "rec", "--at", head, "--as", "branch"])
    assert again.exit_code == 1 and "already exists" in again.output
    bad = CliRunner().invoke(cli, ["fork", db, "rec", "--at", "nothex\x1b[2J"])
    assert bad.exit_code == 1 and "\x1b" not in bad.output and "not in the chain" in bad.output
    missing = CliRunner().invoke(cli, ["fork", str(tmp_path / "none.db"), "rec", "--at", head])
    assert missing.exit_code == 1 and "no database at" in missing.output
    fresh = CliRunner().invoke(cli, ["fork", db, "rec", "--at", head])
    assert fresh.exit_code == 0 and fresh.output.startswith("rec.fork-")
    ambiguous = CliRunner().invoke(cli, ["fork", db, "branch", "--at", "0000000"])
    assert ambiguous.exit_code == 1


def _delete_prompt(ran: list[str]):  # type: ignore[no-untyped-def]
    @tool(name="delete_file", description="Delete a file.", requires_approval=True)
    def delete_file(path: str) -> ToolResult[str]:
        ran.append(path)
        return ToolResult.ok(f"deleted {path}")

    section = MarkdownSection(title="Files", key="files", template="Tidy up.", tools=[delete_file])
    return Prompt(PromptTemplate(ns="tests", key="files", sections=[section]))


def test_a_paused_runs_fork_takes_another_decision(tmp_path: Path) -> None:
    ran: list[str] = []
    calls = tool_call_turn(tool_call("delete_file", {"path": "/tmp/a"}, id="c1"))
    with Store.open(tmp_path / "p.db") as store:
        paused = evaluate(
            _delete_prompt(ran),
            adapter=ScriptedAdapter([calls]),
            session=Session(session_id="p"),
            store=store,
        ).paused
        assert paused is not None and paused.head is not None
        resume_sync(
            store,
            "p",
            [Deny("c1", paused.pending[0].token)],
            prompt=_delete_prompt(ran),
            adapter=ScriptedAdapter([text_turn("Left it.")]),
        )
        assert ran == []
        made = fork(store, "p", at=paused.head, new_session="p-approved")
        again = resume_sync(
            store,
            made,
            [Approve("c1", _token(store, made))],
            prompt=_delete_prompt(ran),
            adapter=ScriptedAdapter([text_turn("Deleted it.")]),
        )
        assert again.text == "Deleted it." and ran == ["/tmp/a"]
        assert Transcript(store, "p").compile().messages[-1].content == "Left it."  # the parent kept its own
        with pytest.raises(TranscriptError, match="already exists"):  # and a refusal writes no pause
            fork(store, "p", at=paused.head, new_session="p-approved")


def _token(store: Store, session_id: str) -> str:
    waiting = [p for p in paused_runs(store) if p.session_id == session_id]
    assert len(waiting) == 1
    return waiting[0].pending[0].token


def test_a_pause_altered_in_the_parent_is_not_signed_again_for_the_fork(tmp_path: Path) -> None:
    ran: list[str] = []
    calls = tool_call_turn(tool_call("delete_file", {"path": "/tmp/a"}, id="c1"))
    with Store.open(tmp_path / "p.db") as store:
        paused = evaluate(
            _delete_prompt(ran),
            adapter=ScriptedAdapter([calls]),
            session=Session(session_id="p"),
            store=store,
        ).paused
        assert paused is not None and paused.head is not None
        with store.write() as conn:
            conn.execute(
                text("UPDATE paused_runs SET pending_json = replace(pending_json, '/tmp/a', '/etc')")
            )
        with pytest.raises(ResumeError, match="does not match its token"):
            fork(store, "p", at=paused.head, new_session="f")
        assert "f" not in store.session_ids()
