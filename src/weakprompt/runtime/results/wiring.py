"""What the evaluation loop asks of the tool-result pipeline, in one object per evaluation.

The loop stays small: it asks this object for the context to send
(:meth:`EvaluationOutputs.compile`), the extra tools to offer on a turn
(:meth:`offered_tools`), each tool result run through the pipeline and
committed (:meth:`process`), the model usage spent inside tools
(:attr:`side_usage`), and calls :meth:`close` when the evaluation ends.

Defaults (documented in ``specs/TOOL_RESULTS.md``):

* a successful result goes through the evaluation's redaction hook (its
  ``redact=``, the same hook that scrubs failure texts) before anything
  stores, previews or shows it; the unredacted text is kept nowhere unless
  ``keep_raw_original=True``;
* every result is stored; one over ``SizePolicy.max_bytes`` (12288) or over
  the remaining token budget is shown as the handle message;
* ``tool_output`` is offered while the session has such an oversized
  output (read when the evaluation starts, then kept current by its own
  results), except on a turn whose tool choice is ``"none"``; extraction
  uses the evaluation's adapter unless ``extraction_adapter`` is set;
* ``load_tool_results=False``: results from before this evaluation's user
  turn compile as slim references (when that is shorter), and
  ``get_tool_result`` is offered while one is in the context;
* ``retention="session"``: stored outputs outlive the evaluation, until
  ``purge_session``; ``"evaluation"`` deletes what this evaluation stored
  when it ends, however it ends.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias, get_args

import attrs

from ...errors import ConfigurationError, TranscriptError
from ...events import ToolOutputExtracted
from ...jsontypes import JSONObject
from ...messages import Usage
from ...parts import DocumentPart, ImagePart
from ...store.output_record import ToolResultMetadata
from ...tools import AnyTool, ToolContext
from ...transcript.lazy import SLIM_REFERENCE_KEY, LazyToolResults, LoadToolResults, normalize_load
from ...transcript.shaped import GET_TOOL_RESULT_NAME
from ..redaction import Redactor
from .extraction import ExtractionConfig, ExtractionSource, Extractor, make_tool_output_tool
from .extraction.read_grep import RunSubAgent
from .extraction.tool_output_tool import SourceLookup
from .lazy_tool import make_get_tool_result_tool
from .pipeline import ProcessedResult, ToolResultPipeline
from .policy import SizePolicy
from .store import ToolOutputStore
from .summaries import SummaryRegistry

if TYPE_CHECKING:
    from ...budget import BudgetTracker
    from ...clock import Clock
    from ...messages import ToolCall
    from ...model import CompiledContext, ProviderAdapter, ToolChoice
    from ...session import Session
    from ...transcript.transcript import Transcript
    from ...transcript.turns import TurnRecord

__all__ = ["RETENTIONS", "EvaluationOutputs", "Retention", "ToolOutputSettings"]

logger = logging.getLogger(__name__)

Retention: TypeAlias = Literal["session", "evaluation"]
RETENTIONS: tuple[Retention, ...] = get_args(Retention)


@attrs.frozen(kw_only=True)
class ToolOutputSettings:
    """How an evaluation stores tool results and what it shows of them.

    ``policy`` decides what is oversized. ``extraction_adapter`` answers
    ``tool_output`` requests (default: the evaluation's adapter) with
    ``extraction_config``. ``summaries`` picks per-tool summaries (default
    registry when ``None``). ``offer_get_tool_result=False`` never offers
    the lazy-loading tool.

    ``redact_output=False`` stores and shows successful results as the tool
    returned them, without the evaluation's ``redact`` hook (which then
    scrubs failure texts only). ``keep_raw_original=True`` keeps each
    result's unredacted text too, when the hook changed it, as a transcript
    blob named by the commit's ``redacted_from`` metadata: a copy of the
    secret, on purpose, for provenance.
    """

    policy: SizePolicy = attrs.field(factory=SizePolicy)
    extraction_adapter: ProviderAdapter | None = None
    extraction_config: ExtractionConfig | None = None
    summaries: SummaryRegistry | None = None
    offer_get_tool_result: bool = True
    redact_output: bool = True
    keep_raw_original: bool = False

    def __attrs_post_init__(self) -> None:
        if self.keep_raw_original and not self.redact_output:
            raise ConfigurationError(
                "ToolOutputSettings: keep_raw_original=True keeps the text from before redaction, "
                "but redact_output=False redacts nothing"
            )


_DEFAULT_SETTINGS = ToolOutputSettings()
"""Shared by every evaluation given none (it is immutable): one object less per running session."""


class EvaluationOutputs:
    """The pipeline state of one evaluation: store, policy, extra tools, side usage."""

    def __init__(
        self,
        *,
        transcript: Transcript,
        empty: bool = False,
        session: Session,
        adapter: ProviderAdapter,
        tracker: BudgetTracker | None,
        settings: ToolOutputSettings | None = None,
        load_tool_results: LoadToolResults = False,
        retention: Retention = "session",
        run_agent: RunSubAgent | None = None,
        redact: Redactor | None = None,
        traced_extraction: Callable[[ProviderAdapter], ProviderAdapter] | None = None,
    ) -> None:
        if retention not in RETENTIONS:
            raise ConfigurationError(
                f"evaluate: retention must be 'session' or 'evaluation', got {retention!r}"
            )
        try:
            self.load = normalize_load(load_tool_results)
        except TranscriptError as exc:
            raise ConfigurationError(f"evaluate: {exc}") from exc
        self.settings = settings if settings is not None else _DEFAULT_SETTINGS
        self.transcript = transcript
        self.retention: Retention = retention
        self.session = session
        self.adapter = adapter
        self.run_agent = run_agent
        self.traced_extraction = traced_extraction  # reports extraction's model calls to a trace
        self.store = ToolOutputStore(
            transcript.store,
            transcript.session_id,
            token_counter=adapter.token_counter or transcript.token_counter,
            clock=session.clock,
            summaries=self.settings.summaries,
            # no bus: in a run, the loop reports each stored result once, with its commit (ToolResultStored)
            sole_writer=empty,
        )
        self.pipeline = ToolResultPipeline(
            self.store,
            policy=self.settings.policy,
            budget_tracker=tracker,
            redact=redact if self.settings.redact_output else None,
            keep_raw_original=self.settings.keep_raw_original,
        )
        # Plain closures, not bound methods: the tool is stored on this object, and a bound method
        # inside it would make every evaluation a reference cycle (freed only by the cyclic GC).
        self.tool_output = make_tool_output_tool(
            _store_lookup(self.store),
            _extractor_factory(self.settings, adapter, traced_extraction, session.clock, run_agent),
        )
        self.get_tool_result = make_get_tool_result_tool(self.store, policy=self.settings.policy)
        self.turn_start: str | None = None
        self.stored: list[ToolResultMetadata] = []
        self._side_usage = Usage()
        self._lock = threading.Lock()
        self._listening = False
        self._start_seq = -1
        self._empty = empty  # a store made for this evaluation: no output stored before it
        self._oversized: bool | None = False if empty else None  # see session_has_oversized()
        self._transform: LazyToolResults | None = None
        self._compiled: tuple[CompiledContext | None, bool] = (None, False)  # see compile()

    # -- tools ----------------------------------------------------------------------------------

    def extra_tools(self, prompt_names: Sequence[str]) -> tuple[AnyTool, ...]:
        """The pipeline's tools the dispatcher must know (a prompt tool of the same name wins)."""
        return tuple(t for t in (self.tool_output, self.get_tool_result) if t.name not in prompt_names)

    def available_names(self, prompt_names: Sequence[str]) -> tuple[str, ...]:
        """Names of pipeline tools that may be forced right now (before any compile)."""
        names: list[str] = []
        extras = {t.name for t in self.extra_tools(prompt_names)}
        if self.tool_output.name in extras and self.session_has_oversized():
            names.append(self.tool_output.name)
        if (
            GET_TOOL_RESULT_NAME in extras
            and self.settings.offer_get_tool_result
            and self.store.next_seq() > 0  # some result is stored (without listing them all)
        ):
            names.append(GET_TOOL_RESULT_NAME)
        return tuple(names)

    def offered_tools(
        self, prompt_names: Sequence[str], context: CompiledContext, choice: ToolChoice
    ) -> tuple[AnyTool, ...]:
        """The pipeline tools to offer on a turn, after the prompt's own.

        ``tool_output`` while the session has an oversized output;
        ``get_tool_result`` while the context holds a slim reference; none
        on a turn that may not call tools (``"none"``). A tool forced by
        name is always offered.
        """
        extras = self.extra_tools(prompt_names)
        forced = getattr(choice, "name", None)
        offered: list[AnyTool] = []
        for tool in extras:
            if tool.name == forced:
                offered.append(tool)
            elif choice == "none":
                continue
            elif tool is self.tool_output:
                if self.session_has_oversized():
                    offered.append(tool)
            elif self.settings.offer_get_tool_result and self._has_slim(context):
                offered.append(tool)
        return tuple(offered)

    def _has_slim(self, context: CompiledContext) -> bool:
        compiled, slimmed = self._compiled
        return slimmed if context is compiled else _has_slim(context)

    # -- context and results --------------------------------------------------------------------

    def compile(self, transcript: Transcript) -> CompiledContext:
        """The context for the next model call, with the lazy-loading policy applied."""
        transform = self._transform
        if transform is None or transform.turn_start != self.turn_start:
            transform = self._transform = LazyToolResults(self.load, self.turn_start)
        view = transcript.compile_view()
        slimmed = transform(view)
        # Remembered for offered_tools: the transform changes a view only to slim some result.
        self._compiled = (slimmed.context, slimmed is not view)
        return slimmed.context

    def session_has_oversized(self) -> bool:
        """Whether the session has an output kept behind a handle (so ``tool_output`` is useful).

        Read from the store once per evaluation, then kept up to date by this
        evaluation's own results, instead of a read transaction on every turn.
        """
        if self._oversized is None:
            self._oversized = self.store.has_oversized()
        return self._oversized

    def process(
        self,
        call: ToolCall,
        content: str,
        *,
        is_error: bool,
        turn: TurnRecord | None = None,
        metadata: JSONObject | None = None,
        framework_text: bool = False,
        parts: Sequence[ImagePart | DocumentPart] = (),
    ) -> ProcessedResult:
        """Run one result through the pipeline and commit it (see :meth:`ToolResultPipeline.commit`).

        With ``turn``, the output is stored with that transcript turn, in
        its transaction; what this evaluation stored is counted once it is.
        """
        processed = self.pipeline.commit(
            self.transcript,
            call,
            content,
            is_error=is_error,
            turn=turn,
            metadata=metadata,
            on_stored=self._stored,
            framework_text=framework_text,
            parts=parts,
        )
        if processed.oversized:
            self._oversized = True
        elif not processed.stored and not self._oversized:
            self._oversized = None  # e.g. get_tool_result may have marked one: read again
        return processed

    def _stored(self, reference: ToolResultMetadata) -> None:
        """An output of this evaluation is stored (a deduplicated earlier row keeps its old seq)."""
        if reference.oversized:
            self._oversized = True
        if reference.seq > self._start_seq:
            self.stored.append(reference)

    # -- accounting and lifetime ----------------------------------------------------------------

    @property
    def side_usage(self) -> Usage:
        """Model usage spent by ``tool_output`` extractions during the evaluation.

        (Summaries written by ``tool_result`` hooks are counted by the hooks themselves.)
        """
        return self._side_usage

    def _on_extracted(self, event: ToolOutputExtracted) -> None:
        if event.session_id in (None, self.session.session_id):
            with self._lock:
                self._side_usage = self._side_usage + event.usage

    def open(self) -> None:
        """Start counting side usage (the loop calls this before the first model call)."""
        self._start_seq = -1 if self._empty else self.store.next_seq() - 1
        if not self._listening:
            dispatcher = self.session.bus
            dispatcher.subscribe(ToolOutputExtracted, self._on_extracted, name="evaluation side usage")
            self._listening = True

    def close(self) -> None:
        """Stop counting; with ``retention="evaluation"`` delete what this evaluation stored.

        Outputs stored before the evaluation began are never deleted here.
        """
        if self._listening:
            dispatcher = self.session.bus
            dispatcher.unsubscribe(ToolOutputExtracted, self._on_extracted)
            self._listening = False
        if self.retention == "evaluation" and self.stored:
            self.store.discard(self.stored)
            self.stored.clear()


def _store_lookup(store: ToolOutputStore) -> SourceLookup:
    """``tool_output``'s lookup: handles of ``store``'s session (the conversation's)."""

    def lookup(handle: str, context: ToolContext) -> ExtractionSource | None:
        # Scoped by this store's session; the tool need not check again.
        source = store.extraction_source(handle)
        return None if source is None else attrs.evolve(source, session_id=None)

    return lookup


def _extractor_factory(
    settings: ToolOutputSettings,
    adapter: ProviderAdapter,
    traced_extraction: Callable[[ProviderAdapter], ProviderAdapter] | None,
    clock: Clock,
    run_agent: RunSubAgent | None,
) -> Callable[[ToolContext], Extractor]:
    """``tool_output``'s extractor: the configured model, else the call's, else the evaluation's."""

    def build(context: ToolContext) -> Extractor:
        chosen = settings.extraction_adapter or context.adapter or adapter
        if traced_extraction is not None:
            chosen = traced_extraction(chosen)
        return Extractor(chosen, config=settings.extraction_config, clock=clock, run_agent=run_agent)

    return build


def _has_slim(context: CompiledContext) -> bool:
    return any(SLIM_REFERENCE_KEY in m.metadata for m in context.messages if m.role == "tool")
