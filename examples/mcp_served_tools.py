"""A prompt whose tools any MCP client can call: ``weakprompt mcp serve examples/mcp_served_tools.py:prompt``.

Each MCP connection gets its own session, so the notes one client takes are
not another's. ``add_note_then_fail`` writes a note and then fails: the
dispatcher rolls the note back, and the client gets an ``isError`` result.
"""

from __future__ import annotations

from dataclasses import dataclass

from weakprompt import MarkdownSection, Prompt, PromptTemplate, ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Note:
    text: str


@dataclass(frozen=True)
class Notes:
    notes: list[str]


@tool
def add_note(text: str, *, context: ToolContext) -> ToolResult[Notes]:
    """Keep a note for this session.

    Args:
        text: What to remember.
    """
    context.session[Note].append(Note(text))
    return ToolResult.ok(Notes([n.text for n in context.session[Note].all()]))


@tool
def list_notes(*, context: ToolContext) -> ToolResult[Notes]:
    """The notes kept so far in this session."""
    return ToolResult.ok(Notes([n.text for n in context.session[Note].all()]))


@tool
def add_note_then_fail(text: str, *, context: ToolContext) -> ToolResult[Notes]:
    """Keep a note, then fail (the note is rolled back).

    Args:
        text: What to try to remember.
    """
    context.session[Note].append(Note(text))
    raise RuntimeError(f"could not file {text!r}")


prompt = Prompt(
    PromptTemplate(
        ns="examples",
        key="notes",
        sections=[
            MarkdownSection(
                title="Notes",
                key="notes",
                template="Keep notes for the user.",
                tools=[add_note, list_notes, add_note_then_fail],
            )
        ],
    )
)


if __name__ == "__main__":
    import asyncio

    from weakprompt.mcp import PromptServer

    asyncio.run(PromptServer(prompt).serve_stdio())
