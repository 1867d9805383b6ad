"""The settings of one run, declared once: built by the entry points, read by every part of the loop.

``run``, ``run_sync`` (``evaluate``), ``stream`` and ``resume_sync`` take
these as keyword arguments (their public signatures), build one
:class:`RunSettings` at the entry and pass it down; nothing below the entry
repeats the list.
Integrations that must hook into a run (``weakprompt.durable``) build one
themselves, with :attr:`RunSettings.tool_wrapper`, and call
:func:`~weakprompt.runtime.loop.run_with` / :func:`~weakprompt.runtime.resume.resume_with`.
"""

from __future__ import annotations

import difflib
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Generic, TypeVar

import attrs
from typing_extensions import TypedDict

from ..errors import ConfigurationError
from ..jsontypes import JSONObject
from ..messages import Message
from ..model.compaction_settings import CompactionSettings
from ..model_settings import ModelSettings
from ..parts import Content, DocumentPart, ImagePart, TextPart
from .guardrails import Guardrail, checked_guardrails
from .handoff_runs import HistoryFilter
from .output_checks import AnyOutputValidator
from .redaction import Redactor, default_redact

if TYPE_CHECKING:
    from ..budget import Budget, BudgetTracker
    from ..deadlines import Deadline
    from ..model import ModelSettings, ProviderAdapter, ToolChoice
    from ..resources import ResourceRegistry
    from ..session import Session
    from ..store import Store
    from ..tools import AnyTool
    from ..transcript.lazy import LoadToolResults
    from ..transcript.transcript import Transcript
    from .approval import InlineApprover
    from .output_checks import OutputValidator
    from .results import Retention, ToolOutputSettings
    from .run_events import EventCallback
    from .tracing import Tracing

__all__ = [
    "DEFAULT_MAX_EXPANSIONS",
    "DEFAULT_MAX_TURNS",
    "RunOptions",
    "RunSettings",
    "StreamOptions",
    "ToolWrapper",
    "settings_of",
]

OutputT = TypeVar("OutputT")

DEFAULT_MAX_TURNS = 16
DEFAULT_MAX_EXPANSIONS = 4

ToolWrapper = Callable[["AnyTool"], "AnyTool"]
"""Gives the tool the dispatcher runs in place of each offered tool (:attr:`RunSettings.tool_wrapper`).

An integration that must see every handler call (a durable engine that
records each call, ``weakprompt.durable``) wraps the handler here; the
wrapper keeps the tool's name and schema, so approvals and stored
definitions do not change.
"""


def _check_limit(least: int) -> Callable[[object, attrs.Attribute[int], int], None]:
    def check(_settings: object, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
            raise ConfigurationError(f"evaluate: {attribute.name} must be an int >= {least}, got {value!r}")

    return check


def _check_model_settings(run: RunSettings, _attribute: object, value: object) -> None:
    if value is None:
        return
    if not isinstance(value, ModelSettings):
        raise ConfigurationError(f"evaluate: model_settings must be a ModelSettings or None, got {value!r}")
    if value.max_output_tokens is not None and run.max_output_tokens is not None:
        raise ConfigurationError(
            "evaluate: max_output_tokens is given twice (as an argument and in model_settings); give it once"
        )


def _check_compaction(_run: object, _attribute: object, value: object) -> None:
    if value is not None and not isinstance(value, CompactionSettings):
        raise ConfigurationError(
            f"evaluate: compaction must be a CompactionSettings or None, got {type(value).__name__}"
        )


def _validators(value: Sequence[AnyOutputValidator]) -> tuple[AnyOutputValidator, ...]:
    """The validators as a tuple, each checked callable (a bare function is refused: wrap it in a tuple)."""
    if callable(value) or not isinstance(value, Sequence) or isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(
            f"evaluate: output_validators must be a sequence of functions, got {type(value).__name__} "
            "(one validator: output_validators=(check,))"
        )
    for index, validator in enumerate(value):
        if not callable(validator):  # pyright: ignore[reportUnnecessaryComparison]  # a caller's value
            raise ConfigurationError(
                f"evaluate: output_validators[{index}] is not callable ({type(validator).__name__}); "
                "give functions over the output that raise OutputValidationError to reject it"
            )
    return tuple(value)


_INPUT_ITEMS = (str, TextPart, ImagePart, DocumentPart)


def _input(value: Content | None) -> Content | None:
    """The user's input: text, or text, images and documents in order (frozen as a tuple), checked."""
    if value is None or isinstance(value, str):
        return value
    given: object = value
    if not isinstance(given, Sequence) or isinstance(given, bytes | bytearray):
        raise ConfigurationError(
            f"evaluate: input must be text or a sequence of text and parts (ImagePart, DocumentPart), "
            f"got {type(given).__name__}"
        )
    items = tuple(typing.cast("Sequence[object]", given))
    for index, item in enumerate(items):
        if not isinstance(item, _INPUT_ITEMS):
            raise ConfigurationError(
                f"evaluate: input[{index}] is a {type(item).__name__}; input holds text, TextPart, "
                "ImagePart and DocumentPart items"
            )
    return typing.cast("tuple[str | TextPart | ImagePart | DocumentPart, ...]", items)


def _history(value: Sequence[Message] | None) -> tuple[Message, ...] | None:
    """The prior messages as a tuple, each checked: a :class:`Message`, and not a system message."""
    if value is None:
        return None
    if not isinstance(value, Sequence) or isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(
            f"evaluate: message_history must be a sequence of weakprompt.messages.Message, got "
            f"{type(value).__name__}"
        )
    for index, message in enumerate(value):
        if not isinstance(message, Message):  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
            raise ConfigurationError(
                f"evaluate: message_history[{index}] is a {type(message).__name__}, not a "
                "weakprompt.messages.Message (pass back response.messages of an earlier run)"
            )
        if message.role == "system":
            raise ConfigurationError(
                f"evaluate: message_history[{index}] is a system message; the prompt writes the "
                "system message of every run, so leave it out of the history"
            )
    return tuple(value)


@attrs.frozen(kw_only=True, eq=False)
class RunSettings:
    """Everything a run is told at its start (see :func:`~weakprompt.runtime.loop.run_sync` for each).

    ``concurrent_tools`` and ``on_event`` are :func:`~weakprompt.runtime.loop.run`'s;
    ``tool_wrapper`` is for integrations only (no public entry takes it).
    ``model_settings`` go over the prompt template's (``specs/ADAPTERS.md``, "Model settings").
    The limits are checked here, so a bad one fails before the run starts.
    """

    adapter: ProviderAdapter
    session: Session
    input: Content | None = attrs.field(default=None, converter=_input)
    message_history: tuple[Message, ...] | None = attrs.field(default=None, converter=_history)
    store: Store | None = None
    transcript: Transcript | None = None
    deadline: Deadline | None = None
    budget: Budget | BudgetTracker | None = None
    max_turns: int = attrs.field(default=DEFAULT_MAX_TURNS, validator=_check_limit(1))
    tool_choice: ToolChoice = "auto"
    output_retries: int = attrs.field(default=1, validator=_check_limit(0))
    output_validators: tuple[AnyOutputValidator, ...] = attrs.field(default=(), converter=_validators)
    max_expansions: int = attrs.field(default=DEFAULT_MAX_EXPANSIONS, validator=_check_limit(0))
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
    tool_wrapper: ToolWrapper | None = None
    model_settings: ModelSettings | None = attrs.field(default=None, validator=_check_model_settings)
    guardrails: tuple[Guardrail, ...] = attrs.field(default=(), converter=checked_guardrails)
    """Checks at the run's input, output, tool arguments and tool results (``specs/GUARDRAILS.md``)."""
    strict_verdict: bool = False
    """Raise ``RequiredToolFailed`` (with the response) instead of answering when the verdict fails."""
    handoff: JSONObject | None = None
    """A handoff's provenance, kept on the run's system commit (the ``Agent`` sets it; no entry takes it)."""
    history_filter: HistoryFilter | None = None
    """What of the conversation before this run the model sees (a handoff's input filter)."""
    compaction: CompactionSettings | None = attrs.field(default=None, validator=_check_compaction)


class StreamOptions(TypedDict, Generic[OutputT], total=False):
    """The keywords of a streamed run besides ``adapter`` and ``session``: the :class:`RunSettings` fields.

    Written once here and spelled ``**options: Unpack[StreamOptions[T]]``
    by ``stream`` / ``stream_sync`` (and, with ``on_event``, by
    :class:`RunOptions` for ``run`` / ``run_sync``), so a strict type checker
    knows every keyword and its type; each default is the field's default.
    """

    input: Content | None
    message_history: Sequence[Message] | None
    store: Store | None
    transcript: Transcript | None
    deadline: Deadline | None
    budget: Budget | BudgetTracker | None
    max_turns: int
    tool_choice: ToolChoice
    output_retries: int
    output_validators: Sequence[OutputValidator[OutputT]]
    max_expansions: int
    resources: ResourceRegistry | None
    max_output_tokens: int | None
    load_tool_results: LoadToolResults
    retention: Retention
    tool_outputs: ToolOutputSettings | None
    redact: Redactor
    concurrent_tools: bool
    tracing: Tracing | None
    approve: InlineApprover | None
    model_settings: ModelSettings | None
    guardrails: Sequence[Guardrail]
    strict_verdict: bool
    compaction: CompactionSettings | None


class RunOptions(StreamOptions[OutputT], total=False):
    """``run`` and ``run_sync`` keywords beside ``adapter``, ``session``: a stream's, and ``on_event``."""

    on_event: EventCallback | None


def settings_of(
    where: str,
    adapter: ProviderAdapter,
    session: Session,
    options: Mapping[str, object],
    *,
    stream: bool = False,
) -> RunSettings:
    """The run's settings from an entry's keywords, refusing a keyword the entry does not take by name.

    A ``TypedDict`` types the keywords for a checker only: at run time an
    unknown one (or one for integrations, ``tool_wrapper``; ``on_event``
    for a stream, which feeds its own) must fail as a misspelt keyword does.
    """
    allowed = _STREAM_KEYS if stream else _RUN_KEYS
    for name in options:
        if name not in allowed:
            close = difflib.get_close_matches(name, sorted(allowed), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}{hint}")
    return RunSettings(adapter=adapter, session=session, **options)  # pyright: ignore[reportArgumentType]  # checked above


_STREAM_KEYS = frozenset(StreamOptions.__optional_keys__)
_RUN_KEYS = frozenset(RunOptions.__optional_keys__)
