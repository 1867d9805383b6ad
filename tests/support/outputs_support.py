"""Shared helpers for the output-store, lazy-loading and pipeline tests."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from weakprompt.clock import FakeClock
from weakprompt.events import EventBus, ToolResultStored
from weakprompt.runtime.results import SummaryRegistry, ToolOutputStore
from weakprompt.store import Store


@contextmanager
def output_store(
    session_id: str = "s1", *, summaries: SummaryRegistry | None = None
) -> Generator[tuple[ToolOutputStore, list[ToolResultStored], FakeClock]]:
    """An in-memory store, a session-scoped output store, the events it published, and its clock."""
    clock = FakeClock()
    dispatcher = EventBus()
    events: list[ToolResultStored] = []
    dispatcher.subscribe(ToolResultStored, events.append)
    with Store.open("sqlite://", clock=clock) as store:
        yield (
            ToolOutputStore(store, session_id, clock=clock, dispatcher=dispatcher, summaries=summaries),
            events,
            clock,
        )


def log_lines(count: int, *, needle_at: int | None = None, needle: str = "NEEDLE-42") -> str:
    """A log of ``count`` lines; line ``needle_at`` (0-based) carries ``needle``."""
    lines = [
        f"2026-01-01T00:00:{i % 60:02d} INFO worker-{i % 7} processed batch {i} ok" for i in range(count)
    ]
    if needle_at is not None:
        lines[needle_at] = f"2026-01-01T00:00:00 ERROR worker-3 failed: {needle} disk quota exceeded"
    return "\n".join(lines) + "\n"
