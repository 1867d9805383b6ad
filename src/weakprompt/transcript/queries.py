"""Finding tool calls and results in the compiled view of a transcript.

Queries look at what the model currently sees: one entry per position, the
latest edit of it, in conversation order. An edited tool result is therefore
found once, as its newest version (whose hash can be edited again).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from .records import CommitInfo

__all__ = ["ToolTurn", "select_tool_calls", "select_tool_results", "select_tool_turns"]


@attrs.frozen
class ToolTurn:
    """An assistant commit that called tools, with the results that answer it."""

    call: CommitInfo
    results: tuple[CommitInfo, ...]
    tool_names: tuple[str, ...]

    @property
    def all_hashes(self) -> tuple[str, ...]:
        return (self.call.hash, *self.result_hashes)

    @property
    def result_hashes(self) -> tuple[str, ...]:
        return tuple(r.hash for r in self.results)

    @property
    def total_tokens(self) -> int:
        return self.call.token_count + sum(r.token_count for r in self.results)


def _is_result(commit: CommitInfo) -> bool:
    return commit.content.tool_call_id is not None


def select_tool_results(
    view: Sequence[CommitInfo], *, name: str | None = None, after_position: int = -1
) -> list[CommitInfo]:
    return [
        c
        for i, c in enumerate(view)
        if i > after_position and _is_result(c) and (name is None or c.content.name == name)
    ]


def select_tool_calls(view: Sequence[CommitInfo], *, name: str | None = None) -> list[CommitInfo]:
    return [
        c
        for c in view
        if c.content.tool_calls and (name is None or any(call.name == name for call in c.content.tool_calls))
    ]


def select_tool_turns(view: Sequence[CommitInfo], *, name: str | None = None) -> list[ToolTurn]:
    """Pair each tool-calling assistant commit with its results by ``tool_call_id``.

    A result whose id matches no call is left out; a call still waiting for
    its results forms a turn with no results.
    """
    results_by_id: dict[str, list[tuple[int, CommitInfo]]] = {}
    for position, commit in enumerate(view):
        call_id = commit.content.tool_call_id
        if call_id is not None:
            results_by_id.setdefault(call_id, []).append((position, commit))
    turns: list[ToolTurn] = []
    for commit in select_tool_calls(view, name=name):
        found: list[tuple[int, CommitInfo]] = []
        for call_id in dict.fromkeys(call.id for call in commit.content.tool_calls):
            found.extend(results_by_id.get(call_id, ()))
        found.sort(key=lambda item: item[0])
        turns.append(
            ToolTurn(
                call=commit,
                results=tuple(c for _, c in found),
                tool_names=tuple(call.name for call in commit.content.tool_calls),
            )
        )
    return turns
