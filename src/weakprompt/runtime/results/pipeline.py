"""From a tool's reply to what the transcript commits: redact it, store it, apply the size policy.

A successful result first goes through the redaction hook, so that a
secret in it reaches nothing: not the output store (payload, preview,
summary), not the transcript, not the model, not a later
``get_tool_result``. (A failed result's text was already scrubbed by the
dispatcher, with the same hook.) Keeping the unredacted text, for
provenance, is an explicit choice (``keep_raw_original``).

Then every result (except those of ``tool_output`` and ``get_tool_result``,
which answer questions about stored results) is stored in the output store.
A result that fits goes in the context as it is; an oversized one is
replaced by the handle message. Either way the commit keeps a reference to
the stored output in its metadata, which is what lazy loading reads later.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from ...jsontypes import JSONObject
from ...messages import Message
from ...store.output_record import ToolResultMetadata
from ...transcript.lazy import LOADED_RESULT_KEY
from ...transcript.originals import stage_message_blob, store_message_blob
from ...transcript.provenance import REDACTED_FROM
from ...transcript.shaped import GET_TOOL_RESULT_NAME, NEVER_STORED_TOOLS
from ..redaction import Redactor, redacted
from .extraction import DocumentStats
from .policy import OversizeReason, SizePolicy, handle_text
from .records import ToolOutputStoreError, commit_metadata, output_stats

if TYPE_CHECKING:
    from ...budget import BudgetTracker
    from ...messages import ToolCall
    from ...transcript.turns import TurnRecord
    from .store import StagedOutput, ToolOutputStore

__all__ = ["ProcessedResult", "ToolResultPipeline"]

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class ProcessedResult:
    """What to commit for one tool result.

    ``content`` is the text the model will see (the result, or the handle
    message); ``metadata`` goes on the transcript commit; ``reference`` is
    the stored output (``None`` for results that are never stored, and
    for one staged with a turn until that turn is stored: then ``staged``
    holds it, and its ``reference`` once the turn's transaction has
    committed).
    """

    content: str
    metadata: JSONObject
    reference: ToolResultMetadata | None = None
    oversize_reason: OversizeReason | None = None
    staged: StagedOutput | None = None

    @property
    def oversized(self) -> bool:
        return self.oversize_reason is not None

    @property
    def stored(self) -> bool:
        """Whether the result goes to the output store (now, or with its turn)."""
        return self.reference is not None or self.staged is not None


def _requested_id(call: ToolCall) -> str | None:
    """The tool_call_id a ``get_tool_result`` call asked for, if its arguments say."""
    decoded = call.decoded_arguments  # the dispatcher's decode, not another one
    if isinstance(decoded, dict):
        value = decoded.get("tool_call_id")
        if isinstance(value, str) and value:
            return value
    return None


class ToolResultPipeline:
    """Redacts each successful result, stores it in ``outputs`` and decides what of it the model sees.

    ``redact`` scrubs a successful result before anything else sees it
    (``None``: results are taken as they are). ``keep_raw_original`` also
    keeps the unredacted text, when the hook changed it, as a transcript
    blob named by the commit's ``redacted_from``. ``budget_tracker``
    supplies the remaining token budget for the size policy (no tracker:
    only ``max_bytes`` applies).
    """

    def __init__(
        self,
        outputs: ToolOutputStore,
        *,
        policy: SizePolicy | None = None,
        budget_tracker: BudgetTracker | None = None,
        redact: Redactor | None = None,
        keep_raw_original: bool = False,
    ) -> None:
        self.outputs = outputs
        self.policy = policy if policy is not None else SizePolicy()
        self.budget_tracker = budget_tracker
        self.redact = redact
        self.keep_raw_original = keep_raw_original

    def remaining_tokens(self) -> int | None:
        return None if self.budget_tracker is None else self.budget_tracker.remaining_tokens()

    def process(
        self,
        call: ToolCall,
        content: str,
        *,
        is_error: bool = False,
        turn: TurnRecord | None = None,
        on_stored: Callable[[ToolResultMetadata], None] | None = None,
    ) -> ProcessedResult:
        """Redact ``content`` (the result of ``call``), store it and return what to commit.

        With ``turn`` (the transcript turn that will commit the result), the
        output's row is written in that turn's transaction, so the output
        and its commit are stored together or not at all; ``on_stored``
        then gets the stored reference once the turn has committed (without
        a turn, the output is stored at once in a transaction of its own).
        The commit's metadata describes this call's output either way.
        """
        metadata: JSONObject = {}
        if self.redact is not None and not is_error:
            raw, content = content, redacted(content, self.redact)
            if self.keep_raw_original and content != raw:
                metadata[REDACTED_FROM] = self._keep_raw(call, raw, turn)
        if call.name in NEVER_STORED_TOOLS:
            if call.name == GET_TOOL_RESULT_NAME and not is_error:
                requested = _requested_id(call)
                if requested is not None:
                    metadata[LOADED_RESULT_KEY] = {"tool_call_id": requested}
            return ProcessedResult(content=content, metadata=metadata)
        remaining = self.remaining_tokens()
        decided: list[OversizeReason | None] = []

        def decide(stats: DocumentStats) -> bool:
            decided.append(self.policy.oversize_reason(stats, remaining))
            return decided[-1] is not None

        try:
            prepared = self.outputs.prepare(
                call.id, call.name, call.arguments_json(), content, is_error=is_error, oversized=decide
            )
        except ToolOutputStoreError as exc:
            # Only input the store cannot key (an over-long call id, say): keep the result inline.
            logger.warning("tool result of call %r was not stored: %s", call.id, exc)
            return ProcessedResult(content=content, metadata=metadata)
        reason = decided[-1] if decided else None
        shown = handle_text(prepared.handle, output_stats(prepared)) if reason is not None else content
        if turn is None:
            reference = self.outputs.store_prepared(prepared)
            if on_stored is not None:
                on_stored(reference)
            return ProcessedResult(
                content=shown,
                metadata={**metadata, **commit_metadata(prepared)},
                reference=reference,
                oversize_reason=reason,
            )
        staged = self.outputs.stage(turn, prepared, on_stored=on_stored)
        return ProcessedResult(
            content=shown,
            metadata={**metadata, **commit_metadata(prepared)},
            oversize_reason=reason,
            staged=staged,
        )

    def _keep_raw(self, call: ToolCall, raw: str, turn: TurnRecord | None) -> str:
        """Store the unredacted result as the message its commit would have held; returns its hash.

        With a turn, it is written in the turn's transaction, with the commit that refers to it.
        """
        store = self.outputs.store
        message = Message("tool", raw, tool_call_id=call.id, name=call.name, is_error=False)
        if turn is not None:
            return stage_message_blob(turn, message, store.clock.now())
        return store_message_blob(store, message, store.clock.now())
