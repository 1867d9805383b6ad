"""The section tree: one node of instructions plus the tools it documents.

A section owns its text *and* its tools, so enabling, disabling, summarising or
reordering a section moves both together. Sections are immutable; rendering
state (bound params, expanded sections) lives on the prompt.
"""

from __future__ import annotations

import abc
import enum
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, TypeVar, cast

import attrs

from ..errors import PromptValidationError
from ..session import Session
from .keys import normalize_key
from .template import CompiledTemplate, check_placeholders, is_params_type
from .toolsets import Toolset
from .volatility import Volatility

if TYPE_CHECKING:
    from ..tools import AnyTool, ApprovalPolicy

__all__ = [
    "AnySection",
    "EnabledPredicate",
    "MarkdownSection",
    "Section",
    "Visibility",
]

if TYPE_CHECKING:
    # A section built without params is a ``Section[None]`` for the type checker (PEP 696
    # default), matching the ``None`` its predicates receive at runtime.
    from typing_extensions import TypeVar as DefaultTypeVar

    P = DefaultTypeVar("P", default=None)
else:
    P = TypeVar("P")

EnabledPredicate: TypeAlias = bool | Callable[[P], bool] | Callable[[P, Session | None], bool]
"""``True``/``False``, ``fn(params)`` or ``fn(params, session)``.

Predicates get the section's params (``None`` for a section without a params
type) and, if they have a second *required* positional parameter (or
``*args``), the render's session (``None`` when rendering without one).
Parameters with defaults are left alone, so ``lambda p, key=key: ...`` works.
"""


class Visibility(enum.Enum):
    """How a section renders by default.

    ``SUMMARY`` shows only the section's ``summary`` (its children and every tool
    below it are left out) until the section is expanded by key.
    """

    FULL = "full"
    SUMMARY = "summary"


def _to_children(value: Iterable[Section[Any]]) -> tuple[Section[Any], ...]:
    return tuple(value)


def _to_tools(value: Iterable[AnyTool]) -> tuple[AnyTool, ...]:
    return tuple(value)


def _to_toolsets(value: Iterable[Toolset]) -> tuple[Toolset, ...]:
    return tuple(value)


def _to_key(value: str) -> str:
    return normalize_key(value)


def _takes_session(predicate: Callable[..., object]) -> bool:
    """Whether an ``enabled`` predicate wants ``(params, session)`` rather than ``(params)``."""
    try:
        signature = inspect.signature(predicate)
    except (TypeError, ValueError):
        return False
    positional = 0
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        positional_kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        # Parameters with defaults are not counted: ``lambda p, key=key: ...`` captures a value.
        if parameter.kind in positional_kinds and parameter.default is inspect.Parameter.empty:
            positional += 1
    return positional >= 2


@attrs.frozen(kw_only=True, eq=False)
class Section(abc.ABC, Generic[P]):
    """Abstract node of a prompt tree.

    Subclasses decide how the body is produced (:meth:`render_body`) and what
    text an override replaces (:attr:`override_source`). The params type comes
    from ``default_params`` or ``params_type``; it is never read from a
    subscript at runtime.
    """

    title: str
    key: str = attrs.field(converter=_to_key)
    default_params: P | None = None
    params_type: type[P] | None = None
    children: tuple[Section[Any], ...] = attrs.field(default=(), converter=_to_children)
    enabled: EnabledPredicate[P] = True
    tools: tuple[AnyTool, ...] = attrs.field(default=(), converter=_to_tools)
    toolsets: tuple[Toolset, ...] = attrs.field(default=(), converter=_to_toolsets)
    """Live tool sources (a mounted MCP server): their tools are read on every render."""
    accepts_overrides: bool = True
    summary: str | None = None
    visibility: Visibility = Visibility.FULL
    volatility: Volatility = "stable"
    """How often the section's text changes: ``"stable"`` (only with the template),
    ``"session"`` (once per session) or ``"turn"`` (every turn). See ``specs/CACHING.md``."""
    requires_approval: ApprovalPolicy | None = None
    """An approval policy for this section's tools and its children's (``specs/APPROVAL.md``).

    A tool's own policy wins when it asks for approval; this one applies to
    the tools that do not."""
    required: bool = False
    """The run depends on this section's tools and its children's: each is a ``required`` tool
    (``specs/GUARDRAILS.md``, "A run's verdict")."""
    _enabled_takes_session: bool = attrs.field(init=False, default=False, repr=False)
    _summary_template: CompiledTemplate | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        where = f"section {self.key!r}"
        if not self.title.strip():
            raise PromptValidationError(f"{where}: title must not be empty")
        self._resolve_params_type(where)
        if callable(self.enabled):
            object.__setattr__(self, "_enabled_takes_session", _takes_session(self.enabled))
        elif not isinstance(self.enabled, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise PromptValidationError(f"{where}: enabled must be a bool or a predicate")
        if self.summary is not None:
            if not self.summary.strip():
                raise PromptValidationError(f"{where}: summary must not be blank")
            check_placeholders(self.summary, self.params_type, where=f"{where} summary")
            object.__setattr__(self, "_summary_template", CompiledTemplate(self.summary))
        if self.visibility is Visibility.SUMMARY and self.summary is None:
            raise PromptValidationError(f"{where}: visibility=SUMMARY needs a summary= text")
        for child in self.children:
            if not isinstance(child, Section):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise PromptValidationError(f"{where}: child {child!r} is not a Section")
        for toolset in self.toolsets:
            if not isinstance(toolset, Toolset):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise PromptValidationError(
                    f"{where}: toolset {toolset!r} has no version and current_tools() (see Toolset)"
                )

    def _resolve_params_type(self, where: str) -> None:
        declared = self.params_type
        if self.default_params is not None:
            actual = type(self.default_params)
            if declared is not None and declared is not actual:
                raise PromptValidationError(
                    f"{where}: default_params is a {actual.__qualname__} but params_type is "
                    f"{declared.__qualname__}"
                )
            declared = actual
            object.__setattr__(self, "params_type", actual)
        if declared is not None and not is_params_type(declared):
            raise PromptValidationError(
                f"{where}: params type {declared!r} must be a dataclass, an attrs class or a pydantic model"
            )

    # -- what subclasses provide -------------------------------------------------

    @property
    @abc.abstractmethod
    def override_source(self) -> str:
        """The body text an override replaces and whose hash the descriptor records."""

    @abc.abstractmethod
    def render_body(
        self,
        params: P | None,
        *,
        override: CompiledTemplate | None = None,
        values: Mapping[str, str] | None = None,
    ) -> str:
        """The body text for ``params``.

        ``override`` replaces the template when given; ``values`` are the params'
        fields already formatted (shared by the sections of one render).
        """

    # -- shared behaviour ----------------------------------------------------------

    def is_enabled(self, params: P | None, session: Session | None) -> bool:
        """Evaluate ``enabled`` for one render."""
        enabled = self.enabled
        if isinstance(enabled, bool):
            return enabled
        if self._enabled_takes_session:
            return bool(cast("Callable[[P | None, Session | None], bool]", enabled)(params, session))
        return bool(cast("Callable[[P | None], bool]", enabled)(params))

    def render_summary(self, params: P | None, values: Mapping[str, str] | None = None) -> str:
        """The summary text shown while the section is collapsed."""
        if self._summary_template is None:
            raise PromptValidationError(f"section {self.key!r} has no summary")
        return self._summary_template.render(params, values)

    def validate_override(self, body: str) -> CompiledTemplate:
        """Compile an override body, raising if it uses placeholders this section lacks."""
        check_placeholders(body, self.params_type, where=f"override of section {self.key!r}")
        return CompiledTemplate(body)


AnySection: TypeAlias = Section[Any]
"""A section of unknown params type, for heterogeneous trees."""


@attrs.frozen(kw_only=True, eq=False)
class MarkdownSection(Section[P]):
    """A section whose body is a ``string.Template`` over its params' fields.

    Every ``$placeholder`` must name a field of the params type; this is checked
    here, when the section is built.
    """

    template: str
    _compiled: CompiledTemplate = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        super().__attrs_post_init__()
        check_placeholders(self.template, self.params_type, where=f"section {self.key!r} template")
        object.__setattr__(self, "_compiled", CompiledTemplate(self.template))

    @property
    def override_source(self) -> str:
        return self.template

    def render_body(
        self,
        params: P | None,
        *,
        override: CompiledTemplate | None = None,
        values: Mapping[str, str] | None = None,
    ) -> str:
        return (override or self._compiled).render(params, values)
