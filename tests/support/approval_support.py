"""A small agent whose `delete_file` tool needs approval, shared by the approval and resume tests.

Importable by name (``approval_support``) so that a subprocess can resume a
run from the store with the same prompt, tools and session slice types.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.messages import AssistantTurn
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import CallDeferred, ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Deleted:
    """A STATE slice the tools write: persisted with a pause, restored on resume."""

    path: str


@dataclass(frozen=True)
class PathParams:
    path: str


def side_effects() -> Path | None:
    where = os.environ.get("WEAKPROMPT_TEST_EFFECTS")
    return Path(where) if where else None


def _record(line: str) -> None:
    path = side_effects()
    if path is not None:
        with path.open("a") as out:
            out.write(line + "\n")


@tool(name="delete_file", description="Delete a file.", requires_approval=True)
def delete_file(params: PathParams, *, context: ToolContext) -> ToolResult[Deleted]:
    _record(f"delete {params.path}")
    context.session[Deleted].append(Deleted(params.path))
    return ToolResult(message=f"deleted {params.path}", value=Deleted(params.path))


@tool(name="list_files", description="List files.")
def list_files(params: PathParams) -> ToolResult[None]:
    return ToolResult(message=f"{params.path}: a.txt b.txt")


@tool(name="ask_human", description="Ask a person; the answer comes later.")
def ask_human(params: PathParams) -> ToolResult[None]:
    raise CallDeferred(f"waiting for an answer about {params.path}")


def make_prompt() -> Prompt[None]:
    return Prompt(
        PromptTemplate(
            ns="tests/approval",
            key="files",
            sections=[
                MarkdownSection(
                    title="Files",
                    key="files",
                    template="Tidy up.",
                    tools=[list_files, delete_file, ask_human],
                )
            ],
        )
    )


def script() -> list[AssistantTurn]:
    """List, then delete two files (one turn with a free call and two that need approval), then answer."""
    return [
        tool_call_turn(
            tool_call("list_files", {"path": "/tmp"}, id="c1"),
            tool_call("delete_file", {"path": "/tmp/a.txt"}, id="c2"),
            tool_call("delete_file", {"path": "/tmp/b.txt"}, id="c3"),
        ),
        text_turn("Done."),
    ]


def adapter_after_pause() -> ScriptedAdapter:
    """The adapter a resume needs: only the replies after the pause."""
    return ScriptedAdapter(script()[1:])


def pause_again() -> ScriptedAdapter:
    """After the first decisions, the model asks to delete one more file: a second pause."""
    return ScriptedAdapter([tool_call_turn(tool_call("delete_file", {"path": "/tmp/c.txt"}, id="c4"))])
