"""``weakprompt run`` prints the reply while it streams: text piece by piece, each call when complete."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner
from rich.console import Console

from weakprompt.cli import cli
from weakprompt.cli.live import LivePrinter
from weakprompt.messages import ToolCall, Usage
from weakprompt.runtime import (
    ModelTurnCompleted,
    TextDelta,
    ToolCallReady,
    ToolResultStored,
    TurnCommitted,
    UsageReported,
)

ADD = ToolCall(id="c1", name="add", arguments={"a": 2, "b": 2})
LATE = ToolCall(id="c2", name="echo", arguments={"text": "hi"})
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _turn(number: int, text: str, *calls: ToolCall) -> ModelTurnCompleted:
    return ModelTurnCompleted(
        prompt_name="p",
        adapter="function",
        model="m",
        turn=number,
        text=text,
        tool_calls=calls,
        usage=Usage(input_tokens=7, output_tokens=3, model_calls=1),
        finish_reason="tool_calls" if calls else "stop",
        commit_hash="h",
        session_id="s",
        created_at=NOW,
    )


def _printer() -> tuple[LivePrinter, io.StringIO]:
    out = io.StringIO()
    return LivePrinter(Console(file=out, width=200, highlight=False, color_system=None)), out


def test_streamed_text_and_calls_are_printed_once_then_the_turn_adds_its_usage() -> None:
    printer, out = _printer()
    for piece in ("Adding ", "the ", "numbers."):
        printer.on_event(TextDelta(turn=1, text=piece))
    printer.on_event(ToolCallReady(turn=1, index=0, call=ADD))
    usage = Usage(input_tokens=7, output_tokens=3, model_calls=1)
    printer.on_event(UsageReported(turn=1, usage=usage, total=usage))  # the turn's own line shows usage
    printer.on_event(TurnCommitted(turn=1, head="h", commit_hashes=("h",)))
    printer.on_turn(_turn(1, "Adding the numbers.", ADD, LATE))
    printer.on_event(TextDelta(turn=2, text="Four"))
    printer.on_result(
        ToolResultStored(
            prompt_name="p",
            turn=1,
            call=ADD,
            content='{"total":4}',
            is_error=False,
            commit_hash="h",
            session_id="s",
            created_at=NOW,
        )
    )
    text = out.getvalue()
    assert text.count("Adding the numbers.") == 1
    lines = text.splitlines()
    assert lines[0].strip("─ ") == "turn 1"
    assert lines[1] == "assistant: Adding the numbers."
    assert lines[2].startswith("→ call add(")
    assert lines[3].startswith("→ call echo(")  # completed with the turn, not streamed: shown at its end
    assert lines[4] == "function/m · 7 in / 3 out tokens · tool_calls"
    assert lines[5].strip("─ ") == "turn 2"
    assert lines[6] == "assistant: Four"  # a result ends the open line first
    assert lines[7].startswith("← result add")


def test_a_turn_that_was_not_streamed_is_printed_whole() -> None:
    printer, out = _printer()
    printer.on_turn(_turn(1, "whole answer"))
    text = out.getvalue()
    assert "turn 1 · function/m · 7 in / 3 out tokens · stop" in text
    assert "assistant: whole answer" in text


MODULE = """
from loop_support import arithmetic_prompt
from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn

prompt = arithmetic_prompt()


async def reply(request):
    if request.context.messages[-1].role != "tool":
        return tool_call_turn(tool_call("add", {"a": 2, "b": 2}, id="c1"), text="Let me add.")
    return "Two plus two is four."


def streaming():
    return FunctionAdapter(reply)
"""


def test_run_streams_text_before_the_turn_ends(tmp_path: Path) -> None:
    path = tmp_path / "streaming_module.py"
    path.write_text(MODULE)
    result = CliRunner().invoke(
        cli, ["run", f"{path}:prompt", "--adapter", f"{path}:streaming"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.count("assistant: Let me add.") == 1
    assert out.index("assistant: Let me add.") < out.index("→ call add") < out.index("← result add")
    assert out.index("assistant: Two plus two is four.") < out.index("· stop")
    assert "2 model call(s), 1 tool call(s) (0 failed)" in out
