"""How a session records ToolInvoked events and feeds tool results into slices."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from weakprompt.events import EventBus, ToolInvoked
from weakprompt.session import Session, SlicePolicy, append, replace_latest
from weakprompt.tools import ToolResult

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Plan:
    objective: str


@dataclass(frozen=True)
class Note:
    text: str


def invoked(session: Session | None, result: ToolResult[object], *, call_id: str = "c1") -> ToolInvoked:
    return ToolInvoked(
        prompt_name="p",
        adapter="scripted",
        name="tool",
        params=None,
        result=result,
        call_id=call_id,
        session_id=session.session_id if session else None,
        started_at=T0,
        finished_at=T0,
    )


def test_regression_tool_invoked_is_recorded_once_not_twice() -> None:
    # The ancestor appended every ToolInvoked to the session twice when it
    # was dispatched through the session; one dispatch must give one record.
    s = Session()
    event = invoked(s, ToolResult.ok(Note("x")))
    result = s.dispatch(event)
    assert result.ok
    assert s[ToolInvoked].all() == (event,)
    s.bus.dispatch(invoked(s, ToolResult.error("bad"), call_id="c2"))
    assert [e.call_id for e in s[ToolInvoked].all()] == ["c1", "c2"]


def test_regression_tool_invoked_recorded_once_even_with_extra_registrations() -> None:
    s = Session()
    s.register_reducer(ToolInvoked, ToolInvoked, append, policy=SlicePolicy.LOG)
    s.register_reducer(Note, Note, append)
    s.dispatch(invoked(s, ToolResult.ok(Note("x"))))
    assert len(s[ToolInvoked].all()) == 1
    assert s[Note].all() == (Note("x"),)


def test_tool_invoked_lives_in_a_log_slice() -> None:
    s = Session()
    assert s.policy_of(ToolInvoked) is SlicePolicy.LOG
    s.dispatch(invoked(s, ToolResult.ok(1)))
    assert ToolInvoked not in s.state()


def test_successful_result_value_feeds_reducers_of_its_type() -> None:
    s = Session()
    s.register_reducer(Plan, Plan, replace_latest)
    s.dispatch(invoked(s, ToolResult.ok(Plan("first"), message="set")))
    s.dispatch(invoked(s, ToolResult.ok(Plan("second"))))
    assert s[Plan].all() == (Plan("second"),)


def test_failed_result_never_feeds_reducers() -> None:
    s = Session()
    s.register_reducer(Plan, Plan, append)
    failed = ToolResult(message="nope", value=Plan("should not land"), success=False)
    s.dispatch(invoked(s, failed))
    assert s[Plan].all() == ()
    assert len(s[ToolInvoked].all()) == 1


def test_values_without_reducers_and_none_values_change_nothing() -> None:
    s = Session()
    s.register_reducer(Plan, Plan, append)
    s.dispatch(invoked(s, ToolResult.ok(Note("unrelated"))))
    s.dispatch(invoked(s, ToolResult.ok(None)))
    assert s.state() == {}
    assert len(s[ToolInvoked].all()) == 2


def test_failing_value_reducer_is_reported_and_the_event_is_still_logged() -> None:
    s = Session()
    s[Plan].append(Plan("kept"))

    def explode(state: tuple[Plan, ...], event: Plan) -> tuple[Plan, ...]:
        raise ValueError("plan rejected")

    s.register_reducer(Plan, Plan, explode)
    result = s.dispatch(invoked(s, ToolResult.ok(Plan("new"))))
    assert s[Plan].all() == (Plan("kept"),)
    assert len(s[ToolInvoked].all()) == 1
    (failure,) = result.errors
    assert "plan rejected" in str(failure.exception)
    assert "ToolInvoked value Plan" in failure.handler


def test_reducer_on_tool_invoked_itself_is_not_fed_the_value_again() -> None:
    s = Session()
    seen: list[object] = []

    def record(state: tuple[Note, ...], event: object) -> tuple[Note, ...]:
        seen.append(event)
        return state

    s.register_reducer(Note, object, record)
    event = invoked(s, ToolResult.ok(Note("x")))
    s.dispatch(event)
    assert seen == [event]


def test_other_sessions_tool_events_are_ignored_on_a_shared_dispatcher() -> None:
    d = EventBus()
    mine = Session(bus=d)
    theirs = Session(bus=d)
    for s in (mine, theirs):
        s.register_reducer(Plan, Plan, append)
    d.dispatch(invoked(theirs, ToolResult.ok(Plan("theirs"))))
    assert mine[ToolInvoked].all() == ()
    assert mine[Plan].all() == ()
    assert theirs[Plan].all() == (Plan("theirs"),)
    assert len(theirs[ToolInvoked].all()) == 1
