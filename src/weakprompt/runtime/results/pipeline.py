"""One tool result, from the tool's reply to the commit the model reads: redact, hook, size policy, stage.

The order is the point (``specs/TOOL_RESULTS.md``, "The pipeline"):

1. **redact**: a successful result goes through the redaction hook first,
   so a secret in it reaches nothing after: not the ``tool_result`` hook,
   not the output store (payload, preview, summary), not the transcript,
   not the model, not a later ``get_tool_result``. (A failed result's text
   was scrubbed by the dispatcher, with the same hook.) Keeping the
   unredacted text, for provenance, is an explicit choice
   (``keep_raw_original``).
2. **hook**: the transcript's ``tool_result`` hook sees the redacted text
   and may edit, summarize or reject it; a rejected result is answered
   with a placeholder and stored nowhere.
3. **size policy**: what the hook approved is measured; a text that fits
   goes in the context as it is, an oversized one is replaced by the
   handle message. A result's images and documents are counted by their
   bytes (``max_part_bytes``): one past the cap is left out and named in a
   placeholder (``metadata["parts_left_out"]``).
4. **stage**: the output goes to the output store with the transcript turn
   that commits it (or at once, without a turn), and the commit keeps a
   reference to it in its metadata, which is what lazy loading reads.

Results of ``tool_output`` and ``get_tool_result`` answer questions about
stored results: they pass steps 3 and 4 unstored.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

import attrs

from ...jsontypes import JSONObject, JSONValue
from ...messages import Message
from ...parts import Content, DocumentPart, ImagePart
from ...store.output_record import ToolResultMetadata
from ...transcript.hook_run import commit_withheld, run_tool_result_hook
from ...transcript.hooks import ToolResultRejected
from ...transcript.lazy import LOADED_RESULT_KEY
from ...transcript.originals import stage_message_blob, store_message_blob
from ...transcript.provenance import REDACTED_FROM
from ...transcript.shaped import GET_TOOL_RESULT_NAME, NEVER_STORED_TOOLS
from ..redaction import Redactor, redacted
from .extraction import DocumentStats
from .policy import OversizeReason, SizePolicy, handle_text
from .records import PreparedOutput, ToolOutputStoreError, commit_metadata, output_stats

if TYPE_CHECKING:
    from ...budget import BudgetTracker
    from ...messages import ToolCall
    from ...transcript.records import CommitInfo
    from ...transcript.transcript import Transcript
    from ...transcript.turns import TurnRecord
    from ..guardrails import ToolGuard
    from .store import StagedOutput, ToolOutputStore

__all__ = ["PARTS_LEFT_OUT", "ProcessedResult", "ToolResultPipeline"]

PARTS_LEFT_OUT = "parts_left_out"
"""Commit metadata: the images and documents of a result the size policy kept out of the context."""

logger = logging.getLogger(__name__)

_Measured: TypeAlias = "tuple[PreparedOutput, OversizeReason | None] | None"
"""The size policy's verdict on a text: prepared for the store, why it is oversized; None: not stored."""


@attrs.frozen(kw_only=True)
class ProcessedResult:
    """What the pipeline made of one tool result.

    ``content`` is the text the model will see (the result, the handle
    message, or a rejected result's placeholder); ``metadata`` goes on the
    transcript commit; ``reference`` is the stored output (``None`` for
    results that are never stored, and for one staged with a turn until
    that turn is stored: then ``staged`` holds it, and its ``reference``
    once the turn's transaction has committed). ``commit`` is the
    transcript commit when the pipeline made it (:meth:`ToolResultPipeline.commit`).
    """

    content: str
    metadata: JSONObject
    reference: ToolResultMetadata | None = None
    oversize_reason: OversizeReason | None = None
    staged: StagedOutput | None = None
    commit: CommitInfo | None = None

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
    """Runs each tool result through redact, hook, size policy and stage (see the module docstring).

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
        self.result_guard: ToolGuard | None = None
        """The run's tool_result guardrails: after redaction, before the hook (set by the loop)."""

    def remaining_tokens(self) -> int | None:
        return None if self.budget_tracker is None else self.budget_tracker.remaining_tokens()

    def commit(
        self,
        transcript: Transcript,
        call: ToolCall,
        content: str,
        *,
        is_error: bool = False,
        turn: TurnRecord | None = None,
        metadata: JSONObject | None = None,
        on_stored: Callable[[ToolResultMetadata], None] | None = None,
        framework_text: bool = False,
        parts: Sequence[ImagePart | DocumentPart] = (),
    ) -> ProcessedResult:
        """The whole pipeline for ``content``, the result of ``call``: redact, hook, size policy, stage.

        ``parts``: the result's images and documents, committed after its
        text (those over the size policy's ``max_part_bytes`` as placeholders).

        Commits the result to ``transcript`` (in ``turn`` when given, with
        the output's row in the same transaction; ``on_stored`` then gets
        the stored record once the turn has committed) and returns what was
        made of it, ``commit`` included. ``metadata`` (the caller's: trace,
        approval) goes on the commit. ``framework_text`` marks a text the
        loop wrote itself (a visibility expansion's answer): it has nothing
        to redact and is not stored, but the hook sees it like any result.
        A rejected result is answered with a placeholder
        (:func:`~weakprompt.transcript.commit_withheld`).
        """
        meta: JSONObject = dict(metadata or {})
        shown_parts = self._fit_parts(parts, meta) if parts else ()
        if not framework_text:
            content = self._redact(call, content, is_error, turn, meta)
            if self.result_guard is not None:  # guardrails: a rewrite is named, a trip raises
                content, noted = self.result_guard.check_result(call, content, is_error=is_error)
                meta.update(noted)
        # The size policy on the text as it stands: final unless a hook changes the text.
        measured = None if framework_text else self._measure(call, content, is_error)
        if transcript.hooks.should_fire("tool_result"):
            return self._hook(
                transcript,
                call,
                content,
                measured,
                meta,
                is_error=is_error,
                turn=turn,
                on_stored=on_stored,
                framework_text=framework_text,
                parts=shown_parts,
            )
        processed = self._stage(measured, content, meta, turn, on_stored)
        commit = transcript.tool_result(
            call.id,
            call.name,
            _content(processed.content, shown_parts),
            metadata=processed.metadata,
            is_error=is_error,
        )
        return attrs.evolve(processed, commit=commit)

    def _hook(
        self,
        transcript: Transcript,
        call: ToolCall,
        content: str,
        forecast: _Measured,
        metadata: JSONObject,
        *,
        is_error: bool,
        turn: TurnRecord | None,
        on_stored: Callable[[ToolResultMetadata], None] | None,
        framework_text: bool,
        parts: Sequence[ImagePart | DocumentPart | str] = (),
    ) -> ProcessedResult:
        """Step 2, the transcript's hook, then steps 3 and 4 on what it approved.

        The hook is told, in ``stored_output``, what the size policy would
        make of the text as it stands (``forecast``), so a summarizer can
        leave an output bound for a handle to ``tool_output``.
        """
        shaped: list[ProcessedResult] = []

        def stage(text: str, decided: JSONObject, message: str | None) -> CommitInfo:
            """Steps 3 and 4 on what the hook decided: ``text``, with its metadata."""
            unchanged = framework_text or text == content
            measured = forecast if unchanged else self._measure(call, text, is_error)
            processed = self._stage(measured, text, decided, turn, on_stored)
            shaped.append(processed)
            return transcript.tool_result(
                call.id,
                call.name,
                _content(processed.content, parts),
                message=message,
                metadata=processed.metadata,
                is_error=is_error,
            )

        told = metadata if forecast is None else {**metadata, **commit_metadata(forecast[0])}
        try:
            commit = run_tool_result_hook(
                transcript,
                tool_call_id=call.id,
                name=call.name,
                content=content,
                message=None,
                metadata=told,
                is_error=is_error,
                write=stage,
                turn=turn,
            )
        except ToolResultRejected as rejection:  # the call still needs an answer; nothing is stored
            withheld = commit_withheld(transcript, rejection)
            return ProcessedResult(
                content=withheld.content.content, metadata=withheld.metadata, commit=withheld
            )
        return attrs.evolve(shaped[-1], content=commit.content.content, commit=commit)

    def process(
        self,
        call: ToolCall,
        content: str,
        *,
        is_error: bool = False,
        turn: TurnRecord | None = None,
        on_stored: Callable[[ToolResultMetadata], None] | None = None,
    ) -> ProcessedResult:
        """Steps 1, 3 and 4 for ``content`` (the result of ``call``), without a hook or a commit.

        Returns what to commit: the text the model sees and the commit's
        metadata. With ``turn`` (the transcript turn that will commit the
        result), the output's row is written in that turn's transaction, so
        the output and its commit are stored together or not at all;
        ``on_stored`` then gets the stored reference once the turn has
        committed (without a turn, the output is stored at once in a
        transaction of its own).
        """
        metadata: JSONObject = {}
        content = self._redact(call, content, is_error, turn, metadata)
        return self._stage(self._measure(call, content, is_error), content, metadata, turn, on_stored)

    # -- the steps ------------------------------------------------------------------------------

    def _fit_parts(
        self, parts: Sequence[ImagePart | DocumentPart], metadata: JSONObject
    ) -> tuple[ImagePart | DocumentPart | str, ...]:
        """The parts the size policy lets in, in order; each one past it becomes a placeholder line."""
        fitting = self.policy.fitting_parts([part.size for part in parts])
        shown: list[ImagePart | DocumentPart | str] = list(parts[:fitting])
        left_out: list[JSONValue] = []
        for part in parts[fitting:]:
            label = f"{part.kind} {part.name}" if part.name else part.kind
            shown.append(
                f"[{label} ({part.media_type}, {part.size} bytes) left out: the result's images and "
                f"documents are over the size policy's {self.policy.max_part_bytes} bytes]"
            )
            left_out.append(
                {"kind": part.kind, "media_type": part.media_type, "size": part.size, "digest": part.digest}
            )
        if left_out:
            metadata[PARTS_LEFT_OUT] = left_out
        return tuple(shown)

    def _redact(
        self, call: ToolCall, content: str, is_error: bool, turn: TurnRecord | None, metadata: JSONObject
    ) -> str:
        """Step 1: the redacted text; notes on the call go in ``metadata`` (the raw original, a load)."""
        if self.redact is not None and not is_error:
            raw, content = content, redacted(content, self.redact)
            if self.keep_raw_original and content != raw:
                metadata[REDACTED_FROM] = self._keep_raw(call, raw, turn)
        if call.name == GET_TOOL_RESULT_NAME and not is_error:
            requested = _requested_id(call)
            if requested is not None:
                metadata[LOADED_RESULT_KEY] = {"tool_call_id": requested}
        return content

    def _measure(self, call: ToolCall, text: str, is_error: bool) -> _Measured:
        """Step 3: ``text`` prepared for the store, the size policy deciding whether it is oversized."""
        if call.name in NEVER_STORED_TOOLS:
            return None
        remaining = self.remaining_tokens()
        decided: list[OversizeReason | None] = []

        def decide(stats: DocumentStats) -> bool:
            decided.append(self.policy.oversize_reason(stats, remaining))
            return decided[-1] is not None

        try:
            prepared = self.outputs.prepare(
                call.id, call.name, call.arguments_json(), text, is_error=is_error, oversized=decide
            )
        except ToolOutputStoreError as exc:
            # Only input the store cannot key (an over-long call id, say): keep the result inline.
            logger.warning("tool result of call %r was not stored: %s", call.id, exc)
            return None
        return prepared, decided[-1] if decided else None

    def _stage(
        self,
        measured: _Measured,
        text: str,
        metadata: JSONObject,
        turn: TurnRecord | None,
        on_stored: Callable[[ToolResultMetadata], None] | None,
    ) -> ProcessedResult:
        """Step 4: store the measured output (with ``turn``, or at once); what the commit holds."""
        if measured is None:
            return ProcessedResult(content=text, metadata=metadata)
        prepared, reason = measured
        shown = handle_text(prepared.handle, output_stats(prepared)) if reason is not None else text
        metadata = {**metadata, **commit_metadata(prepared)}
        if turn is None:
            reference = self.outputs.store_prepared(prepared)
            if on_stored is not None:
                on_stored(reference)
            return ProcessedResult(
                content=shown, metadata=metadata, reference=reference, oversize_reason=reason
            )
        staged = self.outputs.stage(turn, prepared, on_stored=on_stored)
        return ProcessedResult(content=shown, metadata=metadata, oversize_reason=reason, staged=staged)

    def _keep_raw(self, call: ToolCall, raw: str, turn: TurnRecord | None) -> str:
        """Store the unredacted result as the message its commit would have held; returns its hash.

        With a turn, it is written in the turn's transaction, with the commit that refers to it.
        """
        store = self.outputs.store
        message = Message("tool", raw, tool_call_id=call.id, name=call.name, is_error=False)
        if turn is not None:
            return stage_message_blob(turn, message, store.clock.now())
        return store_message_blob(store, message, store.clock.now())


def _content(text: str, parts: Sequence[ImagePart | DocumentPart | str]) -> Content:
    """A result's text followed by its parts (the text alone when there are none)."""
    if not parts:
        return text
    return [text, *parts] if text else list(parts)
