"""prompt_state_machine: rules are a prompt's tools; built-in and user invariants find planted bugs."""

from __future__ import annotations

import dataclasses
import itertools
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import invariant, run_state_machine_as_test

from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.serde import Meta
from weakprompt.session import Session
from weakprompt.testing import PromptStateMachine, prompt_state_machine
from weakprompt.tools import Tool, ToolContext, ToolResult

QUICK = settings(max_examples=15, stateful_step_count=15, deadline=None)
# Planted bugs must be found within the active profile's number of examples. The explain
# phase (which re-runs the failure many times to annotate it) is left out to keep these fast.
DEFAULT = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=[phase for phase in Phase if phase is not Phase.explain],
    report_multiple_bugs=False,
)


@dataclasses.dataclass(frozen=True)
class Todo:
    id: int
    title: str
    done: bool = False
    tags: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Added:
    todo: Todo


@dataclasses.dataclass(frozen=True)
class Completed:
    id: int


@dataclasses.dataclass(frozen=True)
class AddTodo:
    title: Annotated[str, Meta(pattern=r"^[a-c]{1,2}$")]


@dataclasses.dataclass(frozen=True)
class TodoRef:
    id: Annotated[int, Meta(ge=1, le=4)]


@dataclasses.dataclass(frozen=True)
class TagTodo:
    id: Annotated[int, Meta(ge=1, le=4)]
    tag: Literal["urgent", "later"]


def fold_added(todos: tuple[Todo, ...], event: Added) -> tuple[Todo, ...]:
    return (*todos, event.todo)


def fold_completed(todos: tuple[Todo, ...], event: Completed) -> tuple[Todo, ...]:
    return tuple(dataclasses.replace(t, done=True) if t.id == event.id else t for t in todos)


def todo_session() -> Session:
    session = Session()
    session.register_reducer(Todo, Added, fold_added)
    session.register_reducer(Todo, Completed, fold_completed)
    return session


def find(context: ToolContext, todo_id: int) -> Todo | None:
    matches = context.session[Todo].where(lambda todo: todo.id == todo_id)
    return matches[0] if matches else None


def add_todo(params: AddTodo, *, context: ToolContext) -> ToolResult[Added]:
    todos = context.session[Todo].all()
    next_id = max((todo.id for todo in todos), default=0) + 1  # derived from the session: replays agree
    return ToolResult.ok(Added(Todo(next_id, params.title)))


def complete_todo(params: TodoRef, *, context: ToolContext) -> ToolResult[Completed]:
    todo = find(context, params.id)
    if todo is None:
        return ToolResult.error(f"no todo {params.id}")
    if todo.done:
        return ToolResult.error(f"todo {params.id} is already done")
    return ToolResult.ok(Completed(params.id))


def tag_todo(params: TagTodo, *, context: ToolContext) -> ToolResult[None]:
    todo = find(context, params.id)
    if todo is None:
        return ToolResult.error(f"no todo {params.id}")
    if params.tag in todo.tags:
        return ToolResult.error(f"todo {params.id} already has {params.tag}")
    context.session[Todo].seed(
        [
            dataclasses.replace(t, tags=[*t.tags, params.tag]) if t.id == params.id else t
            for t in context.session[Todo].all()
        ]
    )
    return ToolResult(message="tagged")


def todo_template(*, add: Any = add_todo, tag: Any = tag_todo) -> PromptTemplate[Any]:
    def has_todos(_params: object, session: Session | None) -> bool:
        return session is not None and bool(session[Todo].all())

    return PromptTemplate(
        ns="tests",
        key="todo.board",
        sections=[
            MarkdownSection(
                title="Todos",
                key="todos",
                template="Keep the user's todo list.",
                tools=[Tool(name="add_todo", description="Add a todo.", handler=add)],
            ),
            MarkdownSection(
                title="Manage",
                key="manage",
                template="Complete or tag existing todos.",
                enabled=has_todos,
                tools=[
                    Tool(name="complete_todo", description="Complete a todo.", handler=complete_todo),
                    Tool(name="tag_todo", description="Tag a todo.", handler=tag),
                ],
            ),
        ],
    )


def test_the_machine_has_one_rule_per_tool_and_the_mistake_rules() -> None:
    machine = prompt_state_machine(todo_template(), session_factory=todo_session)

    assert issubclass(machine, PromptStateMachine)
    assert machine.__name__ == "TodoBoardToolsMachine"
    names = {name for name in dir(machine) if name.startswith("call_")}
    assert names == {
        "call_add_todo",
        "call_complete_todo",
        "call_tag_todo",
        "call_with_invalid_arguments",
        "call_unknown_tool",
    }
    assert "call_with_invalid_arguments" not in dir(
        prompt_state_machine(todo_template(), session_factory=todo_session, invalid_calls=False)
    )


def test_a_sound_prompt_passes_every_built_in_check() -> None:
    run_state_machine_as_test(
        prompt_state_machine(todo_template(), session_factory=todo_session), settings=QUICK
    )


def test_tools_only_run_while_their_section_offers_them() -> None:
    offered: list[tuple[str, ...]] = []

    class Watch(prompt_state_machine(todo_template(), session_factory=todo_session)):  # type: ignore[misc]
        @invariant()
        def manage_tools_need_todos(self) -> None:
            for record in self.calls:
                offered.append((record.name,))
            if not self.session[Todo].all():
                assert all(c.name not in {"complete_todo", "tag_todo"} or not c.success for c in self.calls)

    run_state_machine_as_test(Watch, settings=QUICK)
    assert ("complete_todo",) in offered or ("tag_todo",) in offered


# -- planted bugs -----------------------------------------------------------------------------------


def tag_in_place(params: TagTodo, *, context: ToolContext) -> ToolResult[None]:
    """Bug: edits the todo's tag list in place before checking, then fails."""
    todo = find(context, params.id)
    if todo is None:
        return ToolResult.error(f"no todo {params.id}")
    todo.tags.append(params.tag)
    if todo.tags.count(params.tag) > 1:
        return ToolResult.error(f"todo {params.id} already has {params.tag}")
    return ToolResult(message="tagged")


def test_a_change_a_failed_call_made_in_place_is_found() -> None:
    machine = prompt_state_machine(todo_template(tag=tag_in_place), session_factory=todo_session)

    with pytest.raises(AssertionError, match=r"failed call #\d+ to 'tag_todo' left state changed"):
        run_state_machine_as_test(machine, settings=DEFAULT)


_global_ids = itertools.count(1)


def add_with_global_ids(params: AddTodo, *, context: ToolContext) -> ToolResult[Added]:
    """Bug: ids come from a module-level counter, not from the session."""
    return ToolResult.ok(Added(Todo(next(_global_ids), params.title)))


def test_state_kept_outside_the_session_breaks_the_fold_and_is_found() -> None:
    machine = prompt_state_machine(todo_template(add=add_with_global_ids), session_factory=todo_session)

    with pytest.raises(AssertionError, match="the session is not the fold of its successful calls"):
        run_state_machine_as_test(machine, settings=DEFAULT)


def test_the_fold_check_can_be_turned_off() -> None:
    machine = prompt_state_machine(
        todo_template(add=add_with_global_ids), session_factory=todo_session, replay=False
    )
    run_state_machine_as_test(machine, settings=QUICK)


def test_a_user_invariant_finds_a_domain_bug() -> None:
    """add_todo accepts a title that is already on the board; the user's rule says titles are unique."""

    class UniqueTitles(prompt_state_machine(todo_template(), session_factory=todo_session)):  # type: ignore[misc]
        @invariant()
        def titles_are_unique(self) -> None:
            titles = [todo.title for todo in self.session[Todo].all()]
            assert len(titles) == len(set(titles)), f"duplicate titles: {titles}"

    with pytest.raises(AssertionError, match="duplicate titles"):
        run_state_machine_as_test(UniqueTitles, settings=DEFAULT)


# -- prompts with params and resources ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Folder:
    name: str


@dataclasses.dataclass(frozen=True)
class WriteNote:
    text: Annotated[str, Meta(max_length=10)]


def write_note(params: WriteNote, *, context: ToolContext) -> ToolResult[None]:
    fs = context.filesystem
    assert fs is not None
    folder = context.prompt.params(Folder) if context.prompt is not None else None
    assert folder is not None
    path = f"{folder.name}/{len(fs.list_dir(folder.name)) if fs.exists(folder.name) else 0}.txt"
    fs.write_text(path, params.text)
    if params.text.startswith("!"):
        return ToolResult.error("notes must not shout")  # the dispatcher restores the filesystem
    return ToolResult(message="written")


def test_params_are_bound_and_resources_are_part_of_the_checked_state() -> None:
    template = PromptTemplate(
        ns="tests",
        key="notes",
        sections=[
            MarkdownSection(
                title="Notes",
                key="notes",
                template="Write notes into $name.",
                params_type=Folder,
                tools=[Tool(name="write_note", description="Write a note.", handler=write_note)],
            )
        ],
    )
    machine = prompt_state_machine(
        template,
        Folder("inbox"),
        resources_factory=lambda: ResourceRegistry({Filesystem: InMemoryFilesystem()}),
    )
    run_state_machine_as_test(machine, settings=QUICK)
    run_state_machine_as_test(
        prompt_state_machine(
            Prompt(template),
            Folder("inbox"),
            resources_factory=lambda: ResourceRegistry({Filesystem: InMemoryFilesystem()}),
        ),
        settings=QUICK,
    )


_used_codes: set[str] = set()


@dataclasses.dataclass(frozen=True)
class Redeem:
    code: Literal["A", "B"]


def redeem_once(params: Redeem, *, context: ToolContext) -> ToolResult[None]:
    """Bug: remembers redeemed codes in a module-level set instead of the session."""
    if params.code in _used_codes:
        return ToolResult.error(f"code {params.code} was already redeemed")
    _used_codes.add(params.code)
    return ToolResult(message="redeemed")


def test_a_success_that_cannot_be_replayed_is_found() -> None:
    template = PromptTemplate(
        ns="tests",
        key="codes",
        sections=[
            MarkdownSection(
                title="Codes",
                key="codes",
                template="Redeem codes.",
                tools=[Tool(name="redeem", description="Redeem a code.", handler=redeem_once)],
            )
        ],
    )

    def fresh_world() -> Session:
        _used_codes.clear()  # each run starts clean, so the failure is reproducible
        return Session()

    machine = prompt_state_machine(template, session_factory=fresh_world)
    with pytest.raises(
        AssertionError, match=r"successful call 1 \(redeem .*\) failed when the successful calls"
    ):
        run_state_machine_as_test(machine, settings=DEFAULT)


def test_the_machine_exposes_calls_and_the_current_render() -> None:
    machine = prompt_state_machine(todo_template(), session_factory=todo_session)()

    assert machine.rendered.tool_names == ("add_todo",)
    assert machine.rendered is machine.rendered  # cached until the next call
    machine.dispatch("add_todo", {"title": "a"})
    machine.dispatch("complete_todo", '{"id": 9}')

    assert machine.rendered.tool_names == ("add_todo", "complete_todo", "tag_todo")
    assert [record.name for record in machine.successful_calls] == ["add_todo"]
    assert [record.arguments for record in machine.calls] == ['{"title": "a"}', '{"id": 9}']
    assert machine.offers("tag_todo") and not machine.offers("open_sections")


def test_a_prompt_without_tools_only_tries_unknown_names() -> None:
    template = PromptTemplate(
        ns="tests", key="empty", sections=[MarkdownSection(title="Intro", key="intro", template="Hello.")]
    )
    machine = prompt_state_machine(template)

    assert {name for name in dir(machine) if name.startswith("call_")} == {"call_unknown_tool"}
    run_state_machine_as_test(machine, settings=QUICK)
