"""Shared pieces of the async-core tests: a prompt over given tools, a marker log."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.tools import AnyTool


def tools_prompt(tools: Sequence[AnyTool], key: str = "tools") -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/async",
        key=key,
        sections=[MarkdownSection(title="Task", key="task", template="Use the tools.", tools=list(tools))],
    )
    return Prompt(template)


class Markers:
    """An ordered, thread-safe log of ("start"|"end", name) markers."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[tuple[str, str]] = []

    def mark(self, what: str, name: str) -> None:
        with self._lock:
            self.items.append((what, name))


@dataclass(frozen=True)
class Item:
    """A value tools write into the session."""

    text: str
