"""Printing an evaluation as it happens, from the events the loop publishes.

Two paths feed the same printer. The session's dispatcher delivers each
finished model turn, tool result, opened section and rejected answer. When
the loop streams (``run(..., on_event=...)``), :meth:`LivePrinter.on_event`
also gets the reply while it is written: its text piece by piece and each
tool call as soon as its arguments are complete, so a turn's text is on the
screen before the turn ends and is not printed again when it does.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console

from ..events import (
    AdapterFellBack,
    EventBus,
    ModelCallRetried,
    ModelTurnCompleted,
    OutputRejected,
    SectionsExpanded,
    TextDelta,
    ToolCallReady,
    ToolResultStored,
)
from ..jsontypes import JSONValue
from ..messages import ToolCall
from ..runtime.run_events import RunEvent
from .terminal import markup_text

__all__ = ["LivePrinter", "call_text", "format_arguments", "shorten"]

_MAX_SHOWN = 600


def shorten(text: str, limit: int = _MAX_SHOWN) -> str:
    """``text`` cut to ``limit`` characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"


def format_arguments(arguments: str | Mapping[str, JSONValue]) -> str:
    """Tool-call arguments as compact JSON (raw text when the model sent broken JSON)."""
    return ToolCall(id="", name="", arguments=arguments).arguments_json()


class LivePrinter:
    """Subscribes to one event bus and prints turns, tool calls and results."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._turns = 0  # model turns finished so far
        self._streaming = False  # the current turn has been printed piece by piece
        self._line_open = False  # streamed text waits for its line to end
        self._shown: set[str] = set()  # ids of the calls already printed in this turn

    def attach(self, bus: EventBus) -> None:
        bus.subscribe(ModelTurnCompleted, self.on_turn)
        bus.subscribe(ToolResultStored, self.on_result)
        bus.subscribe(SectionsExpanded, self.on_expanded)
        bus.subscribe(OutputRejected, self.on_rejected)
        bus.subscribe(ModelCallRetried, self.on_retry)
        bus.subscribe(AdapterFellBack, self.on_fallback)

    def on_retry(self, event: ModelCallRetried) -> None:
        """A model call that failed transiently, and how long until the next try."""
        self._end_line()
        self._console.print(
            f"[magenta]retry[/magenta] {markup_text(event.provider)} attempt {event.attempt} failed "
            f"({markup_text(event.error_type)}: {markup_text(shorten(event.error, 200))}); "
            f"trying again in {event.wait_seconds:.1f}s"
        )

    def on_fallback(self, event: AdapterFellBack) -> None:
        """A fallback adapter moving on to its next adapter."""
        self._end_line()
        self._console.print(
            f"[magenta]fallback[/magenta] {markup_text(event.from_adapter)}/"
            f"{markup_text(event.from_model)} failed ({markup_text(event.error_type)}); "
            f"asking {markup_text(event.to_adapter)}/{markup_text(event.to_model)}"
        )

    def on_event(self, event: RunEvent[object]) -> None:
        """A piece of the reply's text, or a tool call with complete arguments; other run events: nothing."""
        if isinstance(event, TextDelta):
            self._start_streamed_turn()
            if not self._line_open:
                self._console.print("[bold]assistant:[/bold] ", end="")
                self._line_open = True
            self._console.print(markup_text(event.text), end="", soft_wrap=True)
        elif isinstance(event, ToolCallReady):
            self._start_streamed_turn()
            self._end_line()
            self._console.print(f"[yellow]→ call[/yellow] {call_text(event.call)}")
            self._shown.add(event.call.id)

    def _start_streamed_turn(self) -> None:
        if not self._streaming:
            self._streaming = True
            self._console.rule(f"turn {self._turns + 1}", style="cyan")

    def _end_line(self) -> None:
        if self._line_open:
            self._console.print()
            self._line_open = False

    def on_turn(self, event: ModelTurnCompleted) -> None:
        self._turns = event.turn
        if self._streaming:
            self._finish_streamed_turn(event)
            return
        usage = event.usage
        self._console.rule(
            f"turn {event.turn} · {markup_text(event.adapter)}/{markup_text(event.model)} · "
            f"{usage.input_tokens} in / {usage.output_tokens} out tokens · {event.finish_reason}",
            style="cyan",
        )
        if event.text:
            self._console.print(f"[bold]assistant:[/bold] {markup_text(shorten(event.text))}")
        for call in event.tool_calls:
            self._console.print(f"[yellow]→ call[/yellow] {call_text(call)}")

    def _finish_streamed_turn(self, event: ModelTurnCompleted) -> None:
        """The turn's text and calls are on screen already: add its usage and any call not yet shown."""
        self._end_line()
        for call in event.tool_calls:
            if call.id not in self._shown:
                self._console.print(f"[yellow]→ call[/yellow] {call_text(call)}")
        usage = event.usage
        self._console.print(
            f"[dim]{markup_text(event.adapter)}/{markup_text(event.model)} · {usage.input_tokens} in / "
            f"{usage.output_tokens} out tokens · {event.finish_reason}[/dim]"
        )
        self._streaming = False
        self._shown.clear()

    def on_result(self, event: ToolResultStored) -> None:
        self._end_line()
        mark = "[red]← failed[/red]" if event.is_error else "[green]← result[/green]"
        self._console.print(f"{mark} {markup_text(event.call.name)}: {markup_text(shorten(event.content))}")

    def on_expanded(self, event: SectionsExpanded) -> None:
        self._console.print(
            f"[magenta]opened sections[/magenta] {markup_text(', '.join(event.section_keys))}; "
            f"tools now: {markup_text(', '.join(event.tool_names) or 'none')}"
        )

    def on_rejected(self, event: OutputRejected) -> None:
        then = "asking the model to correct it" if event.retrying else "no corrective turn left"
        self._console.print(
            f"[red]answer rejected[/red] (turn {event.turn}): {markup_text(shorten(event.errors))}; {then}"
        )


def call_text(call: ToolCall, limit: int = 300) -> str:
    """``name(arguments) id=...`` as rich markup, arguments shortened to ``limit``."""
    arguments = markup_text(shorten(call.arguments_json(), limit))  # the call's own encoding
    return f"{markup_text(call.name)}({arguments}) [dim]id={markup_text(call.id)}[/dim]"
