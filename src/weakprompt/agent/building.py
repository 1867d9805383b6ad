"""What an ``Agent`` is built from and checks: its one-section template, the names it takes, a call's session.

Kept apart from the class so ``agent.py`` holds the agent itself: its
fields and its six entries.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, TypeVar, cast

from ..errors import ConfigurationError
from ..prompt import MarkdownSection, Prompt, PromptTemplate
from ..safetext import type_name
from ..session import Session

if TYPE_CHECKING:
    from ..model import ModelSettings
    from ..prompt import Toolset
    from ..prompt.output import OutputMode
    from ..tools import AnyTool

OutputT = TypeVar("OutputT")

__all__ = [
    "check_adapter",
    "check_names",
    "instructions_template",
    "merged_settings",
    "prompt_of",
    "session_for",
]


def instructions_template(  # noqa: PLR0917 - the keywords of Agent(instructions=...)
    instructions: str,
    tools: Iterable[AnyTool],
    toolsets: Iterable[Toolset],
    params_type: type[object] | None,
    output_type: type[OutputT] | None,
    output_mode: OutputMode | None,
    name: str | None,
) -> PromptTemplate[OutputT]:
    """The one-section template of ``Agent(instructions=...)``.

    Without ``params_type`` the instructions are plain text (a ``$`` is a
    dollar sign); with one they are a template over its fields, filled from
    the call's ``params``.
    """
    if not isinstance(instructions, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(f"Agent: instructions= must be text, not {type_name(instructions)}")
    section = MarkdownSection(
        title="Instructions",
        key="instructions",
        template=instructions if params_type is not None else instructions.replace("$", "$$"),
        params_type=params_type,
        tools=tools,
        toolsets=toolsets,
    )
    key = name if name is not None else "agent"
    if output_type is None:
        plain = PromptTemplate(ns="agent", key=key, name=name, sections=[section], output_mode=output_mode)
        return cast("PromptTemplate[OutputT]", plain)  # the overloads made this agent an Agent[None]
    return PromptTemplate(
        ns="agent", key=key, name=name, sections=[section], output_type=output_type, output_mode=output_mode
    )


def prompt_of(template: PromptTemplate[OutputT] | Prompt[OutputT]) -> Prompt[OutputT]:
    if isinstance(template, Prompt):
        return template
    if not isinstance(template, PromptTemplate):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(
            f"Agent: template= takes a PromptTemplate or a Prompt, not {type_name(template)}"
        )
    return Prompt(template)


def check_adapter(where: str, adapter: object) -> None:
    """Refuse what cannot be a model (a model name given as text, say) before any run."""
    kind = type(adapter)
    if not (callable(getattr(kind, "complete", None)) and callable(getattr(kind, "stream", None))):
        raise ConfigurationError(
            f"{where}: adapter must be a ProviderAdapter (FunctionAdapter, ScriptedAdapter, LocalAdapter, "
            f"OpenAIAdapter, AnthropicAdapter, ...), not {type_name(adapter)}"
        )


def check_names(where: str, given: Mapping[str, object], known: frozenset[str], what: str) -> None:
    """Refuse an unknown keyword by name (``TypeError``, as Python does), with the closest known one."""
    for name in given:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = (
                f"; did you mean {close[0]!r}?" if close else f"; it takes: {', '.join(sorted(known))} {what}"
            )
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}{hint}")


def session_for(where: str, session: object, store: object) -> Session:
    """The call's session: the one given, one for a stored conversation's id, or a new one."""
    if session is None:
        return Session()
    if isinstance(session, Session):
        return session
    if isinstance(session, str):
        if not session.strip():
            raise ConfigurationError(f"{where}: session= is an empty session id")
        if store is None:
            raise ConfigurationError(
                f"{where}: session={session!r} names a conversation kept in a store, and this run has "
                "none: give the Agent (or this call) store=..., or pass a Session"
            )
        return Session(session_id=session)
    raise ConfigurationError(
        f"{where}: session= takes a Session, a session id (str) or None, not {type_name(session)}"
    )


def merged_settings(agent: ModelSettings | None, call: ModelSettings | None) -> ModelSettings | None:
    """The call's model settings over the agent's, field by field (either may be absent)."""
    if agent is None or call is None:
        return call or agent
    return agent.merged(call)
