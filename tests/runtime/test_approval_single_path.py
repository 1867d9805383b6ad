"""The single approval path: however a decision arrives, one check judges it and one step carries it out.

Decisions reach a paused call four ways: an ``approve=`` callback during the
run, ``resume`` in this process, ``resume`` in a fresh store object (another
process), and the check a queue, the CLI or the inspector makes before
handing a resume to a worker (``check_decisions_for``). Each tampering below
must be refused by every way with the very same words, and an honest
approval must run the call exactly once whichever way it came: if any way had
its own checks or its own executor, one of them would disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from approval_support import adapter_after_pause, make_prompt, script
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.runtime import Approve, Decision, Deny, PausedRun, ResumeError, evaluate, resume_sync
from weakprompt.runtime.resume import check_decisions_for, paused_run
from weakprompt.session import Session
from weakprompt.store import Store

Tamper = Callable[[PausedRun], list[Decision]]


def _honest(paused: PausedRun) -> list[Decision]:
    return [Approve(call_id=p.call_id, token=p.token) for p in paused.pending]


def _swapped_tokens(paused: PausedRun) -> list[Decision]:
    first, second = paused.pending
    return [
        Approve(call_id=first.call_id, token=second.token),
        Approve(call_id=second.call_id, token=first.token),
    ]


def _one_missing(paused: PausedRun) -> list[Decision]:
    return _honest(paused)[:1]


def _decided_twice(paused: PausedRun) -> list[Decision]:
    first = paused.pending[0]
    return [*_honest(paused), Deny(call_id=first.call_id, token=first.token)]


def _unknown_call(paused: PausedRun) -> list[Decision]:
    return [*_honest(paused), Approve(call_id="nope", token="0" * 64)]


def _edited_badly(paused: PausedRun) -> list[Decision]:
    first, second = paused.pending
    return [
        Approve(call_id=first.call_id, token=first.token, arguments={"path": 3}),
        Deny(second.call_id, second.token),
    ]


TAMPERINGS: dict[str, Tamper] = {
    "swapped tokens": _swapped_tokens,
    "a call left undecided": _one_missing,
    "a call decided twice": _decided_twice,
    "a call that is not pending": _unknown_call,
}


def _paused(db: Path, session_id: str) -> PausedRun:
    with Store.open(f"sqlite:///{db}") as store:
        evaluate(
            make_prompt(),
            adapter=ScriptedAdapter(script()),
            session=Session(session_id=session_id),
            store=store,
        )
        paused = paused_run(store, session_id)
    assert paused is not None and len(paused.pending) == 2
    return paused


def _refusal(action: Callable[[], object]) -> str:
    with pytest.raises(ResumeError) as raised:
        action()
    return str(raised.value)


def _words(message: str) -> str:
    """The reason, without the 'pause N of session S' prefix that names where."""
    return message.split(": ", 1)[1]


@pytest.mark.parametrize("tamper", list(TAMPERINGS), ids=list(TAMPERINGS))
def test_every_way_of_deciding_refuses_a_tampered_decision_with_the_same_words(
    tamper: str, tmp_path: Path
) -> None:
    make = TAMPERINGS[tamper]
    db = tmp_path / "runs.db"
    reasons: dict[str, str] = {}

    paused = _paused(db, "resumed")
    with Store.open(f"sqlite:///{db}") as store:
        reasons["resume"] = _refusal(
            lambda: resume_sync(
                store, "resumed", make(paused), prompt=make_prompt(), adapter=adapter_after_pause()
            )
        )
        reasons["check before queueing"] = _refusal(
            lambda: check_decisions_for(store, "resumed", make(paused))
        )
    with Store.open(f"sqlite:///{db}") as other:  # a fresh store object: what another process sees
        reasons["resume elsewhere"] = _refusal(
            lambda: resume_sync(
                other, "resumed", make(paused), prompt=make_prompt(), adapter=adapter_after_pause()
            )
        )
    with Store.open(f"sqlite:///{db}") as store:
        reasons["approve= during the run"] = _refusal(
            lambda: evaluate(
                make_prompt(),
                adapter=ScriptedAdapter(script()),
                session=Session(session_id="inline"),
                store=store,
                approve=make,
            )
        )
    assert len({_words(reason) for reason in reasons.values()}) == 1, reasons


def test_a_bad_edit_is_refused_alike_where_the_tools_are_known(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    paused = _paused(db, "resumed")
    with Store.open(f"sqlite:///{db}") as store:
        by_resume = _refusal(
            lambda: resume_sync(
                store, "resumed", _edited_badly(paused), prompt=make_prompt(), adapter=adapter_after_pause()
            )
        )
        inline = _refusal(
            lambda: evaluate(
                make_prompt(),
                adapter=ScriptedAdapter(script()),
                session=Session(session_id="inline"),
                store=store,
                approve=_edited_badly,
            )
        )
    assert _words(by_resume) == _words(inline)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(way=st.sampled_from(["approve=", "resume"]), approve_first=st.booleans())
def test_an_honest_decision_runs_each_approved_call_once_whichever_way_it_came(
    way: str, approve_first: bool, tmp_path: Path
) -> None:
    db = tmp_path / f"{way}-{approve_first}.db"
    db.unlink(missing_ok=True)

    def decide(paused: PausedRun) -> Sequence[Decision]:
        first, second = paused.pending
        kept = first if approve_first else second
        dropped = second if approve_first else first
        return [
            Approve(call_id=kept.call_id, token=kept.token),
            Deny(call_id=dropped.call_id, token=dropped.token),
        ]

    if way == "approve=":
        with Store.open(f"sqlite:///{db}") as store:
            response = evaluate(
                make_prompt(),
                adapter=ScriptedAdapter(script()),
                session=Session(session_id="s"),
                store=store,
                approve=decide,
            )
    else:
        paused = _paused(db, "s")
        with Store.open(f"sqlite:///{db}") as store:
            response = resume_sync(
                store, "s", decide(paused), prompt=make_prompt(), adapter=adapter_after_pause()
            )
    ran = [e.event.call_id for e in response.tool_executions if e.event.name == "delete_file" and e.success]
    assert ran == (["c2"] if approve_first else ["c3"])
    assert response.text == "Done."
