"""Running the ``tool_result`` hook and committing what it decided.

Outcomes of one handler call:

- approved (explicitly or by deciding nothing): commit the current content;
  if it differs from the tool's output, that output is stored as a blob
  first and named in ``summarized_from`` / ``edited_from``;
- rejected: commit nothing and raise :class:`ToolResultRejected`;
- the handler raised: commit the tool's output unchanged (with
  ``hook_error``), so the call is still answered, then re-raise.

Every commit made here carries ``triggered_by``. A caller that must answer
every tool call (the evaluation loop: providers refuse a conversation with
an unanswered call) records a rejection with :func:`commit_withheld`.

The commit itself is the caller's ``write`` (a plain ``tool_result`` for
a bare transcript), so the layer above can shape what the hook decided
before it is committed: the evaluation's tool-result pipeline applies its
size policy there and stages the output (``specs/TOOL_RESULTS.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..jsontypes import JSONObject, JSONValue
from ..messages import Message
from .hooks import ToolResultRejected, handler_name
from .originals import stage_message_blob, store_message_blob
from .pending import PendingToolResult
from .provenance import (
    EDITED_FROM,
    HOOK_ERROR,
    SUMMARIZATION_ERROR,
    SUMMARIZED_FROM,
    SUMMARIZER,
    SUMMARY_USAGE,
    TRIGGERED_BY,
    summary_events,
    usage_entry,
)
from .records import label_text

if TYPE_CHECKING:
    from .records import CommitInfo
    from .transcript import Transcript
    from .turns import TurnRecord

__all__ = ["WITHHELD", "commit_withheld", "run_tool_result_hook"]

WITHHELD = "withheld"
"""Metadata key set to True on the placeholder that answers a rejected call."""


def run_tool_result_hook(
    transcript: Transcript,
    *,
    tool_call_id: str,
    name: str,
    content: str,
    message: str | None,
    metadata: Mapping[str, JSONValue] | None,
    is_error: bool,
    write: Callable[[str, JSONObject, str | None], CommitInfo],
    turn: TurnRecord | None = None,
) -> CommitInfo:
    """Let the registered handler see the result, then commit (or not) as it decided.

    ``write(content, metadata, message)`` makes the commit (a plain
    ``tool_result`` for a bare transcript; it runs inside the hook, so no
    hook fires again). With ``turn``, a rewritten result's original is
    stored in that turn's transaction, with the commit naming it.
    """
    hooks = transcript.hooks
    handler = hooks.handler("tool_result")
    assert handler is not None  # the caller checked should_fire()
    with hooks.firing():
        pending = PendingToolResult(
            transcript=transcript,
            hooks=hooks,
            tool_call_id=tool_call_id,
            tool_name=name,
            content=content,
            is_error=is_error,
            metadata=metadata,
            triggered_by=handler_name(handler),
        )
        try:
            handler(pending)
        except Exception as exc:
            if pending.status != "rejected":
                meta: JSONObject = {
                    **(metadata or {}),
                    TRIGGERED_BY: pending.triggered_by,
                    HOOK_ERROR: f"{type(exc).__name__}: {exc}",
                }
                commit = write(content, meta, message)
                exc.add_note(
                    f"weakprompt: the tool_result hook {pending.triggered_by} raised; the result of call "
                    f"{tool_call_id!r} ({name}) was committed unchanged as {commit.hash[:12]}"
                )
            raise
        if pending.status == "rejected":
            raise ToolResultRejected(tool_call_id, name, pending.rejection_reason, pending.triggered_by)
        pending.settle()
        return _commit(transcript, pending, message=message, metadata=metadata, write=write, turn=turn)


def _commit(
    transcript: Transcript,
    pending: PendingToolResult,
    *,
    message: str | None,
    metadata: Mapping[str, JSONValue] | None,
    write: Callable[[str, JSONObject, str | None], CommitInfo],
    turn: TurnRecord | None,
) -> CommitInfo:
    meta: JSONObject = {**(metadata or {}), TRIGGERED_BY: pending.triggered_by}
    original = pending.original_content
    original_blob: str | None = None
    if original is not None and original != pending.content:
        kept = Message(
            "tool",
            original,
            tool_call_id=pending.tool_call_id,
            name=pending.tool_name,
            is_error=pending.is_error,
        )
        now = transcript.store.clock.now()
        if turn is not None:
            original_blob = stage_message_blob(turn, kept, now)
        else:
            original_blob = store_message_blob(transcript.store, kept, now)
        if pending.summarized:
            meta[SUMMARIZED_FROM] = original_blob
            meta[SUMMARIZER] = next(a.summarizer for a in reversed(pending.summary_attempts) if a.ok)
        if pending.edited:
            meta[EDITED_FROM] = original_blob
    if pending.summarization_error is not None:
        meta[SUMMARIZATION_ERROR] = pending.summarization_error
    attempts = pending.summary_attempts
    spent = usage_entry(attempts)
    if spent is not None:
        meta[SUMMARY_USAGE] = spent
    if message is None and original_blob is not None:
        how = "summarized" if pending.summarized else "edited"
        message = f"tool result: {label_text(pending.tool_name)} ({how})"
    commit = write(pending.content, meta, message)
    if attempts:
        counter = transcript.token_counter
        for event in summary_events(
            commit,
            attempts,
            original_tokens=counter.count(original if original is not None else pending.content),
            summarized_from=original_blob or commit.blob_hash,
            triggered_by=pending.triggered_by,
            created_at=commit.created_at,
            token_counter=counter,
        ):
            transcript.hooks.publish(event)
    return commit


def commit_withheld(transcript: Transcript, rejection: ToolResultRejected) -> CommitInfo:
    """Answer a call whose result a hook rejected: a short error result saying it was withheld.

    Committed with ``Transcript.commit``, which runs no hooks. Nothing of
    the rejected text is written (the evaluation's pipeline stores an
    output only after its hook has approved it).
    """
    why = f": {rejection.reason}" if rejection.reason else ""
    text = f"The result of this {rejection.tool_name} call was withheld{why}."
    placeholder = Message(
        "tool", text, tool_call_id=rejection.tool_call_id, name=rejection.tool_name, is_error=True
    )
    return transcript.commit(
        placeholder,
        message=f"tool result withheld: {label_text(rejection.tool_name)}",
        metadata={TRIGGERED_BY: rejection.triggered_by, WITHHELD: True},
    )
