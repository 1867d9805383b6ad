"""Testing your own tools with weakprompt.testing: copy this file next to your tools.

Needs ``pip install "weakprompt[testing]" pytest``; the fixtures used below
(``session``, ``store``, ``transcript``) come with the package's pytest plugin.
Run: ``pytest examples/test_my_tools.py``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import pytest
from hypothesis import given, settings
from hypothesis.stateful import invariant

from weakprompt import (
    MarkdownSection,
    Meta,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    ToolCall,
    ToolContext,
    ToolResult,
    Transcript,
    evaluate,
    tool,
)
from weakprompt.jsontypes import JSONObject
from weakprompt.runtime import ToolDispatcher
from weakprompt.testing import (
    arguments_for,
    assert_tool_called,
    assert_transcript,
    check_tool,
    prompt_state_machine,
    script,
)

# -- the tools under test (in your project they live in your own package) -------------------------


@dataclass(frozen=True)
class Note:
    id: int
    text: str


@dataclass(frozen=True)
class NoteDeleted:
    id: int


@dataclass(frozen=True)
class AddNote:
    text: Annotated[str, Meta(min_length=1, max_length=80, description="The note's text.")]


@dataclass(frozen=True)
class DeleteNote:
    id: Annotated[int, Meta(ge=1, description="Id of the note to delete.")]


@tool
def add_note(params: AddNote, *, context: ToolContext) -> ToolResult[Note]:
    """Add a note to the user's notebook."""
    notes = context.session[Note].all()
    return ToolResult.ok(Note(max((n.id for n in notes), default=0) + 1, params.text))


@tool
def delete_note(params: DeleteNote, *, context: ToolContext) -> ToolResult[NoteDeleted]:
    """Delete one note by id."""
    if not context.session[Note].where(lambda note: note.id == params.id):
        return ToolResult.error(f"there is no note {params.id}")
    return ToolResult.ok(NoteDeleted(params.id))


def notebook_session() -> Session:
    session = Session()
    session.register_reducer(Note, Note, lambda notes, note: (*notes, note))
    session.register_reducer(
        Note, NoteDeleted, lambda notes, gone: tuple(n for n in notes if n.id != gone.id)
    )
    return session


notebook = PromptTemplate(
    ns="examples",
    key="notebook",
    sections=[
        MarkdownSection(title="Notes", key="notes", template="Keep notes.", tools=[add_note, delete_note])
    ],
)

# -- the tests -----------------------------------------------------------------------------------------


def test_each_tool_keeps_the_dispatcher_contract() -> None:
    for each in (add_note, delete_note):
        check_tool(each, session_factory=notebook_session, max_examples=50)


@settings(max_examples=50)
@given(arguments=arguments_for(add_note))
def test_any_valid_add_note_call_adds_exactly_that_note(arguments: JSONObject) -> None:
    session = notebook_session()
    ToolDispatcher([add_note], session=session).execute(
        ToolCall(id="c1", name="add_note", arguments=arguments)
    )
    assert [note.text for note in session[Note].all()] == [arguments["text"]]


class NotebookMachine(prompt_state_machine(notebook, session_factory=notebook_session)):  # type: ignore[misc]
    @invariant()
    def ids_are_unique(self) -> None:
        ids = [note.id for note in self.session[Note].all()]
        assert len(ids) == len(set(ids))


TestNotebook = NotebookMachine.TestCase
TestNotebook.settings = settings(max_examples=25, stateful_step_count=20, deadline=None)


@pytest.fixture
def session() -> Session:
    """Overrides the plugin's bare session; ``transcript`` then follows this one."""
    return notebook_session()


def test_a_scripted_conversation(session: Session, store: Store, transcript: Transcript) -> None:
    model = script().call(add_note, AddNote("buy milk")).call(delete_note, {"id": 7}).answer("Noted.")

    evaluate(Prompt(notebook), adapter=model.adapter(), session=session, input="Remember milk", store=store)

    assert_tool_called(session, "add_note", params=AddNote("buy milk"), success=True)
    assert_tool_called(session, "delete_note", times=1, success=False)
    assert_transcript(
        transcript,
        [
            ("user", "Remember milk"),
            ("assistant", ...),
            ("tool", ...),
            ("assistant", ...),
            ("tool", ...),
            ("assistant", "Noted."),
        ],
        roles=("user", "assistant", "tool"),
    )
