"""Resume after a crash: SIGKILL a run at random points, resume it, count side effects (specs/APPROVAL.md).

Each trial forks a child that runs an agent on a SQLite file and kills
itself (SIGKILL) at a random tick: a model call, just before or just after a
tool's side effect, or at a random moment from a timer. The parent then
resumes the run from the store until it finishes. A side effect is a line
in a file, written by the tool before its result can be stored.
"""

from __future__ import annotations

import os
import random
import signal
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import Approve, ResumeError, evaluate, resume_sync
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolResult, tool
from weakprompt.transcript import Transcript

TURNS = 3
TRIALS = 60


@dataclass(frozen=True)
class Item:
    name: str


class _Ticks:
    """Counts ticks in the child; at ``kill_at`` the process dies on the spot."""

    kill_at = 0
    count = 0
    effects = Path()


TICKS = _Ticks()


def tick() -> None:
    TICKS.count += 1
    if TICKS.count == TICKS.kill_at:
        os.kill(os.getpid(), signal.SIGKILL)


def effect(name: str) -> None:
    tick()
    with TICKS.effects.open("a") as out:
        out.write(name + "\n")
    tick()


@tool(name="charge", description="Charge a card (not idempotent).")
def charge(params: Item) -> ToolResult[None]:
    effect(params.name)
    return ToolResult(message=f"charged {params.name}")


@tool(name="index", description="Re-index (idempotent).", idempotent=True)
def index(params: Item) -> ToolResult[None]:
    effect(params.name)
    return ToolResult(message=f"indexed {params.name}")


PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="tests/crash",
        key="k",
        sections=[MarkdownSection(title="T", key="t", template="Go.", tools=[charge, index])],
    )
)


def reply(request: ModelRequest) -> AssistantTurn:
    """The model as a function of the conversation: turn i calls charge and index, then it answers."""
    tick()
    turn = sum(1 for m in request.context.messages if m.role == "assistant")
    if turn >= TURNS:
        return text_turn("done")
    return tool_call_turn(
        tool_call("charge", {"name": f"charge-{turn}"}, id=f"charge-{turn}"),
        tool_call("index", {"name": f"index-{turn}"}, id=f"index-{turn}"),
    )


def run_child(db: Path, kill_at: int, delay: float | None) -> None:
    TICKS.kill_at, TICKS.count = kill_at, 0
    with Store.open(db) as store:
        # armed once the store exists: a kill while SQLite creates the file leaves a hot journal
        # that Store.open's read-only check cannot roll back (a store matter, not a run's)
        if delay is not None:
            threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL)).start()
        evaluate(
            PROMPT, adapter=FunctionAdapter(reply), session=Session(session_id="s"), store=store, input="Go."
        )


def crash_once(db: Path, kill_at: int, delay: float | None) -> int:
    pid = os.fork()
    if pid == 0:  # the child: run, and die at the chosen point (or finish)
        code = 0
        try:
            run_child(db, kill_at, delay)
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return status


def finish(db: Path) -> None:
    TICKS.kill_at = 0
    with Store.open(db) as store:
        try:
            resume_sync(store, "s", prompt=PROMPT, adapter=FunctionAdapter(reply))
        except ResumeError as exc:  # the child got as far as its final answer
            assert "final answer" in str(exc) or "no stored run" in str(exc)
            if "no stored run" in str(exc):  # killed before anything was stored: run it again
                evaluate(
                    PROMPT,
                    adapter=FunctionAdapter(reply),
                    session=Session(session_id="s"),
                    store=store,
                    input="Go.",
                )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_sigkill_at_random_points_then_resume(tmp_path: Path) -> None:
    rng = random.Random(18)
    killed = 0
    interrupted_seen = 0
    for trial in range(TRIALS):
        db = tmp_path / f"run-{trial}.db"
        TICKS.effects = tmp_path / f"effects-{trial}.log"
        TICKS.effects.touch()
        timed = trial % 3 == 0
        status = crash_once(
            db, 0 if timed else rng.randint(1, 4 * TURNS + 4), rng.uniform(0.0, 0.15) if timed else None
        )
        killed += os.WIFSIGNALED(status)
        finish(db)
        with Store.open(db) as store:
            compiled = Transcript(store, "s").compile().messages
        assert compiled[-1].role == "assistant" and compiled[-1].content == "done", trial
        results = Counter(m.tool_call_id for m in compiled if m.role == "tool")
        assert all(n == 1 for n in results.values()), (trial, results)  # one stored result per call
        ran = Counter(TICKS.effects.read_text().split())
        for message in compiled:
            if message.role != "tool" or message.tool_call_id is None:
                continue
            name = message.tool_call_id
            if name.startswith("charge"):
                assert ran[name] <= 1, (trial, name, ran)  # a non-idempotent call never runs twice
                if "interrupted" in message.content:
                    assert message.is_error
                    interrupted_seen += 1
                else:
                    assert ran[name] == 1 and not message.is_error, (trial, name, ran)
            else:
                assert ran[name] >= 1 and not message.is_error  # idempotent: run again when interrupted
    assert killed >= TRIALS // 2  # most trials really were killed midway
    assert interrupted_seen > 0  # some killed a non-idempotent call between its effect and its commit


@tool(name="wire_money", description="Wire money (needs approval).", requires_approval=True)
def wire_money(params: Item) -> ToolResult[None]:
    effect(params.name)
    return ToolResult(message=f"wired {params.name}")


GUARDED: Prompt[None] = Prompt(
    PromptTemplate(
        ns="tests/crash",
        key="guarded",
        sections=[MarkdownSection(title="T", key="t", template="Go.", tools=[charge, wire_money])],
    )
)


def guarded_reply(request: ModelRequest) -> AssistantTurn:
    tick()
    if any(m.role == "assistant" for m in request.context.messages):
        return text_turn("done")
    return tool_call_turn(
        tool_call("charge", {"name": "charge-0"}, id="charge-0"),
        tool_call("wire_money", {"name": "wire-0"}, id="wire-0"),
    )


def in_child(work: Callable[[], object]) -> int:
    pid = os.fork()
    if pid == 0:
        try:
            work()
        finally:
            os._exit(0)
    return os.waitpid(pid, 0)[1]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_call_held_for_approval_in_a_crashed_turn_is_held_again_not_interrupted(tmp_path: Path) -> None:
    db = tmp_path / "guarded.db"
    TICKS.effects = tmp_path / "effects.log"
    TICKS.effects.touch()

    def work() -> None:
        TICKS.kill_at, TICKS.count = 3, 0  # tick 1: the model, 2: before charge's effect, 3: after it
        with Store.open(db) as store:
            evaluate(
                GUARDED, adapter=FunctionAdapter(guarded_reply), session=Session(session_id="g"), store=store
            )

    assert os.WIFSIGNALED(in_child(work))
    TICKS.kill_at = 0
    with Store.open(db) as store:
        response = resume_sync(store, "g", prompt=GUARDED, adapter=FunctionAdapter(guarded_reply))
        assert response.paused is not None
        assert [p.call_id for p in response.paused.pending] == ["wire-0"]
        results = {m.tool_call_id: m for m in Transcript(store, "g").compile().messages if m.role == "tool"}
    assert results["charge-0"].is_error and "interrupted" in results["charge-0"].content
    assert TICKS.effects.read_text().split() == ["charge-0"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_crash_while_resuming_a_pause_resumes_from_the_stored_decisions(tmp_path: Path) -> None:
    db = tmp_path / "decided.db"
    TICKS.effects = tmp_path / "effects.log"
    TICKS.effects.touch()
    TICKS.kill_at = 0
    with Store.open(db) as store:
        first = evaluate(
            GUARDED, adapter=FunctionAdapter(guarded_reply), session=Session(session_id="d"), store=store
        )
    assert first.paused is not None
    (waiting,) = first.paused.pending

    def work() -> None:
        TICKS.kill_at, TICKS.count = 2, 0  # tick 1: before wire_money's effect, 2: after it
        with Store.open(db) as store:
            resume_sync(
                store,
                "d",
                [Approve("wire-0", waiting.token)],
                prompt=GUARDED,
                adapter=FunctionAdapter(guarded_reply),
            )

    assert os.WIFSIGNALED(in_child(work))
    TICKS.kill_at = 0
    with Store.open(db) as store:
        with pytest.raises(ResumeError, match="already decided"):
            resume_sync(
                store,
                "d",
                [Approve("wire-0", waiting.token)],
                prompt=GUARDED,
                adapter=FunctionAdapter(guarded_reply),
            )
        done = resume_sync(store, "d", prompt=GUARDED, adapter=FunctionAdapter(guarded_reply))
        assert done.text == "done"
        results = {m.tool_call_id: m for m in Transcript(store, "d").compile().messages if m.role == "tool"}
    assert results["wire-0"].is_error and "interrupted" in results["wire-0"].content
    assert TICKS.effects.read_text().split().count("wire-0") == 1
