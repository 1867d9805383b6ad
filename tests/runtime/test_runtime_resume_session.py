"""Where resume puts the stored session state: the session given, or a new one handed back (issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from approval_support import Deleted, adapter_after_pause, make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.errors import ConfigurationError
from weakprompt.runtime.approval import Approve, PausedRun
from weakprompt.runtime.loop import evaluate
from weakprompt.runtime.resume import paused_run, resume_sync
from weakprompt.session import Session
from weakprompt.store import Store


def _pause(store: Store) -> PausedRun:
    session = Session(session_id="s1")
    session[Deleted].append(Deleted("/before"))
    response = evaluate(
        make_prompt(), adapter=ScriptedAdapter(script()), session=session, store=store, input="Tidy /tmp."
    )
    assert response.paused is not None and response.session is session
    return response.paused


def _approve_all(paused: PausedRun) -> list[Approve]:
    return [Approve(p.call_id, p.token) for p in paused.pending]


def test_resume_without_a_session_hands_back_the_session_holding_the_restored_state(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        paused = _pause(store)
        response = resume_sync(
            store, "s1", _approve_all(paused), prompt=make_prompt(), adapter=adapter_after_pause()
        )
        assert response.text == "Done."
        assert response.session is not None and response.session.session_id == "s1"
        assert response.session[Deleted].all() == (
            Deleted("/before"),
            Deleted("/tmp/a.txt"),
            Deleted("/tmp/b.txt"),
        )


def test_resume_restores_into_the_session_given(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        paused = _pause(store)
        mine = Session(session_id="s1")
        response = resume_sync(
            store,
            "s1",
            _approve_all(paused),
            prompt=make_prompt(),
            adapter=adapter_after_pause(),
            session=mine,
        )
        assert response.session is mine
        assert mine[Deleted].all() == (Deleted("/before"), Deleted("/tmp/a.txt"), Deleted("/tmp/b.txt"))


def test_resume_refuses_a_session_of_another_id_and_leaves_the_pause_waiting(tmp_path: Path) -> None:
    with Store.open(tmp_path / "runs.db") as store:
        paused = _pause(store)
        with pytest.raises(ConfigurationError, match=r"session= has id 'other'.*session 's1'"):
            resume_sync(
                store,
                "s1",
                _approve_all(paused),
                prompt=make_prompt(),
                adapter=adapter_after_pause(),
                session=Session(session_id="other"),
            )
        assert paused_run(store, "s1") is not None
