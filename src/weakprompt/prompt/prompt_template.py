"""A validated, immutable prompt tree with its per-template caches.

Everything that can be checked without params is checked here, when the
template is built: keys, duplicate tool names, tool examples, placeholders and
the output type. Rendering then only fills in text.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Generic, overload

import attrs

from ..errors import PromptValidationError
from ..model_settings import ModelSettings
from ..serde import SerdeError, dump, parse
from .descriptor import PromptDescriptor, SectionDescriptor, ToolDescriptor, section_hash, tool_hash
from .disclosure import OPEN_SECTIONS_TOOL
from .keys import SectionPath, format_path, normalize_key, validate_ns
from .output import OutputMode, OutputT, check_output_mode, output_schema, validate_output_type
from .section import AnySection, Section
from .tool_schemas import ToolSchemaCache
from .volatility import CacheLayoutWarning, Volatility, effective_volatility

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..tools import AnyTool

__all__ = ["PromptTemplate", "SectionNode"]


@attrs.frozen
class SectionNode:
    """A section with its place in the tree (cached in declaration order)."""

    section: AnySection
    path: SectionPath
    depth: int


def _check_output_mode(_: object, __: object, value: object) -> None:
    check_output_mode(value)


def _check_model_settings(_: object, __: object, value: object) -> None:
    if value is not None and not isinstance(value, ModelSettings):
        raise PromptValidationError(f"model_settings must be a ModelSettings or None, got {value!r}")


def _to_sections(value: Iterable[AnySection]) -> tuple[AnySection, ...]:
    return tuple(value)


def _to_template_key(value: str) -> str:
    return normalize_key(value, what="prompt key")


def _to_ns(value: str) -> str:
    return validate_ns(value)


@attrs.frozen(kw_only=True, eq=False)
class PromptTemplate(Generic[OutputT]):
    """Sections plus identity (``ns``/``key``) and an optional structured output type."""

    ns: str = attrs.field(converter=_to_ns)
    key: str = attrs.field(converter=_to_template_key)
    sections: tuple[AnySection, ...] = attrs.field(converter=_to_sections)
    name: str | None = None
    output_type: type[OutputT] | None = None
    output_mode: OutputMode | None = attrs.field(default=None, validator=_check_output_mode)
    """How the structured answer is asked of the model; ``None`` leaves it to the adapter."""
    model_settings: ModelSettings | None = attrs.field(default=None, validator=_check_model_settings)
    """Model settings of this prompt: over the adapter's defaults, under the run's."""

    nodes: tuple[SectionNode, ...] = attrs.field(init=False)
    """Every section, depth-first in declaration order."""
    descriptor: PromptDescriptor = attrs.field(init=False)
    output_schema: JSONObject | None = attrs.field(init=False)
    schema_cache: ToolSchemaCache = attrs.field(init=False, factory=ToolSchemaCache)
    _tool_owner: dict[str, SectionPath] = attrs.field(init=False, factory=dict[str, SectionPath], repr=False)
    _tools: dict[str, AnyTool] = attrs.field(init=False, factory=dict[str, "AnyTool"], repr=False)
    _by_path: dict[SectionPath, AnySection] = attrs.field(
        init=False, factory=dict[SectionPath, AnySection], repr=False
    )
    _summary_keys: dict[str, SectionPath] = attrs.field(
        init=False, factory=dict[str, SectionPath], repr=False
    )
    _params_types: frozenset[type[object]] = attrs.field(init=False, repr=False)
    _example_text: dict[str, str] = attrs.field(init=False, factory=dict[str, str], repr=False)
    _has_turn_sections: bool = attrs.field(init=False, default=False, repr=False)

    if TYPE_CHECKING:
        # For the type checker only (attrs writes the real __init__): without ``output_type``
        # the template is a ``PromptTemplate[None]``, so ``PromptTemplate[Foo](...)`` with no
        # output type is an error instead of a response whose ``output`` is ``None``.
        @overload
        def __init__(
            self: PromptTemplate[None],
            *,
            ns: str,
            key: str,
            sections: Iterable[AnySection],
            name: str | None = None,
            output_type: None = None,
            output_mode: OutputMode | None = None,
            model_settings: ModelSettings | None = None,
        ) -> None: ...
        @overload
        def __init__(
            self,
            *,
            ns: str,
            key: str,
            sections: Iterable[AnySection],
            name: str | None = None,
            output_type: type[OutputT],
            output_mode: OutputMode | None = None,
            model_settings: ModelSettings | None = None,
        ) -> None: ...
        def __init__(
            self,
            *,
            ns: str,
            key: str,
            sections: Iterable[AnySection],
            name: str | None = None,
            output_type: type[OutputT] | None = None,
            output_mode: OutputMode | None = None,
            model_settings: ModelSettings | None = None,
        ) -> None: ...

    def __attrs_post_init__(self) -> None:
        if not self.sections:
            raise PromptValidationError(f"prompt {self.ns}/{self.key}: needs at least one section")
        nodes: list[SectionNode] = []
        self._walk(self.sections, (), 0, nodes)
        object.__setattr__(self, "nodes", tuple(nodes))
        object.__setattr__(
            self,
            "_params_types",
            frozenset(n.section.params_type for n in nodes if n.section.params_type is not None),
        )
        schema: JSONObject | None = None
        if self.output_type is not None:
            validate_output_type(self.output_type, where=f"prompt {self.ns}/{self.key}")
            schema = output_schema(self.output_type)
        object.__setattr__(self, "output_schema", schema)
        object.__setattr__(self, "descriptor", self._build_descriptor())
        for problem in self._layout_problems():
            warnings.warn(f"prompt {self.ns}/{self.key}: {problem}", CacheLayoutWarning, stacklevel=4)

    def _layout_problems(self) -> list[str]:
        """Declarations that keep the request prefix from staying byte-identical (``specs/CACHING.md``)."""
        placed: dict[SectionPath, Volatility] = {}
        problems: list[str] = []
        for node in self.nodes:
            section, path = node.section, node.path
            parent = placed.get(path[:-1], "stable")
            placed[path] = where = effective_volatility(section.volatility, parent)
            if where == "turn":
                object.__setattr__(self, "_has_turn_sections", True)
            # (a stable child under a session parent only loses reuse across sessions: no warning)
            if where == "turn" and section.volatility != "turn":
                problems.append(
                    f"section {format_path(path)!r} is declared {section.volatility!r} but sits under a "
                    "'turn' section, so it is rendered with its parent after the conversation, every turn; "
                    "declare it 'turn' or move it out of that subtree"
                )
            if where == "turn" and (section.tools or section.toolsets):
                problems.append(
                    f"section {format_path(path)!r} is rendered every turn but owns tools: the tools are "
                    "part of the cached prefix, so enabling or disabling it changes every request after "
                    "them; give the tools to a stable section"
                )
        return problems

    # -- validation -------------------------------------------------------------------

    def _walk(
        self, sections: tuple[AnySection, ...], parent: SectionPath, depth: int, out: list[SectionNode]
    ) -> None:
        seen: set[str] = set()
        for section in sections:
            if not isinstance(section, Section):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise PromptValidationError(
                    f"prompt {self.ns}/{self.key}: {section!r} under {format_path(parent) or 'the root'} "
                    "is not a Section"
                )
            path = (*parent, section.key)
            if section.key in seen:
                raise PromptValidationError(
                    f"prompt {self.ns}/{self.key}: two sections share the path {format_path(path)!r}; "
                    "sibling keys must be unique"
                )
            seen.add(section.key)
            self._by_path[path] = section
            if section.summary is not None:
                other = self._summary_keys.get(section.key)
                if other is not None:
                    raise PromptValidationError(
                        f"prompt {self.ns}/{self.key}: sections {format_path(other)!r} and "
                        f"{format_path(path)!r} both have a summary under the key {section.key!r}; "
                        "keys of summarizable sections must be unique so open_sections can name them"
                    )
                self._summary_keys[section.key] = path
            for tool in section.tools:
                self._register_tool(tool, path)
            out.append(SectionNode(section=section, path=path, depth=depth))
            self._walk(section.children, path, depth + 1, out)

    def _register_tool(self, tool: AnyTool, path: SectionPath) -> None:
        where = f"prompt {self.ns}/{self.key}: section {format_path(path)!r}"
        if tool.name == OPEN_SECTIONS_TOOL:
            raise PromptValidationError(f"{where}: the tool name {OPEN_SECTIONS_TOOL!r} is reserved")
        owner = self._tool_owner.get(tool.name)
        if owner is not None:
            raise PromptValidationError(
                f"prompt {self.ns}/{self.key}: tool {tool.name!r} is declared by both section "
                f"{format_path(owner)!r} and section {format_path(path)!r}; tool names must be unique"
            )
        self._tool_owner[tool.name] = path
        self._tools[tool.name] = tool
        self._example_text[tool.name] = _examples_text(tool, where)

    def _build_descriptor(self) -> PromptDescriptor:
        sections: list[SectionDescriptor] = []
        tools: list[ToolDescriptor] = []
        for node in self.nodes:
            if node.section.accepts_overrides:
                sections.append(SectionDescriptor(path=node.path, content_hash=section_hash(node.section)))
            for tool in node.section.tools:
                if tool.accepts_overrides:
                    tools.append(
                        ToolDescriptor(
                            name=tool.name,
                            section_path=node.path,
                            content_hash=tool_hash(tool.description, tool.parameters_schema()),
                        )
                    )
        return PromptDescriptor(ns=self.ns, key=self.key, sections=tuple(sections), tools=tuple(tools))

    # -- lookups ----------------------------------------------------------------------

    @property
    def display_name(self) -> str:
        """``name`` when given, else ``ns/key``."""
        return self.name or f"{self.ns}/{self.key}"

    @property
    def has_turn_sections(self) -> bool:
        """Whether some section is rendered every turn (then each request renders its turn text)."""
        return self._has_turn_sections

    @property
    def params_types(self) -> frozenset[type[object]]:
        """Every params type some section uses (what ``bind`` accepts)."""
        return self._params_types

    @property
    def summary_keys(self) -> Mapping[str, SectionPath]:
        """Keys of sections that have a summary, with their paths."""
        return self._summary_keys

    def section_at(self, path: SectionPath) -> AnySection | None:
        """The section at ``path`` (keys from the root), if any."""
        return self._by_path.get(path)

    def tool_owner(self, name: str) -> SectionPath | None:
        """Path of the section that declares tool ``name``."""
        return self._tool_owner.get(name)

    def tool_named(self, name: str) -> AnyTool | None:
        """The declared tool called ``name`` (as declared, no overrides)."""
        return self._tools.get(name)

    def examples_text(self, tool_name: str) -> str:
        """Rendered examples block for a declared tool ("" when it has none)."""
        return self._example_text.get(tool_name, "")


def _examples_text(tool: AnyTool, where: str) -> str:
    """Validate ``tool``'s examples through serde and render them once.

    Each example's input must survive dump -> parse as the params type (and its
    output as the result type), so what the prompt shows is what a call accepts.
    """
    lines: list[str] = []
    for index, example in enumerate(tool.examples):
        label = f"{where}: tool {tool.name!r} example {index}"
        try:
            call = dump(example.input)
            parse(tool.params_type, call)
        except SerdeError as exc:
            raise PromptValidationError(f"{label}: input does not match {tool.params_type!r}: {exc}") from exc
        try:
            result = None if example.output is None else dump(example.output)
            if tool.result_type is not None:
                parse(tool.result_type, result)
        except SerdeError as exc:
            raise PromptValidationError(
                f"{label}: output does not match {tool.result_type!r}: {exc}"
            ) from exc
        lines.append(f"- {example.description}")
        lines.append(f"  call: {_compact(call)}")
        if result is not None:
            lines.append(f"  result: {_compact(result)}")
    if not lines:
        return ""
    return f"Examples for `{tool.name}`:\n" + "\n".join(lines)


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
