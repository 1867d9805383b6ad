"""Human approval: a `delete_file` tool pauses the run; a second command approves it and the run finishes.

    python examples/approval_delete_file.py run --db runs.db --dir /tmp/demo   # pauses, shows the call
    python examples/approval_delete_file.py approve --db runs.db --by alice    # approves and finishes

The second step can also be the CLI, against the same database:

    weakprompt transcript show --db runs.db --session demo
    weakprompt approve examples/approval_delete_file.py:PROMPT --db runs.db --session demo \\
        --adapter examples/approval_delete_file.py:after_approval --by alice

A scripted model keeps it offline: it asks to delete `notes.txt`, then answers.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from weakprompt import (
    MarkdownSection,
    Prompt,
    PromptTemplate,
    ScriptedAdapter,
    Session,
    Store,
    ToolResult,
    evaluate,
    tool,
)
from weakprompt.adapters.testing import text_turn, tool_call, tool_call_turn
from weakprompt.runtime import Approve, paused_run, resume_sync

SESSION = "demo"


@dataclass(frozen=True)
class FileParams:
    path: str


@tool(name="delete_file", description="Delete a file.", requires_approval=True)
def delete_file(params: FileParams) -> ToolResult[None]:
    Path(params.path).unlink()
    return ToolResult(message=f"deleted {params.path}")


PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="examples",
        key="approval",
        sections=[MarkdownSection(title="Files", key="files", template="Clean up.", tools=[delete_file])],
    )
)


def after_approval() -> ScriptedAdapter:
    """The model's reply once the deletion is decided."""
    return ScriptedAdapter([text_turn("notes.txt is gone.")])


def run(db: str, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / "notes.txt"
    target.write_text("old notes\n")
    model = ScriptedAdapter([tool_call_turn(tool_call("delete_file", {"path": str(target)}, id="del-1"))])
    with Store.open(db) as store:
        response = evaluate(
            PROMPT, adapter=model, session=Session(session_id=SESSION), store=store, input="Tidy."
        )
    assert response.paused is not None
    for waiting in response.paused.pending:
        print(f"paused: {waiting.tool}({waiting.arguments}) waits for approval (call {waiting.call_id})")
    print(f"file still there: {target.exists()}")


def approve(db: str, by: str) -> None:
    with Store.open(db) as store:
        paused = paused_run(store, SESSION)
        if paused is None:
            raise SystemExit(f"session {SESSION!r} is not paused")
        decisions = [Approve(p.call_id, p.token) for p in paused.pending]
        response = resume_sync(
            store, SESSION, decisions, prompt=PROMPT, adapter=after_approval(), decided_by=by
        )
    print(f"approved by {by}; final answer: {response.text}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=["run", "approve"])
    parser.add_argument("--db", default="runs.db")
    parser.add_argument("--dir", default="demo-files")
    parser.add_argument("--by", default="operator")
    args = parser.parse_args()
    if args.command == "run":
        run(args.db, Path(args.dir))
    else:
        approve(args.db, args.by)


if __name__ == "__main__":
    main()
