"""Window accounting and compaction before each request, and the ``recall_history`` tool.

The loop asks :class:`WindowKeeper` to fit each compiled request into the
model's window: it estimates the request (the context's tokens, the offered
tools, the reserved output), scaled by how far the provider's reported
input tokens were from the estimate of the request before. Past the
threshold it applies the tiers of :mod:`weakprompt.transcript.compaction`
in order, each one a commit in the turn being opened, until the estimate
is down to the target. A request that still does not fit the window raises
:class:`~weakprompt.errors.ContextWindowExceededError` before it is sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ContextWindowExceededError
from ..events import Compacted
from ..jsontypes import JSONObject
from ..messages import Message, Usage
from ..tools import Tool, ToolContext, ToolResult
from ..transcript.compaction import (
    RECALL_TOOL_NAME,
    CompactionSettings,
    Tier,
    compaction_metadata,
    compaction_of,
    drop_marker_text,
    request_history_summary,
    slim_result_text,
    summary_message_text,
    units_of,
)
from ..transcript.options import CompileOptions, CompileView
from ..transcript.records import CommitInfo, message_tokens, usage_metadata

if TYPE_CHECKING:
    from ..model import CompiledContext
    from ..tokens import TokenCounter
    from ..tools import AnyTool
    from ..transcript.transcript import Transcript
    from .evaluation import Evaluation

__all__ = ["RecallParams", "WindowKeeper", "make_recall_tool", "tool_tokens"]

_MIN_RATIO, _MAX_RATIO = 0.25, 4.0
_RECALL_SHOWN = 5
_RECALL_CHARS = 4000


class WindowKeeper:
    """One run's window accounting: the calibration ratio and the compaction steps."""

    def __init__(self, settings: CompactionSettings, window: int) -> None:
        self.settings = settings
        self.window = window
        self.ratio = 1.0
        self.last_raw: int | None = None  # the uncalibrated estimate of the last request sent

    def calibrate(self, usage: Usage) -> None:
        """Scale later estimates by what the provider counted for the last request."""
        if self.last_raw and usage.input_tokens > 0:
            self.ratio = min(_MAX_RATIO, max(_MIN_RATIO, usage.input_tokens / self.last_raw))

    def raw(self, context: CompiledContext, extra_tools: int) -> int:
        return context.token_count + extra_tools

    def estimate(self, raw: int, reserve: int) -> int:
        return math.ceil(self.ratio * raw) + reserve

    def fit(
        self, evaluation: Evaluation[Any], context: CompiledContext, *, extra_tools: int, reserve: int
    ) -> CompiledContext:
        """``context``, compacted when it passes the threshold; raises when it cannot fit at all."""
        settings, window = self.settings, self.window
        before = self.estimate(self.raw(context, extra_tools), reserve)
        if before > settings.threshold * window:
            goal = settings.target * window
            # The last resort only runs while the request is still past the threshold.
            for tier, stop in (("slim", goal), ("prefix", goal), ("drop", settings.threshold * window)):
                estimate = self.estimate(self.raw(context, extra_tools), reserve)
                if estimate <= stop:
                    break
                done = self._step(evaluation, tier, estimate, goal, reserve)
                if done is not None:
                    context = evaluation.outputs.compile(evaluation.transcript)
                    self._report(
                        evaluation, done, estimate, self.estimate(self.raw(context, extra_tools), reserve)
                    )
        final = self.estimate(self.raw(context, extra_tools), reserve)
        if final > window:
            raise ContextWindowExceededError(
                f"the request for session {evaluation.transcript.session_id!r} needs about {final} tokens "
                f"(with {reserve} reserved for the reply) but the model's context window is {window}, even "
                f"after compaction kept only the last unit of the conversation; shorten the instructions or "
                "the tools, or lower max_output_tokens",
                provider=evaluation.adapter.name,
            )
        self.last_raw = self.raw(context, extra_tools)
        return context

    def _report(
        self,
        evaluation: Evaluation[Any],
        done: tuple[Tier, CommitInfo, tuple[str, ...]],
        before: int,
        after: int,
    ) -> None:
        tier, commit, covered = done
        evaluation.prefix_watch.compacted(tier, commit.hash, covered)  # the cause of the cache bust
        event = Compacted(
            session_id=evaluation.transcript.session_id,
            tier=tier,
            commit_hash=commit.hash,
            covered=covered,
            tokens_before=before,
            tokens_after=after,
            context_window=self.window,
            created_at=commit.created_at,
        )
        if evaluation.trace is not None:
            evaluation.trace.compacted(event)
        evaluation.publish(event)

    def _step(
        self, evaluation: Evaluation[Any], tier: str, estimate: int, goal: float, reserve: int
    ) -> tuple[Tier, CommitInfo, tuple[str, ...]] | None:
        transcript = evaluation.transcript
        view = transcript.compile_view()
        messages, commits = view.context.messages, view.commits
        units = _eligible_units(view)
        keep = self.settings.keep_recent_turns
        if tier == "slim":
            return self._slim(transcript, view, units[:-keep] if len(units) > keep else [], estimate)
        prefix = next(
            ((c, r) for c in commits if (r := compaction_of(c)) is not None and r.tier != "slim"), None
        )
        earlier = prefix[1].covers if prefix is not None else ()
        if tier == "drop":
            keep = 1  # the last resort keeps only the unit being answered
        chosen = units[:-keep] if len(units) > keep else []
        if tier == "prefix":  # the fewest old units that bring the estimate down to the goal
            room = self.ratio * self.settings.summary_tokens
            saved = 0.0
            for count, (start, end) in enumerate(chosen, start=1):
                saved += self.ratio * sum(message_tokens(m, view.token_counter) for m in messages[start:end])
                if estimate - saved + room <= goal:
                    chosen = chosen[:count]
                    break
            if saved <= room:  # a summary would not be shorter than what it covers: wait for more
                return None
        if not chosen:
            return None
        indexes = [i for start, end in chosen for i in range(start, end)]
        picked = [(messages[i], commits[i]) for i in indexes]
        new = tuple(view.origin(i) for i in indexes)
        covers = tuple(dict.fromkeys((*earlier, *new)))
        if tier == "prefix" and self.settings.summarize:
            summarizer = self.settings.summarizer or evaluation.adapter
            if evaluation.trace is not None:
                summarizer = evaluation.trace.traced_adapter(summarizer, "summarization")
            previous = (
                prefix[0].content.content if prefix is not None and prefix[1].tier == "summary" else None
            )
            attempt = request_history_summary(
                summarizer,
                previous,
                picked,
                target_tokens=self.settings.summary_tokens,
                token_counter=view.token_counter,
            )
            evaluation.add_usage(attempt.usage)
            if attempt.text is not None:
                extra: JSONObject = {
                    "summarizer": attempt.summarizer,
                    "summary_usage": usage_metadata(attempt.usage),
                }
                commit = transcript.commit(
                    Message("user", summary_message_text(attempt.text, len(covers))),
                    message=f"compaction: summary of {len(covers)} messages",
                    metadata=compaction_metadata("summary", covers, tokens_before=estimate, extra=extra),
                    tools=None,
                )
                return "summary", commit, new
            failure: JSONObject = {"summarization_error": attempt.error}
        else:
            failure = {}
        commit = transcript.commit(
            Message("user", drop_marker_text(len(covers))),
            message=f"compaction: {len(covers)} messages left out",
            metadata=compaction_metadata("drop", covers, tokens_before=estimate, extra=failure),
            tools=None,
        )
        return "drop", commit, new

    @staticmethod
    def _slim(
        transcript: Transcript, view: CompileView, units: Sequence[tuple[int, int]], estimate: int
    ) -> tuple[Tier, CommitInfo, tuple[str, ...]] | None:
        covers: list[str] = []
        for start, end in units:
            for index in range(start, end):
                message, commit = view.context.messages[index], view.commits[index]
                if message.role != "tool" or message.metadata.get("compaction") is not None:
                    continue
                if len(slim_result_text(message, commit)) < len(message.content):
                    covers.append(view.origin(index))
        if not covers:
            return None
        commit = transcript.commit(
            Message("user", f"[compaction: {len(covers)} earlier tool results shown as references]"),
            message=f"compaction: {len(covers)} tool results slimmed",
            metadata=compaction_metadata("slim", covers, tokens_before=estimate),
            tools=None,
        )
        return "slim", commit, tuple(covers)


def _eligible_units(view: CompileView) -> list[tuple[int, int]]:
    """The units a compaction may cover: not system messages, not the summary already there."""
    messages, commits = view.context.messages, view.commits
    return [
        (start, end)
        for start, end in units_of(messages)
        if messages[start].role != "system" and compaction_of(commits[start]) is None
    ]


def tool_tokens(tools: Sequence[AnyTool], counter: TokenCounter) -> int:
    """Tokens of tool schemas offered beside the ones the transcript links (and so counts) already."""
    return sum(counter.count(json.dumps(tool.spec(), sort_keys=True, default=str)) for tool in tools)


# -- recall_history --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecallParams:
    commit: str = field(
        default="",
        metadata={"description": "Hash (or its first 8+ characters) of an earlier message to show in full."},
    )
    query: str = field(
        default="",
        metadata={"description": "Words to search for in every earlier message, compacted or not."},
    )


def _shown(message: Message, commit: CommitInfo) -> str:
    text = message.content
    if len(text) > _RECALL_CHARS:
        text = text[:_RECALL_CHARS] + f" [... {len(message.content) - _RECALL_CHARS} more characters]"
    head = f"[{commit.hash[:12]}] {message.role}"
    if message.role == "tool":
        head += f" result of {message.name} ({message.tool_call_id})"
    calls = "".join(f"\n  called {c.name}({c.arguments_json()}) as {c.id}" for c in message.tool_calls)
    return f"{head}: {text}{calls}"


def make_recall_tool(transcript: Transcript) -> Tool[RecallParams, None]:
    """``recall_history`` over ``transcript``: the originals behind a compaction, by commit or by words."""

    def handler(params: RecallParams, *, context: ToolContext) -> ToolResult[None]:
        del context  # the transcript is the tool's own
        view = transcript.compile_view(options=CompileOptions(compacted=False))
        pairs = [
            (m, c)
            for m, c in zip(view.context.messages, view.commits, strict=True)
            if m.role != "system" and compaction_of(c) is None
        ]
        wanted, query = params.commit.strip().lower(), params.query.strip().lower()
        if len(wanted) >= 8:
            found = [
                (m, c)
                for m, c in pairs
                if c.hash.startswith(wanted) or (c.edit_target or "").startswith(wanted)
            ]
            if found:
                return ToolResult(message="\n\n".join(_shown(m, c) for m, c in found[:_RECALL_SHOWN]))
            return ToolResult.error(f"No earlier message has a commit hash starting with {wanted!r}.")
        if query:
            words = query.split()
            found = [(m, c) for m, c in pairs if all(w in m.content.lower() for w in words)]
            if found:
                shown = found[-_RECALL_SHOWN:]
                more = (
                    f"\n\n({len(found) - len(shown)} older matches not shown)"
                    if len(found) > len(shown)
                    else ""
                )
                return ToolResult(message="\n\n".join(_shown(m, c) for m, c in shown) + more)
            return ToolResult.error(f"No earlier message contains {params.query.strip()!r}.")
        return ToolResult.error(
            'recall_history needs commit="<hash, 8 or more characters>" or query="<words to search for>"'
        )

    return Tool(
        name=RECALL_TOOL_NAME,
        description=(
            "Show earlier messages of this conversation that were summarized or left out to fit the context "
            "window: by commit hash, or by searching for words."
        ),
        handler=handler,
        params_type=RecallParams,
        result_type=None,
        accepts_overrides=False,
    )
