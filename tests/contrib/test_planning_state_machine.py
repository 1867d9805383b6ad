"""Random sequences of the four planning tools through the ToolDispatcher.

A small reference model predicts which calls must fail and what the plan must
look like; invariants check ids, completion and that failures change nothing.
"""

from __future__ import annotations

import itertools

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from weakprompt.contrib.planning import MAX_TEXT_LENGTH, Plan, PlanningToolsSection, StepIdCounter
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher, ToolExecution
from weakprompt.session import Session

texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", " ", "\t\n"]),
    st.integers(MAX_TEXT_LENGTH - 2, MAX_TEXT_LENGTH + 2).map(lambda n: " " + "w" * n + " "),
)
statuses = st.sampled_from(["pending", "in_progress", "done", "done"])


def _valid(text: str) -> bool:
    return 0 < len(text.strip()) <= MAX_TEXT_LENGTH


class PlanningMachine(RuleBasedStateMachine):
    @initialize()
    def start(self) -> None:
        self.session = Session()
        self.dispatcher = ToolDispatcher(
            PlanningToolsSection(session=self.session).tools, session=self.session
        )
        self.call_ids = itertools.count()
        # Reference model: objective and [id, title, status] rows, or None before any plan.
        self.objective: str | None = None
        self.rows: list[tuple[int, str, str]] = []
        self.issued: list[int] = []  # every id handed out, in order

    # -- helpers ------------------------------------------------------------------

    def run(self, name: str, arguments: dict[str, JSONValue], *, should_succeed: bool) -> ToolExecution:
        before = self.session.state()
        execution = self.dispatcher.execute(
            ToolCall(id=f"c{next(self.call_ids)}", name=name, arguments=arguments)
        )
        assert execution.success is should_succeed, (name, arguments, execution.message)
        if not execution.success:
            assert self.session.state() == before, "a failed call changed the session"
            assert execution.result.value is None
        else:
            assert execution.result.value == self.session[Plan].latest()
        return execution

    def issue(self, count: int) -> list[int]:
        start = (self.issued[-1] if self.issued else 0) + 1
        new = list(range(start, start + count))
        self.issued.extend(new)
        return new

    # -- rules ---------------------------------------------------------------------

    @rule(objective=texts, steps=st.lists(texts, max_size=4))
    def setup(self, objective: str, steps: list[str]) -> None:
        ok = _valid(objective) and all(_valid(step) for step in steps)
        self.run(
            "planning_setup_plan", {"objective": objective, "initial_steps": list(steps)}, should_succeed=ok
        )
        if ok:
            self.objective = objective.strip()
            ids = self.issue(len(steps))
            self.rows = [
                (step_id, title.strip(), "pending") for step_id, title in zip(ids, steps, strict=True)
            ]

    @rule(steps=st.lists(texts, max_size=3))
    def add(self, steps: list[str]) -> None:
        ok = self.objective is not None and bool(steps) and all(_valid(step) for step in steps)
        self.run("planning_add_step", {"steps": list(steps)}, should_succeed=ok)
        if ok:
            ids = self.issue(len(steps))
            self.rows += [
                (step_id, title.strip(), "pending") for step_id, title in zip(ids, steps, strict=True)
            ]

    @rule(
        pick=st.integers(0, 6),
        title=st.none() | st.none() | texts,
        status=st.none() | statuses,
        stray=st.integers(0, 7).map(lambda n: n == 0),
    )
    def update(self, pick: int, title: str | None, status: str | None, stray: bool) -> None:
        existing = [row[0] for row in self.rows]
        step_id = pick + 1 if stray or not existing else existing[pick % len(existing)]
        arguments: dict[str, JSONValue] = {"step_id": step_id}
        if title is not None:
            arguments["title"] = title
        if status is not None:
            arguments["status"] = status
        ok = (
            self.objective is not None
            and (title is not None or status is not None)
            and step_id in existing
            and (title is None or _valid(title))
        )
        execution = self.run("planning_update_step", arguments, should_succeed=ok)
        if ok:
            self.rows = [
                (
                    row_id,
                    title.strip() if title is not None and row_id == step_id else row_title,
                    status if status is not None and row_id == step_id else row_status,
                )
                for row_id, row_title, row_status in self.rows
            ]
        elif (
            self.objective is not None
            and step_id not in existing
            and (title is not None or status is not None)
        ):
            assert "does not exist" in execution.message
            for row_id in existing:
                assert str(row_id) in execution.message

    @precondition(lambda self: bool(self.rows))
    @rule()
    def finish_every_step(self) -> None:
        """Several calls in a row, as one model turn would send them."""
        for step_id, _title, _status in self.rows:
            self.run("planning_update_step", {"step_id": step_id, "status": "done"}, should_succeed=True)
        self.rows = [(step_id, title, "done") for step_id, title, _status in self.rows]
        plan = self.session[Plan].latest()
        assert plan is not None and plan.status == "completed"

    @rule()
    def read(self) -> None:
        execution = self.run("planning_read_plan", {}, should_succeed=self.objective is not None)
        if self.objective is not None:
            assert isinstance(execution.result.value, Plan)

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def plan_matches_the_model(self) -> None:
        plan = self.session[Plan].latest()
        if self.objective is None:
            assert plan is None
            return
        assert plan is not None
        assert plan.objective == self.objective
        assert [(s.step_id, s.title, s.status) for s in plan.steps] == self.rows

    @invariant()
    def ids_strictly_increase_and_are_unique(self) -> None:
        assert self.issued == sorted(set(self.issued))
        plan = self.session[Plan].latest()
        if plan is not None:
            ids = plan.step_ids()
            assert all(a < b for a, b in itertools.pairwise(ids))
            assert set(ids) <= set(self.issued)
        counter = self.session[StepIdCounter].latest()
        assert (counter.last_step_id if counter else 0) == (self.issued[-1] if self.issued else 0)

    @invariant()
    def completed_iff_every_step_done(self) -> None:
        plan = self.session[Plan].latest()
        if plan is None:
            return
        every_done = bool(plan.steps) and all(step.status == "done" for step in plan.steps)
        assert (plan.status == "completed") is every_done


PlanningMachine.TestCase.settings = settings(settings(), stateful_step_count=25)
TestPlanningMachine = PlanningMachine.TestCase
