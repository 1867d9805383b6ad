"""Prompts and adapters the durable tests queue by reference (``durable_fixtures:...``).

A worker subprocess imports them by name, so this module is importable on
its own. The model and the tools count what they do in files named by
``WEAKPROMPT_DURABLE_COUNTS`` (a directory): one line per finished model
call and per tool side effect, so a test can tell a replayed call from a
repeated one.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Tally:
    """A STATE slice the tool changes: a replayed call must leave it as the first run did."""

    total: int


@dataclass(frozen=True)
class BumpParams:
    step: int


def _counts() -> Path | None:
    where = os.environ.get("WEAKPROMPT_DURABLE_COUNTS")
    return Path(where) if where else None


def _note(name: str, line: str) -> None:
    folder = _counts()
    if folder is not None:
        with (folder / name).open("a") as out:
            out.write(f"{line} {os.getpid()}\n")
            out.flush()
            os.fsync(out.fileno())


def _pause() -> None:
    delay = float(os.environ.get("WEAKPROMPT_DURABLE_DELAY", "0"))
    if delay:
        time.sleep(delay)


@tool(name="bump", description="Add one to the tally.")
def bump(params: BumpParams, *, context: ToolContext) -> ToolResult[Tally]:
    _pause()
    before = context.session[Tally].latest()
    total = (before.total if before is not None else 0) + 1
    context.session[Tally].seed((Tally(total),))
    _note("tools", f"{context.session.session_id} {params.step} {time.time():.4f}")
    return ToolResult(message=f"tally {total} after step {params.step}", value=Tally(total))


@tool(name="delete_everything", description="Needs a person's approval.", requires_approval=True)
def delete_everything(params: BumpParams, *, context: ToolContext) -> ToolResult[None]:
    _note("deletes", f"{context.session.session_id} {params.step} {time.time():.4f}")
    return ToolResult(message=f"deleted (step {params.step})")


def counter_prompt(rounds: int = 3) -> Prompt[None]:
    """The model calls ``bump`` ``rounds`` times, one call per turn, then answers."""
    del rounds  # the model reads it from the input; the prompt is the same
    return Prompt(
        PromptTemplate(
            ns="tests/durable",
            key="counter",
            sections=[MarkdownSection(title="Count", key="count", template="Count up.", tools=[bump])],
        )
    )


def approval_prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/durable",
            key="approval",
            sections=[
                MarkdownSection(title="Admin", key="admin", template="Tidy.", tools=[bump, delete_everything])
            ],
        )
    )


def broken_prompt() -> Prompt[None]:
    raise RuntimeError("this factory is broken on purpose")


def _reply(request: ModelRequest) -> AssistantTurn:
    _pause()
    messages = request.context.messages
    done = sum(1 for m in messages if m.role == "tool")
    user = next((m.content for m in messages if m.role == "user"), "")
    words = dict(word.split("=", 1) for word in user.split() if "=" in word)
    rounds = int(words.get("rounds", "3"))
    _note("model", f"{words.get('id', '?')} {done} {time.time():.4f}")
    if done < rounds:
        return tool_call_turn(tool_call("bump", {"step": done}, id=f"call-{done}"))
    return text_turn(f"counted {done}")


def counter_adapter() -> FunctionAdapter:
    return FunctionAdapter(_reply, name="counter")


def _approval_reply(request: ModelRequest) -> AssistantTurn:
    messages = request.context.messages
    done = sum(1 for m in messages if m.role == "tool")
    wanted = 2 if any(m.role == "user" and "twice" in m.content for m in messages) else 1
    _note("model", f"approval {done} {time.time():.4f}")
    if done < wanted:
        return tool_call_turn(tool_call("delete_everything", {"step": done}, id=f"call-del-{done}"))
    return text_turn("all tidy")


def approval_adapter() -> FunctionAdapter:
    return FunctionAdapter(_approval_reply, name="approval")


class Unpicklable(Exception):
    """An exception that cannot be stored as it is (it holds a lock)."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        import threading

        self.lock = threading.Lock()


@tool(name="flaky", description="Fails in a way that cannot be pickled.")
def flaky(params: BumpParams) -> ToolResult[None]:
    raise Unpicklable(f"flaky step {params.step}")


@tool(name="flaky_async", description="Fails as flaky does, from a coroutine.")
async def flaky_async(params: BumpParams) -> ToolResult[None]:
    raise Unpicklable(f"flaky step {params.step}")


@tool(name="cancel_me", description="Cancels its own workflow the first time (a stand-in for a crash).")
async def cancel_me(params: BumpParams, *, context: ToolContext) -> ToolResult[Tally]:
    from dbos import DBOS

    _note("tools", f"{context.session.session_id} {params.step} {time.time():.4f}")
    before = context.session[Tally].latest()
    total = (before.total if before is not None else 0) + 1
    context.session[Tally].seed((Tally(total),))
    folder = _counts()
    flag = None if folder is None else folder / f"cancelled-{params.step}"
    if (
        flag is not None
        and params.step == int(os.environ.get("WEAKPROMPT_DURABLE_CANCEL_AT", "1"))
        and not flag.exists()
    ):
        flag.write_text("once")
        workflow = DBOS.workflow_id
        assert workflow is not None
        await DBOS.cancel_workflow_async(workflow)
    return ToolResult(message=f"tally {total}", value=Tally(total))


def tools_prompt(tool_name: str) -> Prompt[None]:
    tools = {"flaky": flaky, "flaky_async": flaky_async, "cancel_me": cancel_me}
    return Prompt(
        PromptTemplate(
            ns="tests/durable",
            key=f"tools-{tool_name}",
            sections=[MarkdownSection(title="Go", key="go", template="Go.", tools=[tools[tool_name]])],
        )
    )


def _tool_reply(request: ModelRequest) -> AssistantTurn:
    messages = request.context.messages
    done = sum(1 for m in messages if m.role == "tool")
    user = next((m.content for m in messages if m.role == "user"), "")
    words = dict(word.split("=", 1) for word in user.split() if "=" in word)
    _note("model", f"{words.get('id', '?')} {done} {time.time():.4f}")
    if done < int(words.get("rounds", "1")):
        return tool_call_turn(tool_call(words.get("tool", "flaky"), {"step": done}, id=f"call-{done}"))
    last = next(m.content for m in reversed(messages) if m.role == "tool")
    return text_turn(f"done: {last}")


def tool_adapter() -> FunctionAdapter:
    return FunctionAdapter(_tool_reply, name="tools")


def _failing_reply(request: ModelRequest) -> AssistantTurn:
    from weakprompt.errors import ProviderError

    raise ProviderError("the provider is down")


def failing_adapter() -> FunctionAdapter:
    return FunctionAdapter(_failing_reply, name="failing")


def _pair_reply(request: ModelRequest) -> AssistantTurn:
    """Two ``cancel_me`` calls per turn, for ``rounds`` turns."""
    messages = request.context.messages
    done = sum(1 for m in messages if m.role == "tool")
    user = next((m.content for m in messages if m.role == "user"), "")
    words = dict(word.split("=", 1) for word in user.split() if "=" in word)
    _note("model", f"{words.get('id', '?')} {done} {time.time():.4f}")
    if done < 2 * int(words.get("rounds", "1")):
        return tool_call_turn(
            tool_call("cancel_me", {"step": done}, id=f"call-{done}"),
            tool_call("cancel_me", {"step": done + 1}, id=f"call-{done + 1}"),
        )
    last = next(m.content for m in reversed(messages) if m.role == "tool")
    return text_turn(f"done: {last}")


def pair_adapter() -> FunctionAdapter:
    return FunctionAdapter(_pair_reply, name="pairs")


COUNTER_PROMPT = counter_prompt()
COUNTER_ADAPTER = counter_adapter()
NOT_A_FACTORY = 3
