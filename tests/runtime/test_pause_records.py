"""One reader of stored pauses and decisions (runtime.pause_records) for ``weakprompt approvals``,
``transcript show`` and the inspector; a ``decided_by`` no store can keep is refused up front."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from approval_support import adapter_after_pause, make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.cli import cli
from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.runtime import (
    APPROVAL_KEY,
    ApprovalNote,
    Approve,
    PausedRun,
    ResumeError,
    approval_note,
    decision_records,
    evaluate,
    paused_run,
    resume_sync,
    stored_pauses,
)
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


def pause(store: Store, session_id: str = "s1") -> PausedRun:
    response = evaluate(
        make_prompt(), adapter=ScriptedAdapter(script()), session=Session(session_id=session_id), store=store
    )
    assert response.paused is not None
    return response.paused


def test_decision_records_are_the_calls_of_the_pause_records(tmp_path: Path) -> None:
    with Store.open(tmp_path / "r.db") as store:
        first = pause(store, "a")
        pause(store, "b")
        resume_sync(
            store,
            "a",
            [Approve(p.call_id, p.token) for p in first.pending],
            prompt=make_prompt(),
            adapter=adapter_after_pause(),
            decided_by="carol",
        )
        pauses = stored_pauses(store)
        records = decision_records(store)
        notes = [approval_note(c.metadata or {}) for c in Transcript(store, "a").log()]
    assert records == [call for p in pauses for call in p.calls]
    assert [(p.session_id, p.status, p.decided_by, p.problem) for p in pauses] == [
        ("a", "decided", "carol", None),
        ("b", "waiting", None, None),
    ]
    assert pauses[0].waiting == () and len(pauses[0].decided) == 2
    assert [c.action for c in pauses[1].waiting] == ["pending", "pending"]
    assert [n for n in notes if n is not None] == [ApprovalNote(decision="approved", decided_by="carol")] * 2


def test_a_damaged_decision_time_is_shown_as_damaged_and_refused_by_decision_records(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    with Store.open(path) as store:
        paused = pause(store)
        decisions = [Approve(p.call_id, p.token) for p in paused.pending]
        resume_sync(
            store, "s1", decisions, prompt=make_prompt(), adapter=adapter_after_pause(), decided_by="d"
        )
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE paused_runs SET resumed_at = 'yesterday'")
    with Store.open(path, read_only=True) as store:
        (found,) = stored_pauses(store)
        assert found.problem == "the decision time 'yesterday' cannot be read"
        assert [(c.decision, c.decided_by, c.decided_at) for c in found.calls] == [
            ("approved", "d", None)
        ] * 2
        with pytest.raises(ResumeError, match=r"pause 1 of session 's1': .*'yesterday' cannot be read"):
            decision_records(store)


_objects = st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)


@given(
    decision=st.sampled_from(["approved", "approved_with_edits", "denied", "supplied", "interrupted"]),
    decided_by=st.none() | st.text(max_size=10),
    message=st.none() | st.text(max_size=10),
    original=st.none() | _objects,
    arguments=st.none() | _objects,
)
def test_an_approval_note_reads_back_as_it_was_written(
    decision: str,
    decided_by: str | None,
    message: str | None,
    original: JSONObject | None,
    arguments: JSONObject | None,
) -> None:
    note = ApprovalNote(
        decision=decision,
        decided_by=decided_by,
        message=message,
        original_arguments=original,
        arguments=arguments,
    )
    assert approval_note({APPROVAL_KEY: note.to_json()}) == note


@pytest.mark.parametrize("value", [None, "approved", ["approved"], {"decision": 3}, {"decided_by": "x"}])
def test_a_metadata_value_of_another_shape_has_no_approval_note(value: JSONValue) -> None:
    assert approval_note({} if value is None else {APPROVAL_KEY: value}) is None


def test_decided_by_with_a_lone_surrogate_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.db") as store:
        paused = pause(store)
        decisions = [Approve(p.call_id, p.token) for p in paused.pending]
        for who, match in (
            ("\ud800", r"decided_by holds a lone surrogate \(\\ud800\) at character 0"),
            (42, "decided_by must be text or None, not int"),
        ):
            with pytest.raises(ResumeError, match=match):
                resume_sync(
                    store,
                    "s1",
                    decisions,
                    prompt=make_prompt(),
                    adapter=adapter_after_pause(),
                    decided_by=who,  # pyright: ignore[reportArgumentType]
                )
        assert paused_run(store, "s1") == paused
        assert [p.status for p in stored_pauses(store)] == ["waiting"]


def test_the_cli_refuses_a_lone_surrogate_in_by(tmp_path: Path) -> None:
    db = str(tmp_path / "c.db")
    with Store.open(db) as store:
        pause(store)
    args = ["approve", "approval_support:make_prompt", "--db", db, "--session", "s1"]
    result = CliRunner().invoke(
        cli, [*args, "--adapter", "approval_support:adapter_after_pause", "--by", "a\udcff"]
    )
    assert result.exit_code == 2
    assert "--by" in result.output and "lone surrogate" in result.output
    with Store.open(db, read_only=True) as store:
        assert [p.status for p in stored_pauses(store)] == ["waiting"]
