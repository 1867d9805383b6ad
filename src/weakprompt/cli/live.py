"""Printing an evaluation as it happens, from the events the loop publishes."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape

from ..events import Dispatcher
from ..jsontypes import JSONValue
from ..messages import ToolCall
from ..runtime.loop_events import ModelTurnCompleted, OutputRejected, SectionsExpanded, ToolResultCommitted

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
    """Subscribes to one dispatcher and prints turns, tool calls and results."""

    def __init__(self, console: Console) -> None:
        self._console = console

    def attach(self, dispatcher: Dispatcher) -> None:
        dispatcher.subscribe(ModelTurnCompleted, self.on_turn)
        dispatcher.subscribe(ToolResultCommitted, self.on_result)
        dispatcher.subscribe(SectionsExpanded, self.on_expanded)
        dispatcher.subscribe(OutputRejected, self.on_rejected)

    def on_turn(self, event: ModelTurnCompleted) -> None:
        usage = event.usage
        self._console.rule(
            f"turn {event.turn} · {escape(event.adapter)}/{escape(event.model)} · "
            f"{usage.input_tokens} in / {usage.output_tokens} out tokens · {event.finish_reason}",
            style="cyan",
        )
        if event.text:
            self._console.print(f"[bold]assistant:[/bold] {escape(shorten(event.text))}")
        for call in event.tool_calls:
            self._console.print(f"[yellow]→ call[/yellow] {call_text(call)}")

    def on_result(self, event: ToolResultCommitted) -> None:
        mark = "[red]← failed[/red]" if event.is_error else "[green]← result[/green]"
        self._console.print(f"{mark} {escape(event.call.name)}: {escape(shorten(event.content))}")

    def on_expanded(self, event: SectionsExpanded) -> None:
        self._console.print(
            f"[magenta]opened sections[/magenta] {escape(', '.join(event.section_keys))}; "
            f"tools now: {escape(', '.join(event.tool_names) or 'none')}"
        )

    def on_rejected(self, event: OutputRejected) -> None:
        then = "asking the model to correct it" if event.retrying else "no corrective turn left"
        self._console.print(
            f"[red]answer rejected[/red] (turn {event.turn}): {escape(shorten(event.errors))}; {then}"
        )


def call_text(call: ToolCall, limit: int = 300) -> str:
    """``name(arguments) id=...`` as rich markup, arguments shortened to ``limit``."""
    arguments = escape(shorten(call.arguments_json(), limit))  # the call's own encoding
    return f"{escape(call.name)}({arguments}) [dim]id={escape(call.id)}[/dim]"
