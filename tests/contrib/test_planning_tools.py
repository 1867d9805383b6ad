"""The planning tools run through the real ToolDispatcher against a real Session."""

from __future__ import annotations

import json
from collections.abc import Iterator

import attrs
import pytest

from weakprompt.contrib.planning import (
    MAX_TEXT_LENGTH,
    PLANNING_TOOL_NAMES,
    AddStep,
    Plan,
    PlanChange,
    PlanningToolsSection,
    PlanStep,
    ReadPlan,
    SetupPlan,
    StepIdCounter,
    UpdateStep,
    current_plan,
    planning_tools,
    register_planning_state,
    step_counter,
)
from weakprompt.contrib.planning.state import apply_change
from weakprompt.errors import ConfigurationError
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher, ToolExecution
from weakprompt.serde import schema
from weakprompt.session import Session
from weakprompt.tools import Tool, ToolContext, ToolResult


class Harness:
    """A session with the planning section and a dispatcher over its tools."""

    def __init__(self, *extra: Tool[object, object]) -> None:
        self.session = Session(session_id="planning-test")
        self.section = PlanningToolsSection(session=self.session)
        self.dispatcher = ToolDispatcher((*self.section.tools, *extra), session=self.session)
        self._ids = iter(range(1, 10_000))

    def call(self, name: str, **arguments: JSONValue) -> ToolExecution:
        return self.dispatcher.execute(ToolCall(id=f"c{next(self._ids)}", name=name, arguments=arguments))

    def setup(self, objective: str = "Ship the release", *steps: str) -> ToolExecution:
        return self.call("planning_setup_plan", objective=objective, initial_steps=list(steps))

    @property
    def plan(self) -> Plan | None:
        return self.session[Plan].latest()


@pytest.fixture
def harness() -> Harness:
    return Harness()


def _properties(node: JSONValue) -> Iterator[tuple[str, dict[str, JSONValue]]]:
    """Every (name, property schema) pair anywhere in a JSON schema."""
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict):
            for name, prop in props.items():
                assert isinstance(prop, dict)
                yield name, prop
        for value in node.values():
            yield from _properties(value)
    elif isinstance(node, list):
        for item in node:
            yield from _properties(item)


# -- definitions -------------------------------------------------------------------


def test_the_four_tools_in_order() -> None:
    assert tuple(tool.name for tool in planning_tools()) == PLANNING_TOOL_NAMES
    assert PLANNING_TOOL_NAMES == (
        "planning_setup_plan",
        "planning_add_step",
        "planning_update_step",
        "planning_read_plan",
    )


@pytest.mark.parametrize("tool", planning_tools(), ids=lambda tool: tool.name)
def test_every_param_field_description_reaches_the_tool_schema(tool: Tool[object, object]) -> None:
    parameters = tool.spec()["parameters"]
    assert isinstance(parameters, dict)
    expected = {field.name: field.metadata["description"] for field in attrs.fields(tool.params_type)}
    advertised = {name: prop.get("description") for name, prop in _properties(parameters)}
    assert advertised == expected
    assert all(isinstance(text, str) and text for text in expected.values())


def test_every_result_field_is_described_including_nested_steps() -> None:
    described = dict(_properties(schema(Plan)))
    assert set(described) == {"objective", "status", "steps", "step_id", "title"}
    for name, prop in _properties(schema(Plan)):
        assert prop.get("description"), f"{name} has no description"


@pytest.mark.parametrize("tool", planning_tools(), ids=lambda tool: tool.name)
def test_every_tool_has_a_typed_example(tool: Tool[object, object]) -> None:
    assert tool.examples
    assert tool.result_type is Plan
    for example in tool.examples:
        assert isinstance(example.output, Plan)


def test_examples_are_consistent_with_the_rules() -> None:
    """Replaying the examples in order produces the outputs they advertise."""
    h = Harness()
    setup, add, update, read = (tool.examples[0] for tool in planning_tools())
    assert isinstance(setup.input, SetupPlan)
    assert (
        h.call(
            "planning_setup_plan", **attrs.asdict(setup.input, recurse=False, value_serializer=_listify)
        ).result.value
        == setup.output
    )
    assert isinstance(add.input, AddStep)
    assert h.call("planning_add_step", steps=list(add.input.steps)).result.value == add.output
    assert isinstance(update.input, UpdateStep)
    assert (
        h.call("planning_update_step", step_id=update.input.step_id, status=update.input.status).result.value
        == update.output
    )
    assert isinstance(read.input, ReadPlan)
    assert h.call("planning_read_plan").result.value == read.output


def _listify(_instance: object, _field: object, value: object) -> object:
    return list(value) if isinstance(value, tuple) else value  # pyright: ignore[reportUnknownArgumentType]


@pytest.mark.parametrize("flag", [False, True])
def test_accepts_overrides_reaches_every_tool(flag: bool) -> None:
    assert {tool.accepts_overrides for tool in planning_tools(accepts_overrides=flag)} == {flag}


# -- behaviour -------------------------------------------------------------------------


def test_setup_creates_a_plan_in_the_session(harness: Harness) -> None:
    execution = harness.setup("  Ship the release  ", "Write notes", " Tag it ")
    assert execution.success
    expected = Plan(
        objective="Ship the release",
        status="active",
        steps=(
            PlanStep(step_id=1, title="Write notes", status="pending"),
            PlanStep(step_id=2, title="Tag it", status="pending"),
        ),
    )
    assert harness.plan == expected
    assert execution.result.value == expected
    assert "Plan created with steps 1, 2." in execution.message
    assert "2. [pending] Tag it" in execution.message


def test_setup_replaces_and_ids_are_never_reused(harness: Harness) -> None:
    harness.setup("first", "a", "b", "c")
    replaced = harness.setup("second", "d")
    assert replaced.success
    assert "Plan replaced" in replaced.message
    assert harness.plan is not None
    assert harness.plan.objective == "second"
    assert harness.plan.step_ids() == (4,)
    harness.call("planning_add_step", steps=["e"])
    assert harness.plan.step_ids() == (4, 5)
    assert harness.session[StepIdCounter].latest() == StepIdCounter(last_step_id=5)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("planning_add_step", {"steps": ["x"]}),
        ("planning_update_step", {"step_id": 1, "status": "done"}),
        ("planning_read_plan", {}),
    ],
)
def test_other_tools_need_a_plan(harness: Harness, name: str, arguments: dict[str, JSONValue]) -> None:
    execution = harness.call(name, **arguments)
    assert not execution.success
    assert execution.message == "There is no plan yet: call planning_setup_plan first."
    assert harness.session.state() == {}


def test_read_returns_the_plan_object(harness: Harness) -> None:
    harness.setup("goal", "one")
    execution = harness.call("planning_read_plan")
    assert execution.success
    assert isinstance(execution.result.value, Plan)
    assert execution.result.value == harness.plan
    assert "1. [pending] one" in execution.message


def test_completion_follows_the_steps(harness: Harness) -> None:
    harness.setup("goal", "one", "two")
    harness.call("planning_update_step", step_id=1, status="done")
    assert harness.plan is not None and harness.plan.status == "active"
    finished = harness.call("planning_update_step", step_id=2, status="done")
    assert harness.plan.status == "completed"
    assert "now completed" in finished.message
    reopened = harness.call("planning_update_step", step_id=1, status="in_progress")
    assert harness.plan.status == "active"
    assert "now active" in reopened.message
    harness.call("planning_update_step", step_id=1, status="done")
    assert harness.plan.status == "completed"
    grown = harness.call("planning_add_step", steps=["three", "four"])
    assert "Added steps 3, 4. The plan is now active." in grown.message
    assert harness.plan.status == "active"


def test_update_renames_with_stripping(harness: Harness) -> None:
    harness.setup("goal", "one")
    assert harness.call("planning_update_step", step_id=1, title="  renamed  ").success
    assert harness.plan is not None
    assert harness.plan.steps == (PlanStep(step_id=1, title="renamed", status="pending"),)


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("planning_setup_plan", {"objective": "   "}, "objective"),
        ("planning_setup_plan", {"objective": "x" * (MAX_TEXT_LENGTH + 1)}, "objective"),
        ("planning_setup_plan", {"objective": "ok", "initial_steps": ["a", " "]}, "initial_steps[1]"),
        ("planning_add_step", {"steps": ["fine", "x" * (MAX_TEXT_LENGTH + 1)]}, "steps[1]"),
        ("planning_add_step", {"steps": []}, "steps"),
        ("planning_update_step", {"step_id": 1, "title": ""}, "title"),
        ("planning_update_step", {"step_id": 1, "title": "y" * 501}, "title"),
    ],
)
def test_bad_text_fails_naming_the_field_and_changes_nothing(
    harness: Harness, name: str, arguments: dict[str, JSONValue], field: str
) -> None:
    harness.setup("goal", "one")
    before = harness.session.state()
    execution = harness.call(name, **arguments)
    assert not execution.success
    assert execution.message.startswith(field + " ")
    assert harness.session.state() == before


def test_titles_at_the_limit_are_accepted(harness: Harness) -> None:
    title = "z" * MAX_TEXT_LENGTH
    assert harness.setup(title, f"  {title}  ").success
    assert harness.plan is not None
    assert harness.plan.steps[0].title == title


def test_unknown_step_id_names_the_valid_ids(harness: Harness) -> None:
    harness.setup("goal", "a", "b")
    harness.setup("goal again", "c", "d")
    execution = harness.call("planning_update_step", step_id=1, status="done")
    assert not execution.success
    assert execution.message == "step_id 1 does not exist; valid step ids are 3, 4."


def test_update_without_changes_fails(harness: Harness) -> None:
    harness.setup("goal", "a")
    execution = harness.call("planning_update_step", step_id=1)
    assert not execution.success
    assert "Nothing to update" in execution.message


def test_schema_violations_are_rejected_before_the_handler(harness: Harness) -> None:
    harness.setup("goal", "a")
    before = harness.session.state()
    bad_status = harness.call("planning_update_step", step_id=1, status="finished")
    extra_key = harness.call("planning_read_plan", verbose=True)
    assert not bad_status.success and "status" in bad_status.message
    assert not extra_key.success and "verbose" in extra_key.message
    assert harness.session.state() == before


def test_every_call_publishes_one_tool_invoked(harness: Harness) -> None:
    harness.call("planning_read_plan")
    harness.setup("goal", "a")
    harness.call("planning_update_step", step_id=9, status="done")
    from weakprompt.events import ToolInvoked

    log = harness.session[ToolInvoked].all()
    assert [(event.name, event.success) for event in log] == [
        ("planning_read_plan", False),
        ("planning_setup_plan", True),
        ("planning_update_step", False),
    ]


# -- one model turn, several calls ---------------------------------------------------------


def _broken_handler(params: AddStep, *, context: ToolContext) -> ToolResult[Plan]:
    """Changes the plan through the proper channel, then fails."""
    plan = current_plan(context.session)
    assert plan is not None
    extra = PlanStep(step_id=step_counter(context.session).last_step_id + 1, title="ghost", status="pending")
    apply_change(
        context.session,
        PlanChange(attrs.evolve(plan, steps=(*plan.steps, extra)), StepIdCounter(extra.step_id)),
    )
    raise RuntimeError("broke after writing")


BROKEN = Tool(name="broken_add", description="Adds a step, then crashes.", handler=_broken_handler)


def test_a_turn_of_several_calls_applies_in_order_and_a_failure_rolls_back_only_itself() -> None:
    harness = Harness(BROKEN)
    turn = [
        ToolCall(
            id="1",
            name="planning_setup_plan",
            arguments=json.dumps({"objective": "o", "initial_steps": ["a"]}),
        ),
        ToolCall(id="2", name="planning_add_step", arguments={"steps": ["b"]}),
        ToolCall(id="3", name="broken_add", arguments={"steps": ["c"]}),
        ToolCall(id="4", name="planning_update_step", arguments={"step_id": 7, "status": "done"}),
        ToolCall(id="5", name="planning_update_step", arguments={"step_id": 2, "status": "in_progress"}),
        ToolCall(id="6", name="planning_add_step", arguments={"steps": ["c"]}),
    ]
    results = [harness.dispatcher.execute(call) for call in turn]
    assert [r.success for r in results] == [True, True, False, False, True, True]
    assert "broke after writing" in results[2].message
    # Call 3 wrote step 3 before crashing: rolled back, so id 3 is handed out again by call 6.
    assert harness.plan == Plan(
        objective="o",
        status="active",
        steps=(
            PlanStep(step_id=1, title="a", status="pending"),
            PlanStep(step_id=2, title="b", status="in_progress"),
            PlanStep(step_id=3, title="c", status="pending"),
        ),
    )
    assert harness.session[StepIdCounter].latest() == StepIdCounter(last_step_id=3)


# -- session wiring ------------------------------------------------------------------------


def test_tools_register_the_state_on_any_session() -> None:
    session = Session()
    dispatcher = ToolDispatcher(planning_tools(), session=session)
    execution = dispatcher.execute(ToolCall(id="1", name="planning_setup_plan", arguments={"objective": "o"}))
    assert execution.success
    assert session[Plan].latest() == Plan(objective="o", status="active")


def test_registration_is_idempotent() -> None:
    session = Session()
    register_planning_state(session)
    register_planning_state(session)
    session.dispatch(PlanChange(Plan(objective="o", status="active"), StepIdCounter(2)))
    assert session[Plan].all() == (Plan(objective="o", status="active"),)
    assert session[StepIdCounter].all() == (StepIdCounter(2),)


def test_counter_never_moves_backwards() -> None:
    session = Session()
    register_planning_state(session)
    session.dispatch(PlanChange(Plan(objective="o", status="active"), StepIdCounter(5)))
    session.dispatch(PlanChange(Plan(objective="p", status="active"), StepIdCounter(2)))
    assert session[StepIdCounter].latest() == StepIdCounter(5)
    assert current_plan(session) == Plan(objective="p", status="active")


def test_a_plan_seeded_by_hand_still_gets_fresh_ids() -> None:
    session = Session()
    session[Plan].seed([Plan(objective="o", status="active", steps=(PlanStep(7, "old", "done"),))])
    assert step_counter(session) == StepIdCounter(7)
    dispatcher = ToolDispatcher(planning_tools(), session=session)
    dispatcher.execute(ToolCall(id="1", name="planning_add_step", arguments={"steps": ["new"]}))
    plan = session[Plan].latest()
    assert plan is not None and plan.step_ids() == (7, 8)


def test_a_closed_session_fails_the_call_instead_of_losing_the_plan() -> None:
    session = Session()
    register_planning_state(session)
    session.close()
    with pytest.raises(ConfigurationError, match="did not record"):
        apply_change(session, PlanChange(Plan(objective="o", status="active"), StepIdCounter()))
    dispatcher = ToolDispatcher(planning_tools(), session=session)
    execution = dispatcher.execute(ToolCall(id="1", name="planning_setup_plan", arguments={"objective": "o"}))
    assert not execution.success
    assert "did not record" in execution.message
    assert session[Plan].latest() is None


def test_sessions_sharing_an_event_dispatcher_keep_separate_plans() -> None:
    from weakprompt.events import EventBus

    shared = EventBus()
    first, second = Session(bus=shared), Session(bus=shared)
    PlanningToolsSection(session=first)
    PlanningToolsSection(session=second)
    ToolDispatcher(planning_tools(), session=first).execute(
        ToolCall(id="1", name="planning_setup_plan", arguments={"objective": "first", "initial_steps": ["a"]})
    )
    assert first[Plan].latest() is not None
    assert second[Plan].latest() is None
    assert second[StepIdCounter].latest() is None
