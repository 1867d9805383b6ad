"""``Agent``: a prompt, a model and the default settings of its runs, held together and reused.

An agent is frozen: it holds no run state, so one agent serves any number of
runs, one after another or at once on several threads or tasks. Every call
builds the run's one :class:`~weakprompt.runtime.run_settings.RunSettings`
from the agent's defaults and the call's overrides (the call wins), and hands
it to the loop (:func:`~weakprompt.runtime.loop.run_with`) or to
:func:`~weakprompt.runtime.resume.resume_with` (``specs/AGENT.md``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import TYPE_CHECKING, Generic, TypeVar, cast, overload

import attrs
from typing_extensions import Unpack

from .. import runtime
from ..errors import ConfigurationError
from ..prompt import Prompt, PromptTemplate
from ..runtime import (
    DEFAULT_MAX_EXPANSIONS,
    DEFAULT_MAX_TURNS,
    RunSettings,
    default_redact,
    run_with,
    run_with_sync,
)
from ..runtime.blocking import block_on
from ..runtime.guardrails import checked_guardrails
from ..safetext import type_name
from ..session import Session
from .building import (
    check_adapter,
    check_names,
    instructions_template,
    merged_settings,
    prompt_of,
    session_for,
)
from .handoffs import Handoff, handed_to, handoff_provenance, handoffs_of, joining, one_finish
from .options import AgentDefaults, RunOverrides

if TYPE_CHECKING:
    from ..budget import Budget, BudgetTracker
    from ..model import CompactionSettings, ModelSettings, ProviderAdapter, ToolChoice
    from ..parts import Content
    from ..prompt import Toolset
    from ..prompt.output import OutputMode
    from ..resources import ResourceRegistry
    from ..runtime import PromptResponse, Redactor
    from ..runtime.approval import Decision, InlineApprover
    from ..runtime.dispatcher import ToolExecution
    from ..runtime.guardrails import Guardrail
    from ..runtime.output_checks import OutputValidator
    from ..runtime.results import Retention, ToolOutputSettings
    from ..runtime.run_events import EventCallback, RunEvent
    from ..runtime.streaming import Feed
    from ..runtime.tracing import Tracing
    from ..store import Store
    from ..tools import AnyTool, Tool
    from ..transcript.lazy import LoadToolResults

__all__ = ["Agent"]

OutputT = TypeVar("OutputT")

_DEFAULT_NAMES = frozenset(AgentDefaults.__optional_keys__)
_OVERRIDE_NAMES = frozenset(RunOverrides.__optional_keys__)
# Keywords that shape the one-section template built from instructions=; a template= has its own.
_INSTRUCTION_ONLY = ("tools", "toolsets", "params_type", "output_type", "output_mode", "name")


@attrs.frozen(init=False, eq=False, repr=False)
class Agent(Generic[OutputT]):
    """A prompt, a model and the default settings of its runs: build once, run many times.

    ``Agent(adapter, instructions="...", tools=[...], output_type=T)`` builds
    a one-section :class:`~weakprompt.prompt.PromptTemplate` (its text,
    its tools, its output type); ``Agent(adapter, template=...)`` takes a
    whole prompt tree (a ``PromptTemplate`` or a ``Prompt``). The other
    keywords are the defaults of every run (:class:`AgentDefaults`); each
    call may override any of them (:class:`RunOverrides`).

    ``output_type`` types the answer: ``Agent[T]``, whose responses have an
    ``output`` of type ``T``; without one the agent is an ``Agent[None]``
    and the answer is the response's ``text``.
    """

    prompt: Prompt[OutputT]
    """The prompt every run renders (the call's ``params`` are bound to it)."""
    adapter: ProviderAdapter
    store: Store | None = None
    budget: Budget | BudgetTracker | None = None
    max_turns: int = DEFAULT_MAX_TURNS
    tool_choice: ToolChoice = "auto"
    output_retries: int = 1
    max_expansions: int = DEFAULT_MAX_EXPANSIONS
    resources: ResourceRegistry | None = None
    max_output_tokens: int | None = None
    load_tool_results: LoadToolResults = False
    retention: Retention = "session"
    tool_outputs: ToolOutputSettings | None = None
    redact: Redactor = default_redact
    concurrent_tools: bool = True
    on_event: EventCallback | None = None
    tracing: Tracing | None = None
    approve: InlineApprover | None = None
    model_settings: ModelSettings | None = None
    """Over the template's model settings; a call's ``model_settings`` go over these, field by field."""
    compaction: CompactionSettings | None = None
    """Window accounting and compaction of each run's context (``specs/COMPACTION.md``)."""
    output_validators: tuple[OutputValidator[OutputT], ...] = attrs.field(default=(), converter=tuple)
    guardrails: tuple[Guardrail, ...] = attrs.field(default=(), converter=checked_guardrails)
    """Checked on every run, before the call's own (``specs/GUARDRAILS.md``)."""
    strict_verdict: bool = False
    """A run whose required tool failed raises ``RequiredToolFailed`` instead of answering."""
    handoffs: tuple[Handoff[OutputT], ...] = ()
    """The agents this one may hand the conversation to (``specs/HANDOFFS.md``)."""
    """Checks of each run's typed answer; raising ``OutputValidationError`` gives a corrective turn."""

    if TYPE_CHECKING:
        # attrs writes this one (init=False keeps it); declared so the type checker knows it.
        def __attrs_init__(
            self,
            *,
            prompt: Prompt[OutputT],
            adapter: ProviderAdapter,
            output_validators: Sequence[OutputValidator[OutputT]] = (),
            handoffs: tuple[Handoff[OutputT], ...] = (),
            **defaults: Unpack[AgentDefaults],
        ) -> None: ...

    @overload
    def __init__(
        self: Agent[None],
        adapter: ProviderAdapter,
        *,
        instructions: str,
        tools: Iterable[AnyTool] = (),
        toolsets: Iterable[Toolset] = (),
        params_type: type[object] | None = None,
        output_type: None = None,
        output_mode: OutputMode | None = None,
        name: str | None = None,
        handoffs: Iterable[Agent[None] | Handoff[None]] = (),
        **defaults: Unpack[AgentDefaults],
    ) -> None: ...
    @overload
    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        instructions: str,
        tools: Iterable[AnyTool] = (),
        toolsets: Iterable[Toolset] = (),
        params_type: type[object] | None = None,
        output_type: type[OutputT],
        output_mode: OutputMode | None = None,
        name: str | None = None,
        output_validators: Sequence[OutputValidator[OutputT]] = (),
        handoffs: Iterable[Agent[OutputT] | Handoff[OutputT]] = (),
        **defaults: Unpack[AgentDefaults],
    ) -> None: ...
    @overload
    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        template: PromptTemplate[OutputT] | Prompt[OutputT],
        output_validators: Sequence[OutputValidator[OutputT]] = (),
        handoffs: Iterable[Agent[OutputT] | Handoff[OutputT]] = (),
        **defaults: Unpack[AgentDefaults],
    ) -> None: ...
    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        instructions: str | None = None,
        template: PromptTemplate[OutputT] | Prompt[OutputT] | None = None,
        tools: Iterable[AnyTool] = (),
        toolsets: Iterable[Toolset] = (),
        params_type: type[object] | None = None,
        output_type: type[OutputT] | None = None,
        output_mode: OutputMode | None = None,
        name: str | None = None,
        output_validators: Sequence[OutputValidator[OutputT]] = (),
        handoffs: Iterable[object] = (),
        **defaults: Unpack[AgentDefaults],
    ) -> None:
        """See the class: ``instructions=`` (with its keywords) or ``template=``, and the run defaults."""
        check_names("Agent", defaults, _DEFAULT_NAMES, "(the run defaults an Agent keeps)")
        check_adapter("Agent", adapter)
        tools, toolsets = tuple(tools), tuple(toolsets)  # read once: an iterator is not read twice
        given = {
            "tools": bool(tools),
            "toolsets": bool(toolsets),
            "params_type": params_type is not None,
            "output_type": output_type is not None,
            "output_mode": output_mode is not None,
            "name": name is not None,
        }
        if template is not None:
            if instructions is not None:
                raise ConfigurationError(
                    "Agent: give instructions= (text for a one-section prompt) or template= (a whole "
                    "prompt tree), not both"
                )
            extra = [keyword for keyword in _INSTRUCTION_ONLY if given[keyword]]
            if extra:
                raise ConfigurationError(
                    f"Agent: {', '.join(f'{k}=' for k in extra)} go with instructions=; with template= "
                    "they are part of the template (its sections' tools, its output_type)"
                )
            prompt = prompt_of(template)
            handing: tuple[Handoff[OutputT], ...] = handoffs_of(handoffs, prompt.template.output_type)
            for handoff in handing:  # a template offers the transfer tools in a section of its own
                if prompt.template.tool_named(handoff.tool.name) is None:
                    raise ConfigurationError(
                        f"Agent: handoffs= with template=: the template offers no tool named "
                        f"{handoff.tool.name!r}; add the Handoff's .tool to one of its sections"
                    )
        elif instructions is None:
            raise ConfigurationError(
                "Agent: needs instructions= (text for a one-section prompt) or template= (a PromptTemplate "
                "or a Prompt)"
            )
        else:
            handing = handoffs_of(handoffs, output_type)
            prompt = Prompt(
                instructions_template(
                    instructions,
                    (*tools, *(handoff.tool for handoff in handing)),
                    toolsets,
                    params_type,
                    output_type,
                    output_mode,
                    name,
                )
            )
        self.__attrs_init__(
            prompt=prompt, adapter=adapter, output_validators=output_validators, handoffs=handing, **defaults
        )
        # The limits are checked now, by the rules every run uses, not at the first run.
        self._settings("Agent", Session(session_id="agent-check"), None, {})

    @property
    def template(self) -> PromptTemplate[OutputT]:
        """The prompt tree the agent runs."""
        return self.prompt.template

    def __repr__(self) -> str:
        output = self.template.output_type
        return (
            f"Agent({self.template.display_name!r}, adapter={type_name(self.adapter)}, "
            f"output_type={None if output is None else output.__qualname__})"
        )

    # -- runs --------------------------------------------------------------------------------------

    async def run(
        self,
        input: Content | None = None,
        *,
        params: Sequence[object] = (),
        session: Session | str | None = None,
        **overrides: Unpack[RunOverrides],
    ) -> PromptResponse[OutputT]:
        """Run the agent on ``input`` (the user's message) until the model answers.

        ``params`` are section params objects, bound to the prompt for this
        run. ``session`` is a :class:`~weakprompt.session.Session`, the id of
        a conversation in the store (continued if it is there, begun if not;
        the run needs a store then), or ``None`` for a new conversation.
        ``overrides`` change the agent's defaults for this run only. Everything
        else is :func:`~weakprompt.runtime.loop.run`'s.
        """
        prompt, settings = self._start("run", input, params, session, overrides)
        return await _followed(self._runs(prompt, settings, overrides), run_with)

    def run_sync(
        self,
        input: Content | None = None,
        *,
        params: Sequence[object] = (),
        session: Session | str | None = None,
        **overrides: Unpack[RunOverrides],
    ) -> PromptResponse[OutputT]:
        """:meth:`run`, blocking: from a script, or from code already inside an event loop."""
        prompt, settings = self._start("run_sync", input, params, session, overrides)
        runs = self._runs(prompt, settings, overrides)
        step = next(runs)
        while True:
            try:
                step = runs.send(run_with_sync(*step))
            except StopIteration as end:
                return cast("PromptResponse[OutputT]", end.value)

    def stream(
        self,
        input: Content | None = None,
        *,
        params: Sequence[object] = (),
        session: Session | str | None = None,
        **overrides: Unpack[RunOverrides],
    ) -> AbstractAsyncContextManager[AsyncIterator[RunEvent[OutputT]]]:
        """``async with agent.stream(...) as events: async for event in events: ...``.

        :meth:`run`'s arguments; the events end with ``RunFinished`` (holding
        the response, as :meth:`run` returns it) when the run succeeds. A
        handoff is followed: the target's events come next, in the same
        stream. Leaving the block early cancels the run
        (``weakprompt.runtime.streaming``). An ``on_event`` hears the events too.
        """
        prompt, settings = self._start("stream", input, params, session, overrides)
        return runtime.stream_runs(
            lambda feed: _followed(self._runs(prompt, settings, overrides, feed), run_with)
        )

    def stream_sync(
        self,
        input: Content | None = None,
        *,
        params: Sequence[object] = (),
        session: Session | str | None = None,
        **overrides: Unpack[RunOverrides],
    ) -> AbstractContextManager[Iterator[RunEvent[OutputT]]]:
        """``with agent.stream_sync(...) as events: for event in events: ...`` (runs on a worker thread)."""
        prompt, settings = self._start("stream_sync", input, params, session, overrides)
        return runtime.stream_runs_sync(
            lambda feed: _followed(self._runs(prompt, settings, overrides, feed), run_with)
        )

    # -- resuming ----------------------------------------------------------------------------------

    async def resume(
        self,
        session: Session | str,
        decisions: Sequence[Decision] = (),
        *,
        params: Sequence[object] = (),
        decided_by: str | None = None,
        **overrides: Unpack[RunOverrides],
    ) -> PromptResponse[OutputT]:
        """Continue a run of this agent that paused (or crashed) in ``session``, with ``decisions``.

        ``session`` is the paused session's id (``response.session_id``), or
        the ``Session`` to restore its state into; the store is the agent's
        or the call's. Pass the ``params`` the run had: the decisions are
        checked against the tools it offered. See
        :func:`~weakprompt.runtime.resume.resume_sync` for the checks and
        the rules (``specs/APPROVAL.md``).
        """
        prompt, settings, session_id = self._resume("resume", session, params, overrides)
        # Agents this run called as tools that wait are resumed first, where they stopped.
        from .nested import resume_tree

        return await resume_tree(
            prompt,
            settings,
            session_id,
            decisions,
            session_given=isinstance(session, Session),
            decided_by=decided_by,
        )

    def resume_sync(
        self,
        session: Session | str,
        decisions: Sequence[Decision] = (),
        *,
        params: Sequence[object] = (),
        decided_by: str | None = None,
        **overrides: Unpack[RunOverrides],
    ) -> PromptResponse[OutputT]:
        """:meth:`resume`, blocking."""
        prompt, settings, session_id = self._resume("resume_sync", session, params, overrides)
        given = isinstance(session, Session)
        from .nested import resume_tree

        return block_on(
            lambda: resume_tree(
                prompt, settings, session_id, decisions, session_given=given, decided_by=decided_by
            )
        )

    # -- as a tool of another agent ------------------------------------------------------------------

    @overload
    def as_tool(
        self: Agent[None], *, name: str, description: str, budget: Budget | None = None
    ) -> Tool[object, str]: ...
    @overload
    def as_tool(
        self, *, name: str, description: str, budget: Budget | None = None
    ) -> Tool[object, OutputT]: ...
    def as_tool(
        self, *, name: str, description: str, budget: Budget | None = None
    ) -> Tool[object, OutputT] | Tool[object, str]:
        """This agent as a tool another agent can call: each call runs it as a child run.

        The tool's arguments are the agent's params type (or ``{"input": "..."}``
        for an agent without params); its result is the agent's output (its
        text without an output type). The child runs in its own session of the
        parent's store, its usage counted in the parent's; ``budget`` caps its
        subtree (``specs/SUBAGENTS.md``).
        """
        from .as_tool import agent_tool

        return cast(
            "Tool[object, OutputT]", agent_tool(self, name=name, description=description, budget=budget)
        )

    # -- one call's settings -----------------------------------------------------------------------

    def _start(
        self,
        method: str,
        input: object,
        params: Sequence[object],
        session: object,
        overrides: RunOverrides,
    ) -> tuple[Prompt[OutputT], RunSettings]:
        where = f"Agent.{method}"
        check_names(where, overrides, _OVERRIDE_NAMES, "(the overrides a call takes)")
        if input is not None and (not isinstance(input, Sequence) or isinstance(input, bytes | bytearray)):
            raise ConfigurationError(
                f"{where}: input (the user's message) must be text, a sequence of text and parts "
                f"(ImagePart, DocumentPart), or None, not {type_name(input)}"
            )
        prompt = self._bound(where, params)
        store = overrides.get("store", self.store)
        given = cast("Content | None", input)
        return prompt, self._settings(where, session_for(where, session, store), given, overrides)

    def _resume(
        self, method: str, session: object, params: Sequence[object], overrides: RunOverrides
    ) -> tuple[Prompt[OutputT], RunSettings, str]:
        where = f"Agent.{method}"
        check_names(where, overrides, _OVERRIDE_NAMES, "(the overrides a call takes)")
        prompt = self._bound(where, params)
        store = overrides.get("store", self.store)
        if store is None:
            raise ConfigurationError(
                f"{where}: a paused run is read from a store, and neither the Agent nor this call has "
                "store= (give the store the run was made in)"
            )
        if session is None:
            raise ConfigurationError(
                f"{where}: session= must name the paused run (its session id or Session)"
            )
        used = session_for(where, session, store)
        # A resumed run continues a conversation: its first call is not forced by the agent's default.
        resumed: RunOverrides = {"tool_choice": "auto", **overrides}
        return prompt, self._settings(where, used, None, resumed), used.session_id

    def _runs(
        self,
        prompt: Prompt[OutputT],
        settings: RunSettings,
        overrides: RunOverrides,
        feed: Feed | None = None,
    ) -> Generator[tuple[Prompt[OutputT], RunSettings], PromptResponse[OutputT], PromptResponse[OutputT]]:
        """The runs of one call: this agent's, then each one a handoff passes the conversation to.

        Sent each run's response, it yields the next run (its prompt and
        settings, through ``feed`` for a stream) and returns the responses
        joined. Listeners hear one ``RunFinished``, the last (``one_finish``).
        """
        agent: Agent[OutputT] = self
        before: PromptResponse[OutputT] | None = None
        while True:
            shown = settings if feed is None else feed(settings)
            join = joining(before)
            if agent.handoffs or before is not None:  # a chain of runs: its listeners hear one end
                shown = one_finish(agent.handoffs, join, shown)
            response = yield prompt, shown
            step = handed_to(agent.handoffs, response)
            before = join(response)
            if step is None:
                return before
            agent, prompt, settings = agent._handed(step[0], step[1], response, settings, overrides)

    def _handed(
        self,
        handoff: Handoff[OutputT],
        call: ToolExecution,
        response: PromptResponse[OutputT],
        settings: RunSettings,
        overrides: RunOverrides,
    ) -> tuple[Agent[OutputT], Prompt[OutputT], RunSettings]:
        """The target's run: its own prompt and defaults, the same session, store and deadline.

        The call's overrides carry over but ``adapter`` and ``message_history`` (the first agent's).
        With no store, the conversation so far is handed over as the target's ``message_history``.
        """
        target = handoff.agent
        carried: RunOverrides = {
            key: value  # type: ignore[misc]
            for key, value in overrides.items()
            if key not in ("adapter", "message_history", "store")
        }
        handed = target._settings(
            f"handoff to {target.template.display_name}", settings.session, None, carried
        )
        handed = attrs.evolve(
            handed,
            store=settings.store,
            deadline=settings.deadline,
            message_history=None if settings.store is not None else response.messages,
            handoff=handoff_provenance(self, handoff, call, response.head),
            history_filter=handoff.input_filter,
        )
        return target, target.prompt, handed

    def _bound(self, where: str, params: Sequence[object]) -> Prompt[OutputT]:
        """The prompt with this call's params bound (a lone object or text is refused, not split up)."""
        if not isinstance(params, (tuple, list)):
            raise ConfigurationError(
                f"{where}: params= takes a tuple of section params objects, such as params=(Task(...),), "
                f"not {type_name(params)}"
            )
        return self.prompt.bind(*params) if params else self.prompt

    def _settings(
        self, where: str, session: Session, input: Content | None, overrides: RunOverrides
    ) -> RunSettings:
        """The run's settings: each override given for this call, else the agent's default."""
        adapter = overrides.get("adapter", self.adapter)
        if "adapter" in overrides:
            check_adapter(where, adapter)
        return RunSettings(
            adapter=adapter,
            session=session,
            input=input,
            store=overrides.get("store", self.store),
            deadline=overrides.get("deadline"),
            budget=overrides.get("budget", self.budget),
            max_turns=overrides.get("max_turns", self.max_turns),
            tool_choice=overrides.get("tool_choice", self.tool_choice),
            output_retries=overrides.get("output_retries", self.output_retries),
            max_expansions=overrides.get("max_expansions", self.max_expansions),
            resources=overrides.get("resources", self.resources),
            max_output_tokens=overrides.get("max_output_tokens", self.max_output_tokens),
            load_tool_results=overrides.get("load_tool_results", self.load_tool_results),
            retention=overrides.get("retention", self.retention),
            tool_outputs=overrides.get("tool_outputs", self.tool_outputs),
            redact=overrides.get("redact", self.redact),
            concurrent_tools=overrides.get("concurrent_tools", self.concurrent_tools),
            on_event=overrides.get("on_event", self.on_event),
            tracing=overrides.get("tracing", self.tracing),
            approve=overrides.get("approve", self.approve),
            model_settings=merged_settings(self.model_settings, overrides.get("model_settings")),
            output_validators=self.output_validators,
            message_history=overrides.get("message_history"),
            guardrails=(*self.guardrails, *overrides.get("guardrails", ())),
            strict_verdict=overrides.get("strict_verdict", self.strict_verdict),
            compaction=overrides.get("compaction", self.compaction),
        )


async def _followed(
    runs: Generator[tuple[Prompt[OutputT], RunSettings], PromptResponse[OutputT], PromptResponse[OutputT]],
    run: Callable[[Prompt[OutputT], RunSettings], Awaitable[PromptResponse[OutputT]]],
) -> PromptResponse[OutputT]:
    """Make the runs of :meth:`Agent._runs` one after another with ``run``; the joined response."""
    step = next(runs)
    while True:
        try:
            step = runs.send(await run(*step))
        except StopIteration as end:
            return cast("PromptResponse[OutputT]", end.value)
