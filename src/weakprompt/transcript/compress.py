"""Shrinking tool results that are already committed, one EDIT per result.

``compress_tool_calls()`` finds results through ``find_tool_turns()`` (or
takes the commits given), asks the summarizer for a shorter version of
each, and commits it with ``tool_result(edit=...)``: same ``tool_call_id``
and name, the earlier text still in ``log()``. Only tool results are
rewritten; assistant messages, including the final answer, never are. A
result whose summary fails stays as it is and is listed in ``skipped``, as
does one the output pipeline shaped (a handle message, a ``tool_output``
or ``get_tool_result`` reply).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from ..errors import ConfigurationError, TranscriptError
from ..jsontypes import JSONObject
from ..messages import Usage
from .provenance import (
    PROVENANCE_KEYS,
    SUMMARIZED_FROM,
    SUMMARIZER,
    SUMMARY_USAGE,
    TRIGGERED_BY,
    summary_events,
)
from .records import CommitInfo, label_text, usage_metadata
from .shaped import shaped_by_output_pipeline
from .summarize import check_target_tokens

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from .transcript import Transcript

__all__ = ["CompressedResult", "SkippedResult", "ToolCompression", "compress_tool_calls"]

TRIGGER_COMPRESS = "compress_tool_calls"


@attrs.frozen
class CompressedResult:
    """One result that was rewritten: the commit it replaced and the EDIT that replaced it."""

    before: CommitInfo
    after: CommitInfo


@attrs.frozen
class SkippedResult:
    """One selected result left as it was, and why."""

    commit: CommitInfo
    reason: str


@attrs.frozen
class ToolCompression:
    """What ``compress_tool_calls()`` did; ``usage`` is the summarizer's spend."""

    compressed: tuple[CompressedResult, ...]
    skipped: tuple[SkippedResult, ...]
    usage: Usage

    @property
    def edits(self) -> tuple[CommitInfo, ...]:
        return tuple(c.after for c in self.compressed)

    @property
    def tokens_saved(self) -> int:
        return sum(c.before.token_count - c.after.token_count for c in self.compressed)


def _select(
    transcript: Transcript, commits: Sequence[str | CommitInfo] | None, name: str | None
) -> list[CommitInfo]:
    """The current version of each result to compress, in conversation order, once each."""
    chosen: list[CommitInfo]
    if commits is None:
        chosen = [r for turn in transcript.find_tool_turns(name=name) for r in turn.results]
    else:
        turns = transcript.find_tool_turns()
        current = {r.hash: r for r in transcript.find_tool_results()}
        for result in list(current.values()):
            if result.edit_target is not None:
                current.setdefault(result.edit_target, result)
        calls = {turn.call.hash: turn.results for turn in turns}
        chosen = []
        for item in commits:
            key = item.hash if isinstance(item, CommitInfo) else item
            if key in current:
                chosen.append(current[key])
            elif key in calls:
                chosen.extend(calls[key])
            else:
                raise TranscriptError(
                    f"compress_tool_calls: {key!r} is neither a tool result nor a tool-calling assistant "
                    f"commit in the compiled view of session {transcript.session_id!r} (final answers and "
                    "other messages are never compressed)"
                )
    unique = {c.hash: c for c in chosen if name is None or c.content.name == name}
    position = {c.hash: i for i, c in enumerate(transcript.find_tool_results())}
    return sorted(unique.values(), key=lambda c: position.get(c.hash, -1))


def compress_tool_calls(
    transcript: Transcript,
    commits: Sequence[str | CommitInfo] | None = None,
    name: str | None = None,
    instructions: str | None = None,
    *,
    target_tokens: int | None = None,
    summarizer: ProviderAdapter | None = None,
) -> ToolCompression:
    """Summarize committed tool results in place (one EDIT each); the final answer is untouched.

    ``commits`` (hashes or CommitInfo) picks results, or tool-calling
    assistant commits meaning all their results; by default every result
    of every tool turn. ``name`` keeps only that tool's results. The
    summarizer resolves like ``PendingToolResult.summarize`` and is
    required up front (ConfigurationError otherwise).
    """
    check_target_tokens(target_tokens)
    if instructions is not None and not isinstance(instructions, str):
        raise ConfigurationError(f"instructions must be a string or None, got {type(instructions).__name__}")
    hooks = transcript.hooks
    adapter = hooks.resolve_summarizer(summarizer)
    counter = transcript.token_counter
    compressed: list[CompressedResult] = []
    skipped: list[SkippedResult] = []
    usage = Usage()
    for commit in _select(transcript, commits, name):
        text = commit.text
        shaped = shaped_by_output_pipeline(commit.content.name or "", commit.metadata)
        if shaped is not None or not text.strip():
            skipped.append(SkippedResult(commit, shaped or "the result is empty"))
            continue
        attempt = hooks.summarize_text(
            adapter,
            tool_name=commit.content.name or "",
            content=text,
            instructions=instructions,
            target_tokens=target_tokens,
            token_counter=counter,
        )
        usage = usage + attempt.usage
        target = commit
        if attempt.text is None:
            skipped.append(SkippedResult(commit, attempt.error or "the summary failed"))
        else:
            meta: JSONObject = {k: v for k, v in commit.metadata.items() if k not in PROVENANCE_KEYS}
            meta[TRIGGERED_BY] = TRIGGER_COMPRESS
            meta[SUMMARIZED_FROM] = commit.blob_hash
            meta[SUMMARIZER] = attempt.summarizer
            meta[SUMMARY_USAGE] = usage_metadata(attempt.usage)  # an answer is at least one call
            target = transcript.tool_result(
                commit.content.tool_call_id or "",
                commit.content.name or "",
                attempt.text,
                edit=commit.hash,
                message=f"compressed tool result: {label_text(commit.content.name or '')}",
                metadata=meta,
                is_error=commit.content.is_error,
                tools=None,  # a rewrite is no model turn: it must not change the linked tool set
            )
            compressed.append(CompressedResult(before=commit, after=target))
        for event in summary_events(
            target,
            (attempt,),
            original_tokens=commit.token_count,
            summarized_from=commit.blob_hash,
            triggered_by=TRIGGER_COMPRESS,
            created_at=target.created_at,
            token_counter=counter,
        ):
            hooks.publish(event)
    return ToolCompression(compressed=tuple(compressed), skipped=tuple(skipped), usage=usage)
