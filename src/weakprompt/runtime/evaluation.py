"""The state of one running evaluation, and the small interface the loop's parts use on it.

An :class:`Evaluation` is made once per run by the entry (``runtime.loop``)
from the run's :class:`~weakprompt.runtime.run_settings.RunSettings`; the
turn driver (``runtime.turns``), the tool calls (``runtime.tool_calls``) and
pausing (``runtime.pausing``) read and change it only through its public
members. It renders the prompt (and re-renders it when sections open or a
live toolset changes), compiles each request, records replies, rejects
unparsable answers, publishes the loop's events and builds the response.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from .. import events as event_types
from ..canonical import content_hash
from ..errors import ConfigurationError, PromptRenderError, VisibilityExpansionRequired
from ..events import PromptRendered, publish
from ..messages import AssistantTurn, ToolCall, Usage
from ..model import CompiledContext, ForceTool, ModelRequest, ModelSettings, adapter_settings
from . import loop_messages, request_layout, run_ending
from .cache_prefix import PrefixWatch
from .dispatcher import ToolDispatcher, ToolExecution
from .guardrails import ToolGuard
from .handoff_runs import HANDOFF_KEY, filtered_history
from .history import HISTORY_KEY, stored_history
from .loop_events import SectionsExpanded
from .recording import SECTIONS_KEY, section_hashes
from .response import PromptResponse

if TYPE_CHECKING:
    import asyncio

    from ..budget import BudgetTracker
    from ..errors import GuardrailTripped
    from ..events import ToolResultStored
    from ..jsontypes import JSONObject
    from ..model import ToolChoice
    from ..parts import Content
    from ..prompt import Prompt, RenderedPrompt
    from ..resources import ResourceSnapshot
    from ..session import SessionSnapshot
    from ..tools import AnyTool
    from ..transcript.transcript import Transcript
    from ..transcript.turns import TurnRecord
    from ._store_work import StoreWork
    from .approval import PausedRun, PendingCall
    from .compaction import WindowKeeper
    from .output_checks import Verdict
    from .pausing import InlineDecision
    from .results import EvaluationOutputs
    from .resumption import Resumption
    from .run_events import RunEvent
    from .run_settings import RunSettings
    from .tracing import RunSpan, ToolSpan

__all__ = ["PROMPT_KEY", "Evaluation"]

PROMPT_KEY = "prompt"
"""Metadata key of the system commit an evaluation writes: the prompt's display name (for viewers)."""

logger = logging.getLogger("weakprompt.runtime.loop")  # the loop's log, as before the split

OutputT = TypeVar("OutputT")
T = TypeVar("T")


def _check_choice(
    choice: ToolChoice, names: tuple[str, ...], more_names: Callable[[], tuple[str, ...]] = tuple
) -> None:
    """Refuse a tool choice the prompt cannot honour; ``more_names`` (pipeline tools) is asked only if needed.

    Working out whether a pipeline tool is on offer reads the store, so a
    choice the prompt's own tools settle never asks.
    """
    if isinstance(choice, ForceTool):
        if choice.name not in names:
            names = names + more_names()
        if choice.name not in names:
            raise ConfigurationError(
                f"evaluate: tool_choice forces tool {choice.name!r}, which the prompt does not offer "
                f"(tools: {', '.join(names) or 'none'})"
            )
    elif choice not in ("auto", "required", "none"):
        raise ConfigurationError(
            f"evaluate: tool_choice must be 'auto', 'required', 'none' or ForceTool(name), got {choice!r}"
        )
    elif choice == "required" and not names and not more_names():
        raise ConfigurationError("evaluate: tool_choice='required' but the prompt offers no tools")


class Evaluation(Generic[OutputT]):
    """The mutable state of one running evaluation (never shared)."""

    def __init__(
        self,
        prompt: Prompt[OutputT],
        settings: RunSettings,
        *,
        transcript: Transcript,
        tracker: BudgetTracker | None,
        outputs: EvaluationOutputs,
        io: StoreWork,
        trace: RunSpan | None,
        resumption: Resumption | None,
        empty_transcript: bool,
    ) -> None:
        self.settings = settings
        adapter, session, resources = settings.adapter, settings.session, settings.resources
        self.store_work = io
        self.trace = trace
        # The spans of tool calls started but not committed yet, by call (the call objects are alive).
        self.open_tools: dict[int, ToolSpan] = {}
        self.on_event = settings.on_event
        # Results of the turn being written, stored: streamed once the loop is back (listener only).
        self.stored_results: list[ToolResultStored] = []
        self.prompt = prompt
        self.name = prompt.template.display_name
        self.adapter = adapter
        self.model_settings_used = ModelSettings()
        self.output_schema_hash: str | None = None  # of the current render's output schema, for each reply
        self.sections: tuple[tuple[str, str], ...] = ()  # the current render's (path, text hash) pairs
        """What the last request asked of the model: the adapter's defaults, the prompt's, the run's."""
        self.adapter_name = adapter.name
        self.session = session
        self.transcript = transcript
        self.deadline = settings.deadline
        self.tracker = tracker
        self.resources = resources
        self.outputs = outputs
        self.offered: tuple[str, ...] = ()
        self.turn_context = ""  # the turn sections' text sent after the conversation in the last request
        self.usage = Usage()
        self.turns = 0
        self.turns_before = 0  # model calls of the run before this resumption of it
        self.empty_transcript = empty_transcript  # a private store made for this run: no system message yet
        # The cache-bust detector: each request's prefix against the last one sent (specs/CACHING.md).
        self.prefix_watch = PrefixWatch(look_in_store=not empty_transcript)
        self.retries_used = 0
        self.written: set[str] = set()  # the commits this run stored (for PromptResponse.new_messages)
        # The conversation compiled in the last turn before it was written, with that turn: a run
        # that ends there hands it back without a read (which would build a deferred store).
        self.last_turn: tuple[CompiledContext, TurnRecord] | None = None
        self.verdict: Verdict[OutputT] | None = None  # the last final answer's, judged before it was recorded
        self.head: str | None = None
        self.system_commit: str | None = None
        self.executions: list[ToolExecution] = []
        self.async_handlers: dict[str, bool] = {}  # by tool name, for the current dispatcher
        self.expanded: list[str] = []
        # Pausing (specs/APPROVAL.md; runtime.pausing reads and writes these): calls waiting now.
        self.pending: list[PendingCall] = []
        self.decided_inline: InlineDecision | None = None  # stored with the turn it decided
        self.resumption = resumption
        self.paused: PausedRun | None = None
        # A store in memory dies with the process: no crash to resume, no journal to keep.
        self.journal = not transcript.store.in_memory
        # A journal row may be there for the turn in progress; at first, one a failed run left
        # behind: this run's first stored turn removes it (it supersedes that run).
        self.journaled = self.journal
        self.rendered: RenderedPrompt[OutputT]
        self.dispatcher: ToolDispatcher
        # The state the transcript agrees with: taken after each stored turn, put back on failure.
        self.kept_state: SessionSnapshot = session.snapshot()
        self.kept_resources: ResourceSnapshot | None = resources.snapshot() if resources is not None else None
        # Closes what the run's scope opened; the trip that writes the run's last turn calls it.
        self.closing: Callable[[], None] | None = None
        # Guardrails (runtime.guardrails): the tool points' checks, what the input's commit records,
        # the input's concurrent checks in flight, an output trip raised once its turn is stored.
        self.tool_guard = ToolGuard(settings.guardrails, session) if settings.guardrails else None
        outputs.pipeline.result_guard = self.tool_guard
        self.input_metadata: JSONObject | None = None
        self.input_check: asyncio.Task[tuple[str, list[JSONObject]]] | None = None
        self.output_trip: GuardrailTripped | None = None
        self.answer_text: str | None = None  # a text answer as a guardrail rewrote it
        self.history_size: int | None = None  # messages before the run's first request (a handoff's)
        self.ended_by: ToolExecution | None = None  # a call of an ends_run tool (a handoff) ended the run
        # Window accounting and compaction (specs/COMPACTION.md), when the run asked for it.
        self.window: WindowKeeper | None = None
        self.compaction_tools: tuple[AnyTool, ...] = ()
        if settings.compaction is not None:  # imported only then: it loads the transcript package
            from .compaction import WindowKeeper, make_recall_tool

            window = settings.compaction.context_window or adapter.context_window
            if window is None:
                raise ConfigurationError(
                    f"evaluate: compaction needs the model's context window, and adapter {adapter.name!r} "
                    "does not know it; give CompactionSettings(context_window=...)"
                )
            self.window = WindowKeeper(settings.compaction, window)
            self.compaction_tools = (make_recall_tool(transcript),)

    async def io(self, work: Callable[[], T]) -> T:
        """Run store work on this run's worker thread (or inline, see ``_store_work``)."""
        return await self.store_work(work)

    async def emit(self, event: RunEvent[OutputT]) -> None:
        if self.on_event is None:
            return
        returned = self.on_event(event)
        if isinstance(returned, Awaitable):
            await cast("Awaitable[object]", returned)

    async def emit_stored(self, turn: TurnRecord) -> None:
        """Stream the stored ``turn``: each result's ``ToolResultStored``, then ``TurnCommitted``."""
        if self.on_event is None:
            return
        stored, self.stored_results = self.stored_results, []
        for event in stored:
            await self.emit(event)
        await self.emit(
            # the event class resolves on first access (built only for a listener)
            event_types.TurnCommitted(
                turn=self.turns, head=self.head, commit_hashes=tuple(c.hash for c in turn.commits)
            )
        )

    def tool_span(self, call: ToolCall) -> ToolSpan:
        assert self.trace is not None  # only handed to the dispatcher when tracing
        span = self.trace.tool_call(call)
        self.open_tools[id(call)] = span
        return span

    def abandon_tool_spans(self, error: BaseException) -> None:
        """End the spans of tool calls whose results will never be committed."""
        for span in self.open_tools.values():
            span.fail(error)
        self.open_tools.clear()

    def keep_state(self) -> None:
        self.kept_state = self.session.snapshot()
        if self.resources is not None:
            self.kept_resources = self.resources.snapshot()

    def roll_back(self) -> None:
        """Put the session (and snapshotable resources) back as of the last stored turn."""
        try:
            self.session.restore(self.kept_state)
            if self.resources is not None and self.kept_resources is not None:
                self.resources.restore(self.kept_resources)
        except Exception:  # the original error matters more; this one is logged
            logger.exception("restoring the session after a failed evaluation of %r failed", self.name)

    # -- the loop -------------------------------------------------------------------------------

    def start(self, input: Content | None, first_choice: ToolChoice) -> None:
        if self.resumption is not None and self.resumption.context.expanded:
            self.prompt = self.prompt.with_expanded(self.resumption.context.expanded)
            self.expanded.extend(self.resumption.context.expanded)
        rendered = self.prompt.render(self.session)
        if self.settings.output_validators and rendered.output_type is None:
            raise ConfigurationError(
                f"evaluate: output_validators were given, but prompt {self.name!r} has no output_type "
                "for them to check (give the template an output_type)"
            )
        names = rendered.tool_names
        _check_choice(first_choice, names, lambda: self.outputs.available_names(names))
        history = self.settings.message_history
        if history is not None and not self.empty_transcript and self.transcript.head is not None:
            raise ConfigurationError(
                f"evaluate: message_history was given, but session {self.transcript.session_id!r} already "
                "holds a stored conversation; a run continues either the stored session or the history "
                "given, not both (use a new session id, or leave message_history out)"
            )
        self.adopt(self.prompt, rendered)
        given: str | None = None
        # The system message, the history and the input are stored together: one transaction.
        with self.transcript.turn(refresh=False) as opening:
            self.commit_system(rendered.text, handoff=self.settings.handoff)
            for message in history or ():
                self.head = self.transcript.commit(stored_history(message), metadata={HISTORY_KEY: True}).hash
            if input is not None:
                self.head = given = self.transcript.user(input, metadata=self.input_metadata).hash
        if opening.moved:  # another writer appended meanwhile: the commits were stored under new hashes
            assert self.head is not None and self.system_commit is not None  # both set by a stored commit
            self.head = opening.stored_hash(self.head)
            self.system_commit = opening.stored_hash(self.system_commit)
        if given is not None:
            self.written.add(opening.stored_hash(given))
        if self.resumption is not None:
            self.head = self.transcript.head
            self.outputs.turn_start = self.resumption.context.turn_start
            return
        self.outputs.turn_start = self.head

    def turns_left(self, max_turns: int) -> bool:
        """Whether ``max_turns`` allows another model call, counting those before a pause or crash."""
        return self.turns_before + self.turns < max_turns

    def stored(self, turn: TurnRecord) -> None:
        if turn.moved:  # another writer appended meanwhile: the turn was stored after it, rehashed
            self.system_commit = None
        self.head = turn.head or self.head
        self.written.update(commit.hash for commit in turn.commits)
        self.keep_state()

    def request(self, choice: ToolChoice) -> ModelRequest:
        if self.rendered.tools_changed():  # a live toolset (an MCP server) changed its tools
            rendered = self.prompt.render(self.session)
            self.adopt(self.prompt, rendered)
            self.commit_system(rendered.text)
        rendered = self.rendered
        context = self.outputs.compile(self.transcript)
        if self.settings.history_filter is not None:  # a handoff's input filter (runtime.handoff_runs)
            if self.history_size is None:  # the conversation as it was before this run's first turn
                self.history_size = len(context.messages)
            context = filtered_history(context, self.settings.history_filter, self.history_size)
        settings = (rendered.model_settings or ModelSettings()).merged(self.settings.model_settings)
        max_output = self.settings.max_output_tokens or settings.max_output_tokens
        recall = self.compaction_tools if choice != "none" else ()
        tools = rendered.tools + recall + self.outputs.offered_tools(rendered.tool_names, context, choice)
        if self.window is not None:
            from .compaction import tool_tokens

            # The transcript counts the tools it links (those offered last turn); the rest are extra.
            extra = tool_tokens(
                [t for t in tools if t.name not in self.offered], self.transcript.token_counter
            )
            reserve = max_output or self.window.settings.reserve_output
            fitted = self.window.fit(self, context, extra_tools=extra, reserve=reserve)
            if fitted is not context:
                context = fitted
                tools = (
                    rendered.tools + recall + self.outputs.offered_tools(rendered.tool_names, context, choice)
                )
        # stable prefix, conversation, then the turn text (specs/CACHING.md)
        sent, cache, self.turn_context = request_layout.laid_out(context, self.prompt, rendered, self.session)
        self.link_tools(tools)
        self.model_settings_used = adapter_settings(self.adapter).merged(settings)
        request = ModelRequest(
            context=sent,
            tools=tools,
            tool_choice=choice,
            output_schema=rendered.output_schema,
            output_name=rendered.output_name,
            max_output_tokens=max_output,
            output_mode=rendered.output_mode,
            settings=settings,
            cache=cache,
            deadline=self.deadline,
            bus=self.session.bus,
        )
        self.prefix_watch.observe(
            self.transcript,
            rendered,
            request,
            self.model_settings_used,
            prompt_name=self.name,
            clock=self.session.clock,
        )
        return request

    # -- progressive disclosure -----------------------------------------------------------------

    def expand(self, request: VisibilityExpansionRequired) -> tuple[str, bool]:
        """Re-render with the requested sections open; returns the tool result text and failure flag."""
        if len(self.expanded) >= self.settings.max_expansions:
            return loop_messages.expansion_limit(self.settings.max_expansions), True
        try:
            prompt = self.prompt.with_expanded(request.section_keys)
            rendered = prompt.render(self.session)
        except PromptRenderError as exc:
            return loop_messages.expansion_refused(str(exc)), True
        self.adopt(prompt, rendered)
        self.commit_system(rendered.text)
        self.expanded.extend(request.section_keys)
        self.publish(
            SectionsExpanded(
                prompt_name=self.name,
                section_keys=request.section_keys,
                reason=request.reason,
                tool_names=rendered.tool_names,
                session_id=self.session.session_id,
                created_at=self.session.clock.now(),
            )
        )
        return loop_messages.sections_opened(request.section_keys, rendered.tool_names), False

    # -- helpers --------------------------------------------------------------------------------

    def adopt(self, prompt: Prompt[OutputT], rendered: RenderedPrompt[OutputT]) -> None:
        """Make ``rendered`` the current render: event, dispatcher, active tool set."""
        self.prompt = prompt
        self.rendered = rendered
        self.async_handlers = {}
        tools = rendered.tools + self.compaction_tools + self.outputs.extra_tools(rendered.tool_names)
        if self.settings.tool_wrapper is not None:
            tools = tuple(self.settings.tool_wrapper(tool) for tool in tools)
        self.dispatcher = ToolDispatcher(
            tools,
            session=self.session,
            prompt=prompt,
            rendered_prompt=rendered,
            adapter=self.adapter,
            deadline=self.deadline,
            budget_tracker=self.tracker,
            resources=self.resources,
            redact=self.settings.redact,
            prompt_name=self.name,
            tool_spans=None if self.trace is None else self.tool_span,
            guard=self.tool_guard,
        )
        self.offered = rendered.tool_names
        self.transcript.set_tools(rendered.tool_schemas)
        schema = rendered.output_schema
        self.output_schema_hash = None if schema is None else content_hash(schema)
        self.sections = section_hashes(rendered)
        self.publish(
            PromptRendered(
                prompt_ns=rendered.ns,
                prompt_key=rendered.key,
                prompt_name=prompt.template.name,
                text=rendered.text,
                tool_names=rendered.tool_names,
                tool_hashes=rendered.tool_hashes,
                session_id=self.session.session_id,
                created_at=self.session.clock.now(),
                section_hashes=self.sections,
            )
        )

    def link_tools(self, tools: tuple[AnyTool, ...]) -> None:
        """Link the tools offered on this turn (the prompt's plus any pipeline tools) to later commits."""
        names = tuple(t.name for t in tools)
        if names != self.offered:
            extra = tuple(t.spec() for t in tools[len(self.rendered.tools) :])
            self.transcript.set_tools(self.rendered.tool_schemas + extra)
            self.offered = names

    def commit_system(self, text: str, *, handoff: JSONObject | None = None) -> None:
        """Put ``text`` first in the conversation: append it, or edit the existing system message.

        ``handoff``: the run was handed the conversation; its system commit records from whom.
        """
        target = self.system_commit
        if target is None and not self.empty_transcript:
            context = self.transcript.compile()
            if context.messages and context.messages[0].role == "system":
                target = context.commit_hashes[0]
                if context.messages[0].content == text and handoff is None:
                    self.system_commit = target
                    return
        sections: JSONObject = dict(self.sections)
        metadata: JSONObject = {PROMPT_KEY: self.name, SECTIONS_KEY: sections}
        if handoff is not None:
            metadata[HANDOFF_KEY] = handoff
        commit = self.transcript.system(text, edit=target, metadata=metadata)
        self.empty_transcript = False
        self.system_commit = commit.edit_target or commit.hash
        self.head = commit.hash

    def add_usage(self, usage: Usage) -> None:
        """Count model calls made on the evaluation's behalf (tool-result summaries)."""
        self.usage = self.usage + usage

    def publish(self, event: object) -> None:
        publish(self.session.bus, event, logger=logger, about=f"during evaluation of {self.name!r}")

    async def finish(self, reply: AssistantTurn, output: OutputT) -> PromptResponse[OutputT]:
        """End the run on its final answer (``runtime.run_ending``)."""
        return await run_ending.finish(self, reply, output)

    async def finish_paused(self, reply: AssistantTurn | None) -> PromptResponse[OutputT]:
        """End the run on its pause: no output (``paused`` says why), no ``PromptExecuted``."""
        return await run_ending.finish_paused(self, reply)
