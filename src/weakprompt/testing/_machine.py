"""A hypothesis state machine whose rules are a prompt's tools.

Each rule calls one tool with generated arguments through a real
``ToolDispatcher`` over the prompt as rendered *now* (sections can switch
tools on and off as the session changes). The built-in checks are the
dispatcher contract seen over whole call sequences: a failed call changes
nothing, every call publishes one ``ToolInvoked``, and the session is the
fold of the successful calls (replaying them on a fresh session gives the
same state). Users subclass the returned class and add ``@invariant``
methods about their own slices.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from weakprompt.events import ToolInvoked
from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.messages import ToolCall
from weakprompt.prompt import OPEN_SECTIONS_TOOL, Prompt, PromptTemplate, RenderedPrompt
from weakprompt.resources import ResourceRegistry
from weakprompt.runtime import ToolCallPending, ToolDispatcher, ToolExecution
from weakprompt.session import Session
from weakprompt.tools import AnyTool, ToolResult

from ._contract import deep_copy
from ._invalid import InvalidArguments, invalid_arguments_for
from ._values import arguments_for

__all__ = ["CallRecord", "MachineConfig", "PromptStateMachine", "prompt_state_machine"]


@attrs.frozen
class MachineConfig:
    """What a generated state machine runs against."""

    prompt: Prompt[Any]
    session_factory: Callable[[], Session] = Session
    resources_factory: Callable[[], ResourceRegistry] | None = None
    replay: bool = True


@attrs.frozen
class CallRecord:
    """One call the machine made, in order."""

    name: str
    arguments: str
    execution: ToolExecution

    @property
    def success(self) -> bool:
        return self.execution.success


class PromptStateMachine(RuleBasedStateMachine):
    """Base of the classes :func:`prompt_state_machine` builds.

    Available to your invariants: ``self.session``, ``self.resources``,
    ``self.calls`` (every :class:`CallRecord`), ``self.events`` (every
    ``ToolInvoked`` seen), ``self.rendered`` (the prompt as it renders now).
    Call tools from your own rules with :meth:`dispatch` so the built-in
    checks see those calls too.
    """

    config: ClassVar[MachineConfig]

    def __init__(self) -> None:
        super().__init__()
        config = type(self).config
        self.session: Session = config.session_factory()
        self.resources: ResourceRegistry | None = (
            config.resources_factory() if config.resources_factory is not None else None
        )
        self.calls: list[CallRecord] = []
        self.events: list[ToolInvoked] = []
        self.session.bus.subscribe(ToolInvoked, self.events.append)
        self._rendered: RenderedPrompt[Any] | None = None
        # The replica sees only the successful calls, in order: if the session is the
        # fold of those calls, both end up in the same state after every step.
        self._replica: tuple[Session, ResourceRegistry | None] | None = None
        if config.replay:
            self._replica = (
                config.session_factory(),
                config.resources_factory() if config.resources_factory is not None else None,
            )

    @property
    def rendered(self) -> RenderedPrompt[Any]:
        """The prompt rendered against the current session (cached until the next call)."""
        if self._rendered is None:
            self._rendered = type(self).config.prompt.render(self.session)
        return self._rendered

    def offers(self, name: str) -> bool:
        return self.rendered.tool_by_name(name) is not None

    def offered_tools(self) -> tuple[AnyTool, ...]:
        return tuple(tool for tool in self.rendered.tools if tool.name != OPEN_SECTIONS_TOOL)

    @property
    def successful_calls(self) -> tuple[CallRecord, ...]:
        return tuple(record for record in self.calls if record.success)

    def dispatch(self, name: str, arguments: str | Mapping[str, JSONValue]) -> ToolExecution:
        """Run one call and check the per-call promises (rollback, one event)."""
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        # Deep, to catch changes made inside slice values; resource snapshots are values already.
        before = tuple(deep_copy(part) if index == 0 else part for index, part in enumerate(self._state()))
        seen = len(self.events)
        execution = _dispatch(
            type(self).config,
            self.session,
            resources=self.resources,
            rendered=self.rendered,
            name=name,
            arguments=text,
        )
        self._rendered = None
        self.calls.append(CallRecord(name, text, execution))
        published = len(self.events) - seen
        assert published == 1, (
            f"call #{len(self.calls)} to {name!r} published {published} ToolInvoked events instead of one"
        )
        if not execution.success:
            after = self._state()
            assert after == before, (
                f"failed call #{len(self.calls)} to {name!r} left state changed\n"
                f"  arguments: {text}\n  result: {execution.message}\n"
                f"  before: {before!r}\n  after:  {after!r}"
            )
        elif self._replica is not None:
            self._check_replay(name, text)
        return execution

    def _state(self) -> tuple[object, ...]:
        return _state(self.session, self.resources)

    # -- built-in rules and checks ------------------------------------------------------------

    @invariant()
    def one_tool_invoked_per_call(self) -> None:
        assert len(self.events) == len(self.calls), (
            f"{len(self.calls)} calls published {len(self.events)} ToolInvoked events"
        )

    def _check_replay(self, name: str, arguments: str) -> None:
        """Apply the successful call to the replica too; both states must agree."""
        assert self._replica is not None
        session, resources = self._replica
        config = type(self).config
        execution = _dispatch(
            config,
            session,
            resources=resources,
            rendered=config.prompt.render(session),
            name=name,
            arguments=arguments,
        )
        replayed = sum(1 for record in self.calls if record.success)
        assert execution.success, (
            f"successful call {replayed} ({name} {arguments}) failed when the successful calls were "
            f"replayed on a fresh session: {execution.message}"
        )
        expected = _state(session, resources)
        actual = self._state()
        assert actual == expected, (
            "the session is not the fold of its successful calls: replaying them on a fresh session "
            "gives a different state (state changed by failed calls, kept outside the session, or "
            f"not deterministic?)\n  this session: {actual!r}\n  replayed:     {expected!r}"
        )


def _state(session: Session, resources: ResourceRegistry | None) -> tuple[object, ...]:
    """The live STATE slices (and captured resource states) for comparisons."""
    if resources is None:
        return (dict(session.state()),)
    # Compare captured states only: the resource objects differ between sessions.
    return (dict(session.state()), tuple(state for _, state in resources.snapshot().entries))


def _dispatch(
    config: MachineConfig,
    session: Session,
    *,
    resources: ResourceRegistry | None,
    rendered: RenderedPrompt[Any],
    name: str,
    arguments: str,
) -> ToolExecution:
    dispatcher = ToolDispatcher(
        rendered.tools,
        session=session,
        prompt=config.prompt,
        rendered_prompt=rendered,
        resources=resources,
        prompt_name=rendered.key,
    )
    call = ToolCall(id=f"call_{len(session[ToolInvoked]) + 1}", name=name, arguments=arguments)
    try:
        return dispatcher.execute(call, approved=True)  # the machine explores the tools, not the policy
    except ToolCallPending as deferred:  # its result would come later: the call ends unanswered here
        return dispatcher.answer(call, ToolResult.error(f"deferred: {deferred.note}"))


def _template_tools(template: PromptTemplate[Any]) -> list[AnyTool]:
    seen: dict[str, AnyTool] = {}
    for node in template.nodes:
        for tool in node.section.tools:
            seen.setdefault(tool.name, tool)
    return list(seen.values())


def _rule_name(tool_name: str) -> str:
    return "call_" + re.sub(r"\W", "_", tool_name)


def _tool_rule(tool: AnyTool) -> Callable[..., None]:
    name = tool.name

    def call(self: PromptStateMachine, arguments: JSONObject) -> None:
        self.dispatch(name, arguments)

    call.__name__ = call.__qualname__ = _rule_name(name)
    return precondition(lambda self: self.offers(name))(rule(arguments=arguments_for(tool))(call))


def _invalid_rule(tools: list[AnyTool]) -> Callable[..., None]:
    by_name = {tool.name: tool for tool in tools}
    strategies = {tool.name: invalid_arguments_for(tool) for tool in tools}

    def call_with_invalid_arguments(self: PromptStateMachine, data: st.DataObject) -> None:
        offered = [tool.name for tool in self.offered_tools() if tool.name in by_name]
        name = data.draw(st.sampled_from(offered), label="tool")
        bad: InvalidArguments = data.draw(strategies[name], label="arguments")
        execution = self.dispatch(name, bad.text)
        assert not execution.success and execution.event.params is None, (
            f"{name!r} accepted invalid arguments ({bad}): {execution.message}"
        )

    def has_offered(self: PromptStateMachine) -> bool:
        return any(tool.name in by_name for tool in self.offered_tools())

    return precondition(has_offered)(rule(data=st.data())(call_with_invalid_arguments))


def _unknown_rule(known: set[str]) -> Callable[..., None]:
    names = st.from_regex(re.compile(r"[a-z][a-z0-9_]{0,11}"), fullmatch=True).filter(
        lambda name: name not in known
    )

    def call_unknown_tool(self: PromptStateMachine, name: str) -> None:
        execution = self.dispatch(name, "{}")
        assert not execution.success, f"a call to the unknown tool {name!r} succeeded"

    return rule(name=names)(call_unknown_tool)


def prompt_state_machine(
    prompt: Prompt[Any] | PromptTemplate[Any],
    *params: object,
    session_factory: Callable[[], Session] = Session,
    resources_factory: Callable[[], ResourceRegistry] | None = None,
    invalid_calls: bool = True,
    replay: bool = True,
) -> type[PromptStateMachine]:
    """A ``RuleBasedStateMachine`` subclass with one rule per tool of ``prompt``.

    ``params`` are bound to the prompt (as ``Prompt.bind``). Each rule runs
    while its tool is offered by the current render. ``invalid_calls`` adds
    rules that send invalid arguments and unknown tool names (both must fail
    and change nothing). ``replay`` checks after every successful call that
    the session is the fold of the successful calls: a replica session that
    gets only those calls, in order, must be in the same state. Turn it off
    for tools whose results are not deterministic (fresh ids, timestamps) or
    when your own rules change the session directly.

    Use it as ``TestMyTools = prompt_state_machine(...).TestCase``, or
    subclass it and add ``@invariant()`` methods over ``self.session``.
    """
    bound = Prompt(prompt) if isinstance(prompt, PromptTemplate) else prompt
    if params:
        bound = bound.bind(*params)
    tools = [tool for tool in _template_tools(bound.template) if tool.name != OPEN_SECTIONS_TOOL]
    namespace: dict[str, object] = {
        "config": MachineConfig(bound, session_factory, resources_factory, replay),
        "__doc__": f"Tool calls against prompt {bound.ns}/{bound.key}.",
    }
    for tool in tools:
        namespace[_rule_name(tool.name)] = _tool_rule(tool)
    if invalid_calls:
        if tools:
            namespace["call_with_invalid_arguments"] = _invalid_rule(tools)
        namespace["call_unknown_tool"] = _unknown_rule({tool.name for tool in tools} | {OPEN_SECTIONS_TOOL})
    name = "".join(part.title() for part in re.split(r"\W|_", bound.key) if part) + "ToolsMachine"
    return type(name, (PromptStateMachine,), namespace)
