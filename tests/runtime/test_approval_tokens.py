"""Approval tokens: keyed (WEAKPROMPT_APPROVAL_KEY), bound to the pause and the store; who decided, when."""

from __future__ import annotations

import getpass
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from approval_support import adapter_after_pause, make_prompt, pause_again, script
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.cli import cli
from weakprompt.cli.pauses import default_decider
from weakprompt.clock import FakeClock
from weakprompt.errors import ConfigurationError, StoreError
from weakprompt.messages import ToolCall
from weakprompt.runtime import (
    Approve,
    Deny,
    PausedRun,
    ResumeError,
    Supply,
    ToolCallDecided,
    ToolDispatcher,
    approval_token,
    decision_records,
    evaluate,
    paused_run,
    resume_sync,
)
from weakprompt.runtime.approval import APPROVAL_KEY_ENV
from weakprompt.session import Session
from weakprompt.store import LATEST_VERSION, MIGRATIONS, Store, pause_rows, tables
from weakprompt.store.engine import build_engine, normalize_url
from weakprompt.store.migrations import migrate
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript

KEY = "k" * 32


def pause(store: Store, session_id: str = "s1") -> PausedRun:
    response = evaluate(
        make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id=session_id), store=store
    )
    assert response.paused is not None
    return response.paused


def approve_all(paused: PausedRun) -> list[Approve]:
    return [Approve(p.call_id, p.token) for p in paused.pending]


def store_id(store: Store) -> str:
    with store.read() as conn:
        return pause_rows.store_id(conn)


def rows(store: Store) -> list[tuple[object, ...]]:
    with store.read() as conn:
        return [tuple(r) for r in conn.execute(tables.paused_runs.select())]


def forge(store: Store, path: str, *, key: bytes | None) -> str:
    """Edit the first stored pending call to ``path`` and recompute its token with ``key``; the new token."""
    with store.write() as conn:
        row = conn.execute(tables.paused_runs.select()).mappings().one()
        pending = json.loads(row["pending_json"])
        target = pending[0]
        target["arguments"] = {"path": path}
        target["token"] = approval_token(
            store_id=pause_rows.store_id(conn),
            session_id=row["session_id"],
            seq=row["seq"],
            call_id=target["call_id"],
            schema_hash=target["schema_hash"],
            arguments=target["arguments"],
            key=key,
        )
        conn.execute(tables.paused_runs.update().values(pending_json=json.dumps(pending, sort_keys=True)))
    return str(target["token"])


def test_an_edited_row_with_a_recomputed_token_is_refused_under_a_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(APPROVAL_KEY_ENV, KEY)
    with Store.open(tmp_path / "k.db") as store:
        paused = pause(store)
        token = forge(store, "/etc/passwd", key=None)  # whoever edits the row has no key
        before = rows(store)
        decisions = [Approve(paused.pending[0].call_id, token), *approve_all(paused)[1:]]
        with pytest.raises(ResumeError, match="does not match its token"):
            resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())
        assert rows(store) == before


def test_without_a_key_a_recomputed_token_is_accepted_as_the_spec_says(tmp_path: Path) -> None:
    with Store.open(tmp_path / "u.db") as store:
        paused = pause(store)
        token = forge(store, "/tmp/edited", key=None)
        decisions = [Approve(paused.pending[0].call_id, token), *approve_all(paused)[1:]]
        resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())


def test_a_keyed_pause_resumes_with_the_same_key_and_is_refused_with_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(APPROVAL_KEY_ENV, KEY)
    with Store.open(tmp_path / "k.db") as store:
        paused = pause(store)
        unkeyed = approval_token(
            store_id=store_id(store),
            session_id="s1",
            seq=1,
            call_id=paused.pending[0].call_id,
            schema_hash=paused.pending[0].schema_hash,
            arguments=paused.pending[0].arguments,
            key=None,
        )
        assert paused.pending[0].token != unkeyed
        monkeypatch.setenv(APPROVAL_KEY_ENV, "another key, long enough")
        with pytest.raises(ResumeError, match=f"another approval key \\({APPROVAL_KEY_ENV} is set here\\)"):
            resume_sync(store, "s1", approve_all(paused), prompt=make_prompt(), adapter=adapter_after_pause())
        monkeypatch.delenv(APPROVAL_KEY_ENV)
        with pytest.raises(ResumeError, match="is not set here"):
            resume_sync(store, "s1", approve_all(paused), prompt=make_prompt(), adapter=adapter_after_pause())
        monkeypatch.setenv(APPROVAL_KEY_ENV, KEY)
        resume_sync(store, "s1", approve_all(paused), prompt=make_prompt(), adapter=adapter_after_pause())
        assert paused_run(store, "s1") is None


def test_a_short_key_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(APPROVAL_KEY_ENV, "short")
    with Store.open(tmp_path / "short.db") as store:
        with pytest.raises(ConfigurationError, match=f"{APPROVAL_KEY_ENV} is 5 bytes long"):
            pause(store)
        assert rows(store) == []


def test_a_token_does_not_replay_in_another_store(tmp_path: Path) -> None:
    with Store.open(tmp_path / "a.db") as first, Store.open(tmp_path / "b.db") as second:
        theirs = pause(first)
        mine = pause(second)  # same session id, call ids and arguments
        assert store_id(first) != store_id(second)
        assert [p.token for p in theirs.pending] != [p.token for p in mine.pending]
        with pytest.raises(ResumeError, match="token for call 'c2' does not match"):
            resume_sync(
                second, "s1", approve_all(theirs), prompt=make_prompt(), adapter=adapter_after_pause()
            )


def test_a_token_does_not_replay_in_a_later_pause_of_the_same_call(tmp_path: Path) -> None:
    same = tool_call_turn(tool_call("delete_file", {"path": "/tmp/a.txt"}, id="c2"))
    with Store.open(tmp_path / "r.db") as store:
        first = evaluate(
            make_prompt(), adapter=ScriptedAdapter([same]), session=Session(session_id="r"), store=store
        ).paused
        assert first is not None
        second = resume_sync(
            store, "r", approve_all(first), prompt=make_prompt(), adapter=ScriptedAdapter([same])
        ).paused
        assert second is not None and second.pending[0].arguments == first.pending[0].arguments
        assert second.pending[0].token != first.pending[0].token
        with pytest.raises(ResumeError, match="does not match"):
            resume_sync(store, "r", approve_all(first), prompt=make_prompt(), adapter=ScriptedAdapter([]))


def test_a_replayed_decision_after_a_crash_is_checked_again(tmp_path: Path) -> None:
    with Store.open(tmp_path / "c.db") as store:
        paused = pause(store)
        with store.write() as conn:  # claimed, then the process died before running anything
            pause_rows.claim_pause(
                conn,
                "s1",
                1,
                decisions_json=json.dumps(
                    [{"decision": "approve", "call_id": p.call_id, "token": "0" * 64} for p in paused.pending]
                ),
                decided_by="mallory",
                now="2026-01-01T00:00:00",
            )
        with pytest.raises(ResumeError, match="does not carry its token"):
            resume_sync(store, "s1", prompt=make_prompt(), adapter=adapter_after_pause())


# -- store identity ---------------------------------------------------------------------------------


def test_every_store_has_an_id_of_its_own_and_keeps_it(tmp_path: Path) -> None:
    with Store.open(tmp_path / "i.db") as store:
        kept = store_id(store)
    with Store.open(tmp_path / "i.db") as store:
        assert store_id(store) == kept
    private = [Store.open() for _ in range(3)]
    ids = {store_id(s) for s in private}
    for s in private:
        s.close()
    again = Store.open()  # a recycled private database gets a new id too
    ids.add(store_id(again))
    again.close()
    assert len(ids | {kept}) == 5


def test_the_store_identity_migration_gives_an_existing_store_an_id(tmp_path: Path) -> None:
    step = next(m for m in MIGRATIONS if "store_identity" in m.description)
    path = tmp_path / "v4.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.begin() as conn:
            before = MIGRATIONS[: MIGRATIONS.index(step)]
            assert migrate(conn, FakeClock(), migrations=before) == (0, step.version - 1)
    finally:
        engine.dispose()
    with Store.open(path) as store:
        assert store.schema_version == LATEST_VERSION
        assert len(store_id(store)) == 32
        pause(store)  # pauses work on the upgraded store


def test_a_store_without_its_one_id_row_is_reported_damaged(tmp_path: Path) -> None:
    with Store.open(tmp_path / "d.db") as store:
        with store.write() as conn:
            conn.execute(text("DELETE FROM store_identity"))
        with pytest.raises(StoreError, match="holds 0 rows instead of one"):
            store_id(store)


# -- who decided, when ------------------------------------------------------------------------------


def test_decision_records_say_who_decided_what_and_when(tmp_path: Path) -> None:
    clock = FakeClock()
    with Store.open(tmp_path / "w.db", clock=clock) as store:
        paused = evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()[:1]),
            session=Session(session_id="s1", clock=clock),
            store=store,
        ).paused
        assert paused is not None
        waiting = decision_records(store)
        assert [(r.call_id, r.decision, r.decided_by, r.token) for r in waiting] == [
            (p.call_id, "pending", None, p.token) for p in paused.pending
        ]
        c2, c3 = paused.pending
        resume_sync(
            store,
            "s1",
            [Approve(c2.call_id, c2.token, {"path": "/tmp/other"}), Deny(c3.call_id, c3.token, "no")],
            prompt=make_prompt(),
            adapter=pause_again(),
            decided_by="alice",
        )
        records = decision_records(store, "s1")
    assert [(r.seq, r.call_id, r.tool, r.decision, r.decided_by) for r in records] == [
        (1, "c2", "delete_file", "approved_with_edits", "alice"),
        (1, "c3", "delete_file", "denied", "alice"),
        (2, "c4", "delete_file", "pending", None),
    ]
    assert records[0].edited_arguments == {"path": "/tmp/other"}
    assert records[0].arguments == {"path": "/tmp/a.txt"}
    assert records[1].message == "no"
    assert records[0].decided_at is not None and records[2].decided_at is None


def test_inline_decisions_name_the_callback_that_made_them() -> None:
    def operator(paused: PausedRun) -> list[Approve]:
        return approve_all(paused)

    session = Session(session_id="inline")
    decided: list[ToolCallDecided] = []
    session.bus.subscribe(ToolCallDecided, decided.append)
    store = Store.open()
    try:
        response = evaluate(
            make_prompt(), adapter=ScriptedAdapter(script()), session=session, store=store, approve=operator
        )
        log = Transcript(store, "inline").log()
        records = decision_records(store, "inline")
    finally:
        store.close()
    assert response.paused is None
    who = "approve=test_inline_decisions_name_the_callback_that_made_them.<locals>.operator"
    assert [(e.call_id, e.decided_by) for e in decided] == [("c2", who), ("c3", who)]
    approvals = [c.metadata["approval"] for c in log if c.metadata and "approval" in c.metadata]
    assert approvals == [{"decision": "approved", "decided_by": who}] * 2
    # listed like a resumed pause (it is stored, decided, with the turn it decided)
    assert [(r.seq, r.call_id, r.decision, r.decided_by) for r in records] == [
        (1, "c2", "approved", who),
        (1, "c3", "approved", who),
    ]
    assert all(r.decided_at is not None for r in records)


def test_the_approvals_command_lists_who_when_and_escapes_what_it_prints(tmp_path: Path) -> None:
    db = str(tmp_path / "cli.db")
    hostile = "/tmp/\x1b]52;c;aGk=\x07\u202eevil\t\r\U000e0001"
    turn = tool_call_turn(tool_call("delete_file", {"path": hostile}, id="c\x1b[2J"))
    with Store.open(db) as store:
        paused = evaluate(
            make_prompt(), adapter=ScriptedAdapter([turn]), session=Session(session_id="s1"), store=store
        ).paused
        assert paused is not None
        pending = CliRunner().invoke(cli, ["approvals", "--db", db])
        resume_sync(
            store,
            "s1",
            approve_all(paused),
            prompt=make_prompt(),
            adapter=ScriptedAdapter([text_turn("ok")]),
            decided_by="bob\t\x1b[31m",
        )
    assert pending.exit_code == 0, pending.output
    assert "pending" in pending.output and paused.pending[0].token in pending.output
    listed = CliRunner().invoke(cli, ["approvals", "--db", db, "--session", "s1"])
    assert listed.exit_code == 0, listed.output
    assert "\x1b" not in listed.output and "\u202e" not in listed.output and "\x07" not in listed.output
    assert "approved by bob\\t\\x1b[31m" in listed.output
    assert "c\\x1b[2J delete_file" in listed.output and "\\u202eevil\\t\\r\\U000e0001" in listed.output
    assert "#1" in listed.output
    other = CliRunner().invoke(cli, ["approvals", "--db", db, "--session", "nobody"])
    assert other.exit_code == 0 and "no pauses stored" in other.output
    missing = CliRunner().invoke(cli, ["approvals", "--db", str(tmp_path / "none.db")])
    assert missing.exit_code != 0 and "no database at" in missing.output


# -- the handler's call id ---------------------------------------------------------------------------


def test_a_handler_and_its_approval_predicate_see_their_call_id() -> None:
    seen: list[tuple[str, str | None]] = []

    def ask(params: object, context: ToolContext) -> bool:
        seen.append(("policy", context.call_id))
        return False

    @tool(name="effect", description="A side effect keyed by its call.", requires_approval=ask)
    def effect(params: PendingShape, *, context: ToolContext) -> ToolResult[None]:
        seen.append(("handler", context.call_id))
        return ToolResult(message="ok")

    dispatcher = ToolDispatcher([effect], session=Session())
    dispatcher.execute(ToolCall("id-1", "effect", {"x": 1}))
    dispatcher.execute(ToolCall("id-2", "effect", {"x": 2}))
    assert seen == [("policy", "id-1"), ("handler", "id-1"), ("policy", "id-2"), ("handler", "id-2")]
    assert ToolContext(session=Session()).call_id is None


def test_concurrent_calls_each_see_their_own_call_id() -> None:
    import asyncio

    seen: dict[str, str | None] = {}

    @tool(name="effect", description="Runs concurrently.")
    async def effect(params: PendingShape, *, context: ToolContext) -> ToolResult[None]:
        await asyncio.sleep(0)
        seen[str(params.x)] = context.call_id
        return ToolResult(message="ok")

    dispatcher = ToolDispatcher([effect], session=Session())
    calls = [ToolCall(f"c{i}", "effect", {"x": i}) for i in range(3)]
    asyncio.run(dispatcher.execute_concurrently(calls))
    assert seen == {"0": "c0", "1": "c1", "2": "c2"}


@dataclass(frozen=True)
class PendingShape:
    """Params of the call-id tools."""

    x: int


def test_supplied_results_and_unnamed_deciders_are_listed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "sup.db")
    ask = tool_call_turn(
        tool_call("ask_human", {"path": "/x"}, id="q1"),
        tool_call("delete_file", {"path": "/y"}, id="d1"),
        tool_call("delete_file", {"path": "/z"}, id="d2"),
    )
    with Store.open(db) as store:
        paused = evaluate(
            make_prompt(), adapter=ScriptedAdapter([ask]), session=Session(session_id="q"), store=store
        ).paused
        assert paused is not None
        q1, d1, d2 = paused.pending
        resume_sync(
            store,
            "q",
            [
                Supply(q1.call_id, q1.token, "yes"),
                Approve(d1.call_id, d1.token, {"path": "/w"}),
                Deny(d2.call_id, d2.token, "no"),
            ],
            prompt=make_prompt(),
            adapter=ScriptedAdapter([text_turn("ok")]),
        )
        records = decision_records(store)
    assert [(r.decision, r.decided_by, r.message) for r in records] == [
        ("supplied", None, "yes"),
        ("approved_with_edits", None, ""),
        ("denied", None, "no"),
    ]
    listed = CliRunner().invoke(cli, ["approvals", "--db", db])
    assert listed.exit_code == 0, listed.output
    assert "supplied by (not named)" in listed.output and "yes" in listed.output
    assert 'ran with {"path": "/w"}' in listed.output


def test_damaged_stored_decisions_and_duplicate_stored_calls_are_named(tmp_path: Path) -> None:
    with Store.open(tmp_path / "dmg.db") as store:
        paused = pause(store)
        with store.write() as conn:
            row = conn.execute(tables.paused_runs.select()).mappings().one()
            pending = json.loads(row["pending_json"])
            duplicate = pending[1]
            duplicate["call_id"] = pending[0]["call_id"]
            duplicate["token"] = approval_token(  # unkeyed: a valid token for the edited row
                store_id=pause_rows.store_id(conn),
                session_id="s1",
                seq=1,
                call_id=duplicate["call_id"],
                schema_hash=duplicate["schema_hash"],
                arguments=duplicate["arguments"],
                key=None,
            )
            conn.execute(tables.paused_runs.update().values(pending_json=json.dumps(pending)))
        with pytest.raises(ResumeError, match="two stored calls have the id 'c2'"):
            resume_sync(
                store, "s1", approve_all(paused)[:1], prompt=make_prompt(), adapter=adapter_after_pause()
            )
        with store.write() as conn:
            conn.execute(tables.paused_runs.update().values(status="resumed", decisions_json="[1]"))
        with pytest.raises(ResumeError, match="pause 1 of session 's1': the stored decisions are damaged"):
            decision_records(store)


def test_the_cli_decider_defaults_to_the_os_user_and_copes_without_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(getpass, "getuser", lambda: "osuser")
    assert default_decider() == "osuser"

    def no_user() -> str:
        raise OSError("no user")

    monkeypatch.setattr(getpass, "getuser", no_user)
    assert default_decider() is None


def test_the_approvals_command_reports_a_store_it_cannot_read(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    engine = build_engine(normalize_url(path))
    try:
        with engine.begin() as conn:
            migrate(conn, FakeClock(), migrations=MIGRATIONS[:4])
    finally:
        engine.dispose()
    listed = CliRunner().invoke(cli, ["approvals", "--db", str(path)])
    assert listed.exit_code != 0 and "SchemaVersionError" in listed.output


@pytest.mark.parametrize("token", ["é" * 64, "\udcff", 12345])
def test_a_token_that_is_not_hex_or_not_text_is_refused_cleanly(tmp_path: Path, token: object) -> None:
    with Store.open(tmp_path / "t.db") as store:
        paused = pause(store)
        decisions = [Approve("c2", token), *approve_all(paused)[1:]]  # type: ignore[arg-type]
        with pytest.raises(ResumeError, match="the token for call 'c2' does not match"):
            resume_sync(store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause())
