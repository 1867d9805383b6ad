"""The planning rules as pure functions, without session or dispatcher."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt.contrib.planning.logic import (
    PlanningError,
    add_steps,
    clean_text,
    plan_status,
    require_plan,
    setup_plan,
    update_step,
)
from weakprompt.contrib.planning.model import MAX_TEXT_LENGTH, Plan, PlanStep, StepIdCounter
from weakprompt.contrib.planning.params import AddStep, SetupPlan, UpdateStep
from weakprompt.errors import ToolValidationError

START = StepIdCounter()


def _plan(*titles: str) -> Plan:
    return setup_plan(SetupPlan(objective="ship it", initial_steps=titles), START).plan


def test_setup_numbers_steps_from_one_and_starts_active() -> None:
    change = setup_plan(SetupPlan(objective="  Write the report ", initial_steps=("a", "b", "c")), START)
    assert change.plan.objective == "Write the report"
    assert change.plan.status == "active"
    assert change.plan.step_ids() == (1, 2, 3)
    assert {step.status for step in change.plan.steps} == {"pending"}
    assert change.counter == StepIdCounter(last_step_id=3)


def test_setup_without_steps_is_active_not_completed() -> None:
    change = setup_plan(SetupPlan(objective="think"), START)
    assert change.plan.steps == ()
    assert change.plan.status == "active"
    assert change.counter == START


def test_replacing_the_plan_never_reuses_ids() -> None:
    first = setup_plan(SetupPlan(objective="one", initial_steps=("a", "b")), START)
    second = setup_plan(SetupPlan(objective="two", initial_steps=("c",)), first.counter)
    assert second.plan.step_ids() == (3,)
    assert second.plan.objective == "two"
    added = add_steps(second.plan, AddStep(steps=("d", "e")), second.counter)
    assert added.plan.step_ids() == (3, 4, 5)
    assert added.counter.last_step_id == 5


@pytest.mark.parametrize(
    "call",
    [
        lambda: add_steps(None, AddStep(steps=("x",)), START),
        lambda: update_step(None, UpdateStep(step_id=1, status="done")),
        lambda: require_plan(None),
    ],
)
def test_calls_other_than_setup_need_a_plan(call: object) -> None:
    with pytest.raises(PlanningError, match="planning_setup_plan") as info:
        call()  # type: ignore[operator]
    assert info.value.field is None
    assert isinstance(info.value, ToolValidationError)


def test_all_steps_done_completes_and_reopening_reactivates() -> None:
    plan = _plan("a", "b")
    plan = update_step(plan, UpdateStep(step_id=1, status="done"))
    assert plan.status == "active"
    plan = update_step(plan, UpdateStep(step_id=2, status="done"))
    assert plan.status == "completed"
    reopened = update_step(plan, UpdateStep(step_id=2, status="in_progress"))
    assert reopened.status == "active"
    assert reopened.steps[1].status == "in_progress"


def test_adding_a_step_to_a_completed_plan_reactivates_it() -> None:
    change = setup_plan(SetupPlan(objective="o", initial_steps=("a",)), START)
    done = update_step(change.plan, UpdateStep(step_id=1, status="done"))
    assert done.status == "completed"
    grown = add_steps(done, AddStep(steps=("b",)), change.counter)
    assert grown.plan.status == "active"
    assert grown.plan.steps[-1] == PlanStep(step_id=2, title="b", status="pending")


def test_update_renames_and_keeps_other_steps() -> None:
    plan = _plan("a", "b")
    renamed = update_step(plan, UpdateStep(step_id=2, title="  better b  "))
    assert renamed.steps == (plan.steps[0], PlanStep(step_id=2, title="better b", status="pending"))
    both = update_step(renamed, UpdateStep(step_id=1, title="A", status="in_progress"))
    assert both.steps[0] == PlanStep(step_id=1, title="A", status="in_progress")


def test_update_without_changes_is_rejected() -> None:
    with pytest.raises(PlanningError, match="Nothing to update"):
        update_step(_plan("a"), UpdateStep(step_id=1))


def test_unknown_step_id_names_the_valid_ids() -> None:
    with pytest.raises(PlanningError) as info:
        update_step(_plan("a", "b", "c"), UpdateStep(step_id=9, status="done"))
    assert info.value.field == "step_id"
    assert "9" in str(info.value)
    assert "1, 2, 3" in str(info.value)


def test_unknown_step_id_on_an_empty_plan_says_there_are_none() -> None:
    with pytest.raises(PlanningError, match="no steps yet"):
        update_step(_plan(), UpdateStep(step_id=1, status="done"))


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_blank_texts_are_rejected_naming_the_field(blank: str) -> None:
    with pytest.raises(PlanningError, match=r"^objective must not be empty") as info:
        setup_plan(SetupPlan(objective=blank), START)
    assert info.value.field == "objective"
    with pytest.raises(PlanningError, match=r"initial_steps\[1\]"):
        setup_plan(SetupPlan(objective="o", initial_steps=("fine", blank)), START)
    with pytest.raises(PlanningError, match=r"steps\[0\]"):
        add_steps(_plan(), AddStep(steps=(blank,)), START)
    with pytest.raises(PlanningError, match="title") as titled:
        update_step(_plan("a"), UpdateStep(step_id=1, title=blank))
    assert titled.value.field == "title"


def test_length_limit_counts_after_stripping() -> None:
    at_limit = "x" * MAX_TEXT_LENGTH
    assert clean_text(f"  {at_limit}  ", field="title") == at_limit
    with pytest.raises(PlanningError, match=r"title is 501 characters long; the limit is 500"):
        clean_text(at_limit + "y", field="title")


def test_add_needs_at_least_one_step() -> None:
    with pytest.raises(PlanningError) as info:
        add_steps(_plan("a"), AddStep(steps=()), START)
    assert info.value.field == "steps"


def test_a_rejected_batch_hands_out_no_ids() -> None:
    with pytest.raises(PlanningError):
        setup_plan(SetupPlan(objective="o", initial_steps=("a", "")), START)
    # The caller keeps its counter: nothing was consumed.
    assert setup_plan(SetupPlan(objective="o", initial_steps=("a",)), START).plan.step_ids() == (1,)


def test_render_lists_steps() -> None:
    text = _plan("first", "second").render()
    assert text.splitlines() == [
        "Objective: ship it",
        "Status: active",
        "1. [pending] first",
        "2. [pending] second",
    ]
    assert "none yet" in _plan().render()


statuses = st.sampled_from(["pending", "in_progress", "done"])


@given(st.lists(statuses, max_size=8))
def test_plan_status_is_completed_iff_nonempty_and_all_done(states: list[str]) -> None:
    steps = [PlanStep(step_id=i + 1, title="t", status=s) for i, s in enumerate(states)]  # type: ignore[arg-type]
    expected = "completed" if states and all(s == "done" for s in states) else "active"
    assert plan_status(steps) == expected


@given(
    st.lists(st.lists(st.text(min_size=1, max_size=5).filter(str.strip), min_size=1, max_size=4), max_size=5)
)
def test_ids_strictly_increase_across_setups_and_adds(batches: list[list[str]]) -> None:
    counter = START
    seen: list[int] = []
    plan: Plan | None = None
    for index, batch in enumerate(batches):
        if index % 2 == 0 or plan is None:
            change = setup_plan(SetupPlan(objective="o", initial_steps=tuple(batch)), counter)
        else:
            change = add_steps(plan, AddStep(steps=tuple(batch)), counter)
        plan, counter = change.plan, change.counter
        seen.extend(change.plan.step_ids()[-len(batch) :])
    assert seen == sorted(set(seen))
    assert counter.last_step_id == len(seen)
