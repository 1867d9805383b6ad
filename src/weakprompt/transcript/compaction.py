"""Compaction: the compiled context kept under the model's window, every original kept in the chain.

A compaction is one APPEND commit whose metadata (:data:`COMPACTION_KEY`)
says which tier made it and which commits it covers. Nothing else changes:
the covered commits stay in the chain, so ``log()``, ``find_tool_turns()``
and ``recall_history`` still see them; only the compiled view
(:class:`CompactedView`, applied by ``Transcript.compile``) shows less:

- ``slim``: each covered tool result shows as a one-line reference;
- ``summary`` / ``drop``: the covered prefix of the conversation shows as
  the compaction commit's own message (a summary, or a marker saying what
  was left out), at the place of the first covered message. The latest
  such commit wins: each covers everything the one before covered.

Covered commits are named by their APPEND commit (``CompileView.origin``),
so a later edit of a covered message stays covered.

A unit (an assistant message with its tool calls, its reasoning parts and
every result of those calls; or one other message) is covered whole or not
at all, so the view never holds a call without its result or the reverse.
See ``specs/COMPACTION.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from ..jsontypes import JSONObject, JSONValue
from ..messages import Message
from ..model.compaction_settings import CompactionSettings
from .options import CompileView
from .records import CommitInfo, message_tokens
from .summarize import SummaryAttempt, ask_for_summary

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..tokens import TokenCounter

__all__ = [
    "COMPACTION_KEY",
    "HISTORY_SUMMARY_SYSTEM_PROMPT",
    "RECALL_TOOL_NAME",
    "CompactedView",
    "CompactionRecord",
    "CompactionSettings",
    "Tier",
    "compaction_metadata",
    "compaction_of",
    "drop_marker_text",
    "request_history_summary",
    "slim_result_text",
    "summary_message_text",
    "units_of",
]

COMPACTION_KEY = "compaction"
"""Commit metadata key of a compaction: ``{"tier", "covers", "tokens_before", ...}``."""

RECALL_TOOL_NAME = "recall_history"
"""The tool that shows the originals a compaction covers (offered while compaction is configured)."""

Tier = Literal["slim", "summary", "drop"]
_TIERS: tuple[Tier, ...] = ("slim", "summary", "drop")

HISTORY_SUMMARY_SYSTEM_PROMPT = """\
You condense the earlier part of a conversation between a user, an AI agent \
and its tools, so that the agent can continue from your summary alone.

Keep every fact the agent may need later: names, identifiers, numbers with \
units, file paths, decisions taken, open questions and what each tool call \
found. Copy exact values exactly. Leave out greetings and repetition. Write \
only the summary, with no introduction."""


@attrs.frozen
class CompactionRecord:
    """What a compaction commit's metadata says."""

    tier: Tier
    covers: tuple[str, ...]

    @staticmethod
    def from_json(value: JSONValue | None) -> CompactionRecord | None:
        if not isinstance(value, dict):
            return None
        tier, covers = value.get("tier"), value.get("covers")
        if tier not in _TIERS or not isinstance(covers, list):
            return None
        return CompactionRecord(tier, tuple(c for c in covers if isinstance(c, str)))


def compaction_of(commit: CommitInfo) -> CompactionRecord | None:
    """The compaction ``commit`` records, or None when it is an ordinary message."""
    return CompactionRecord.from_json(commit.metadata.get(COMPACTION_KEY))


def units_of(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """``(start, end)`` of each unit: an assistant message with its calls' results, or one message.

    A tool message joins the unit before it (its call's), so a boundary
    between units never separates a call from its result.
    """
    units: list[tuple[int, int]] = []
    for index, message in enumerate(messages):
        if message.role == "tool" and units:
            units[-1] = (units[-1][0], index + 1)
        else:
            units.append((index, index + 1))
    return units


def slim_result_text(message: Message, commit: CommitInfo) -> str:
    """The stand-in for a tool result the ``slim`` tier covers."""
    return (
        f"[Earlier result of tool call {message.tool_call_id} ({message.name}), {commit.token_count} tokens: "
        f'left out to save context. recall_history(commit="{commit.hash[:12]}") shows it.]'
    )


def drop_marker_text(count: int) -> str:
    """The message that stands where the ``drop`` tier left messages out."""
    return (
        f"[{count} earlier messages of this conversation were left out to fit the context window. "
        'They are kept: recall_history(query="...") searches them, '
        'recall_history(commit="...") shows one.]'
    )


@attrs.frozen
class CompactedView:
    """The compile transform that shows the compactions in a view (``Transcript.compile`` applies it)."""

    def __call__(self, view: CompileView) -> CompileView:
        records = [(i, r) for i, c in enumerate(view.commits) if (r := compaction_of(c)) is not None]
        if not records:
            return view
        slimmed = frozenset(h for _, r in records if r.tier == "slim" for h in r.covers)
        prefix = next(((i, r) for i, r in reversed(records) if r.tier != "slim"), None)
        covered = frozenset(prefix[1].covers) if prefix is not None else frozenset[str]()
        own = {i for i, _ in records}
        messages: list[Message] = []
        commits: list[CommitInfo] = []
        origins: list[str] = []
        placed = prefix is None
        counter = view.token_counter
        total = view.context.token_count
        for index, (message, commit) in enumerate(zip(view.context.messages, view.commits, strict=True)):
            origin = view.origin(index)
            if index in own:
                total -= message_tokens(message, counter)
                continue
            if message.role != "system" and origin in covered:
                total -= message_tokens(message, counter)
                if not placed and prefix is not None:
                    summary = view.context.messages[prefix[0]]
                    messages.append(summary)
                    commits.append(view.commits[prefix[0]])
                    origins.append(view.origin(prefix[0]))
                    total += message_tokens(summary, counter)
                    placed = True
                continue
            if message.role == "tool" and origin in slimmed:
                slim = Message(
                    "tool",
                    slim_result_text(message, commit),
                    tool_call_id=message.tool_call_id,
                    name=message.name,
                    is_error=message.is_error,
                    metadata={COMPACTION_KEY: origin},
                )
                total += message_tokens(slim, counter) - message_tokens(message, counter)
            else:
                slim = message
            messages.append(slim)
            commits.append(commit)
            origins.append(origin)
        context = attrs.evolve(
            view.context,
            messages=tuple(messages),
            token_count=total,
            commit_hashes=tuple(c.hash for c in commits),
        )
        return CompileView(
            context=context, commits=tuple(commits), token_counter=counter, origins=tuple(origins)
        )


def _render(messages: Sequence[tuple[Message, CommitInfo]], limit: int = 2000) -> str:
    lines: list[str] = []
    for message, commit in messages:
        text = message.content if len(message.content) <= limit else message.content[:limit] + " [...]"
        if message.role == "tool":
            lines.append(
                f"[{commit.hash[:12]}] tool {message.name} ({message.tool_call_id}) returned: {text}"
            )
            continue
        lines.append(f"[{commit.hash[:12]}] {message.role}: {text}")
        for call in message.tool_calls:
            lines.append(f"    called {call.name}({call.arguments_json()}) as {call.id}")
    return "\n".join(lines)


def request_history_summary(
    adapter: ProviderAdapter,
    previous: str | None,
    messages: Sequence[tuple[Message, CommitInfo]],
    *,
    target_tokens: int,
    token_counter: TokenCounter,
) -> SummaryAttempt:
    """Ask ``adapter`` to fold ``messages`` (and the summary before, if any) into one summary.

    Like the tool-result summary, a failure comes back in the attempt
    (``error`` set) instead of raising: the caller falls to the next tier.
    """
    body = _render(messages)
    text = (
        f"Length: at most about {target_tokens} tokens.\n\n"
        + (f"Summary of what came before:\n{previous}\n\n" if previous else "")
        + f"Conversation to condense:\n{body}"
    )
    return ask_for_summary(adapter, HISTORY_SUMMARY_SYSTEM_PROMPT, text, 2 * target_tokens, token_counter)


def summary_message_text(summary: str, covered: int) -> str:
    """The message a ``summary`` compaction shows in place of the turns it covers."""
    return (
        f"[Summary of the {covered} earlier messages of this conversation, condensed to fit the context "
        'window. The originals are kept: recall_history(query="...") searches them, '
        'recall_history(commit="...") shows one.]\n'
        f"{summary}"
    )


def compaction_metadata(
    tier: Tier, covers: Sequence[str], *, tokens_before: int, extra: JSONObject | None = None
) -> JSONObject:
    """The metadata of a compaction commit (provenance: tier, covered commits, the estimate before)."""
    record: JSONObject = {"tier": tier, "covers": list(covers), "tokens_before": tokens_before}
    if extra:
        record.update(extra)
    return {COMPACTION_KEY: record}
