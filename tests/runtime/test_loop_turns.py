"""The loop stores each model turn (reply + its tool results) in one transaction, never half of one."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest, ToolResultStored, evaluate
from weakprompt.runtime.results import ToolOutputStore
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript


@dataclass(frozen=True)
class Step:
    n: int


class Interrupt(KeyboardInterrupt):
    """A Ctrl-C arriving while a tool runs (the dispatcher reports it, then lets it through)."""


@tool(name="step", description="Do one step; step 3 is interrupted.")
def step(params: Step, *, context: ToolContext) -> ToolResult[None]:
    if params.n == 3:
        raise Interrupt
    return ToolResult(message=f"step {params.n} done")


PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="tests/loop",
        key="turns",
        sections=[MarkdownSection(title="T", key="t", template="Go.", tools=[step])],
    )
)


@pytest.fixture
def store() -> Iterator[Store]:
    with Store.open("sqlite://") as opened:
        yield opened


def write_transactions(store: Store) -> Iterator[list[list[str]]]:
    """Record, per write transaction, the SQL run inside it (from SQLite's own trace)."""
    raw = store.engine.raw_connection()
    driver = raw.driver_connection
    assert driver is not None
    transactions: list[list[str]] = []

    def trace(sql: str) -> None:
        if sql.startswith("BEGIN"):  # a file store says BEGIN IMMEDIATE, an in-memory one BEGIN
            transactions.append([])
        elif transactions and not sql.startswith(("COMMIT", "ROLLBACK")):
            transactions[-1].append(sql)

    driver.set_trace_callback(trace)
    try:
        yield transactions
    finally:
        driver.set_trace_callback(None)
        raw.close()


def test_each_model_turn_is_stored_in_one_transaction(store: Store) -> None:
    session = Session()
    calls = [tool_call("step", {"n": n}, id=f"c{n}") for n in (1, 2)]
    adapter = ScriptedAdapter([AssistantTurn(text="", tool_calls=tuple(calls)), "done"])
    tracer = write_transactions(store)
    transactions = next(tracer)
    evaluate(PROMPT, adapter=adapter, session=session, input="go", store=store)
    tracer.close()
    commit_batches = [
        sum(1 for sql in t if sql.startswith("INSERT INTO commits"))
        for t in transactions
        if any("INSERT INTO commits" in sql for sql in t)
    ]
    # [system + user], then [assistant + both results], then [final answer]
    assert commit_batches == [2, 3, 1]
    roles = [c.role for c in Transcript(store, session.session_id).log()]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]


def test_an_interrupted_turn_leaves_no_half_turn_and_the_session_resumes(store: Store) -> None:
    session = Session()
    committed: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultStored, committed.append)
    script = [
        tool_call_turn(tool_call("step", {"n": 1}, id="c1")),
        AssistantTurn(
            text="", tool_calls=(tool_call("step", {"n": 2}, id="c2"), tool_call("step", {"n": 3}, id="c3"))
        ),
    ]
    with pytest.raises(Interrupt) as failure:
        evaluate(PROMPT, adapter=ScriptedAdapter(script), session=session, input="go", store=store)
    transcript = Transcript(store, session.session_id)
    log = transcript.log()
    # turn 1 is complete; of turn 2 (reply, result c2, interrupted c3) nothing is stored
    assert [c.role for c in log] == ["system", "user", "assistant", "tool"]
    # c2 and c3 ran concurrently; c3's interrupt is raised once both settled, before any of
    # turn 2's results was staged: only the reply was, and it was dropped with its turn
    assert [e.call.id for e in committed] == ["c1"]
    # ...and no output is stored without its commit
    outputs = ToolOutputStore(store, session.session_id)
    assert [r.tool_call_id for r in outputs.list_results()] == ["c1"]
    [note] = failure.value.__notes__
    assert "was not stored: its 1 commit(s)" in note

    def answer(request: ModelRequest) -> AssistantTurn:
        # every tool call in what is sent back has its result: the conversation is valid again
        asked = {c.id for m in request.context.messages for c in m.tool_calls}
        answered = {m.tool_call_id for m in request.context.messages if m.role == "tool"}
        assert asked == answered == {"c1"}
        return text_turn("resumed")

    response = evaluate(PROMPT, adapter=FunctionAdapter(answer), session=session, store=store)
    assert response.text == "resumed"
    assert response.head == transcript.head


def test_a_commit_from_another_writer_during_a_turn_is_kept_and_shown_next(store: Store) -> None:
    session = Session()

    @tool(name="note", description="Leaves a note in the conversation from outside the loop.")
    def note(params: Step, *, context: ToolContext) -> ToolResult[None]:
        Transcript(store, session.session_id).user(f"note {params.n}")  # another writer, same session
        return ToolResult(message="noted")

    prompt: Prompt[None] = Prompt(
        PromptTemplate(
            ns="tests/loop",
            key="notes",
            sections=[MarkdownSection(title="T", key="t", template="Go.", tools=[note])],
        )
    )
    seen: list[list[str]] = []

    def model(request: ModelRequest) -> AssistantTurn:
        seen.append([m.content for m in request.context.messages if m.role == "user"])
        if len(seen) == 1:
            return tool_call_turn(tool_call("note", {"n": 1}, id="n1"))
        return text_turn("done")

    response = evaluate(prompt, adapter=FunctionAdapter(model), session=session, input="go", store=store)
    log = Transcript(store, session.session_id).log()
    assert [(c.role, c.content.content) for c in log[1:]] == [
        ("user", "go"),
        ("user", "note 1"),  # stored before the turn that was running when it arrived
        ("assistant", ""),
        ("tool", "noted"),
        ("assistant", "done"),
    ]
    assert all(b.parent == a.hash for a, b in itertools.pairwise(log))
    assert seen == [["go"], ["go", "note 1"]]  # the next model call saw it
    assert response.head == log[-1].hash


def test_the_opening_messages_move_over_a_commit_another_writer_made_meanwhile(store: Store) -> None:
    """The system message and the input are one transaction; stored after a stranger's commit, the
    run goes on from the hashes they were stored under."""
    session = Session()
    mine = Transcript(store, session.session_id)
    mine.user("earlier")  # this object's own write: its view is at the head, so it will not look again
    Transcript(store, session.session_id).assistant("a stranger's reply")
    adapter = ScriptedAdapter(
        [AssistantTurn(text="", tool_calls=(tool_call("step", {"n": 1}, id="c1"),)), "done"]
    )
    response = evaluate(PROMPT, adapter=adapter, session=session, input="go", transcript=mine)
    stored = Transcript(store, session.session_id).log()
    assert [c.content.content for c in stored][:4] == [
        "earlier",
        "a stranger's reply",
        PROMPT.render().text,
        "go",
    ]
    assert [c.parent for c in stored[1:]] == [c.hash for c in stored[:-1]]  # one unbroken chain
    assert response.head == stored[-1].hash and response.text == "done"
