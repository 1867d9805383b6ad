"""Rendering: walk the tree depth-first, number headings, collect enabled tools.

A disabled section contributes nothing: not its text, not its tools, not its
children. A summarized section contributes its heading and summary only.

Volatility decides the layout (``specs/CACHING.md``): among siblings, stable
sections come first, then session ones, then turn ones (template order kept
within each); a section is placed with its parent when the parent changes
more often. Turn text goes to ``turn_text`` (sent after the conversation),
the rest to ``text`` (the system message); tools are ordered the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ..canonical import content_hash
from ..errors import PromptRenderError, PromptValidationError
from .descriptor import section_hash
from .disclosure import OPEN_SECTIONS_TOOL, expansion_hint, open_sections_tool
from .keys import SectionPath, format_path
from .output import OutputT
from .rendered import RenderedPrompt, RenderedSection
from .section import AnySection, Visibility
from .template import CompiledTemplate, FieldValues
from .volatility import VOLATILITY_RANK, Volatility, effective_volatility

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..session import Session
    from ..tools import AnyTool, ApprovalPolicy
    from .overrides import PromptOverrides, ToolOverride
    from .prompt_template import PromptTemplate
    from .toolsets import Toolset

__all__ = ["ResolvedOverrides", "render_template", "resolve_overrides"]

logger = logging.getLogger("weakprompt.prompt")


_MAX_HEADING = 6


def _no_tool_overrides() -> dict[str, ToolOverride]:
    return {}  # a function, not dict[str, ToolOverride]: the overrides module loads only with overrides


@attrs.frozen
class ResolvedOverrides:
    """Overrides that passed every check and will be applied to this render."""

    sections: Mapping[SectionPath, CompiledTemplate] = attrs.field(
        factory=dict[SectionPath, CompiledTemplate]
    )
    tools: Mapping[str, ToolOverride] = attrs.field(factory=_no_tool_overrides)


_NO_OVERRIDES = ResolvedOverrides()


def resolve_overrides(
    template: PromptTemplate[OutputT], overrides: PromptOverrides | None
) -> ResolvedOverrides:
    """Keep the overrides that still match the template; warn about and drop the rest."""
    if overrides is None or (not overrides.sections and not overrides.tools):
        return _NO_OVERRIDES
    label = f"prompt {template.ns}/{template.key}@{overrides.tag}"
    sections: dict[SectionPath, CompiledTemplate] = {}
    for path_text, override in overrides.sections.items():
        path: SectionPath = tuple(path_text.split("/"))
        section = template.section_at(path)
        problem: str | None = None
        compiled: CompiledTemplate | None = None
        if section is None:
            problem = "no such section"
        elif not section.accepts_overrides:
            problem = "the section does not accept overrides"
        elif override.expected_hash != section_hash(section):
            problem = (
                f"stale: written for hash {override.expected_hash[:12]}..., "
                f"the template now hashes to {section_hash(section)[:12]}..."
            )
        else:
            try:
                compiled = section.validate_override(override.body)
            except PromptValidationError as exc:
                problem = str(exc)
        if compiled is None:
            logger.warning("%s: section override %r skipped: %s", label, path_text, problem)
            continue
        sections[path] = compiled
    tools: dict[str, ToolOverride] = {}
    for name, override in overrides.tools.items():
        problem = _tool_override_problem(template, name, override)
        if problem is not None:
            logger.warning("%s: tool override %r skipped: %s", label, name, problem)
            continue
        tools[name] = override
    return ResolvedOverrides(sections=sections, tools=tools)


def _tool_override_problem(
    template: PromptTemplate[OutputT], name: str, override: ToolOverride
) -> str | None:
    if override.name != name:
        return f"filed under {name!r} but names tool {override.name!r}"
    descriptor = template.descriptor.tool(name)
    if descriptor is None:
        return "no such tool" if template.tool_named(name) is None else "the tool does not accept overrides"
    if override.expected_hash != descriptor.content_hash:
        return (
            f"stale: written for hash {override.expected_hash[:12]}..., "
            f"the tool now hashes to {descriptor.content_hash[:12]}..."
        )
    tool = template.tool_named(name)
    assert tool is not None
    properties = tool.parameters_schema().get("properties", {})
    known = set(properties) if isinstance(properties, dict) else set[str]()
    unknown = sorted(set(override.param_descriptions) - known)
    if unknown:
        return f"unknown parameter(s) {', '.join(unknown)} (parameters: {', '.join(sorted(known)) or 'none'})"
    if override.description is not None and not 0 < len(override.description.strip()) <= 200:
        return "the description must be 1-200 characters"
    return None


@attrs.define
class _Walk:
    """Mutable accumulator for one render (never escapes :func:`render_template`)."""

    template: PromptTemplate[Any]
    bindings: Mapping[type[object], object]
    session: Session | None
    expanded: frozenset[str]
    overrides: ResolvedOverrides
    blocks: list[str] = attrs.field(factory=list[str])
    turn_blocks: list[str] = attrs.field(factory=list[str])
    first_session_block: int | None = None
    """Index in ``blocks`` of the first session block: where the stable prefix of ``text`` ends."""
    tool_ranks: list[int] = attrs.field(factory=list[int])
    tools: list[AnyTool] = attrs.field(factory=list["AnyTool"])
    schemas: list[JSONObject] = attrs.field(factory=list["JSONObject"])
    hashes: list[str] = attrs.field(factory=list[str])
    rendered: list[RenderedSection] = attrs.field(factory=list[RenderedSection])
    summarized: list[str] = attrs.field(factory=list[str])
    values: dict[int, FieldValues] = attrs.field(factory=dict[int, FieldValues])
    names: set[str] = attrs.field(factory=set[str])
    toolsets: list[tuple[Toolset, int]] = attrs.field(factory=list["tuple[Toolset, int]"])

    def params_for(self, section: AnySection, path: SectionPath) -> object | None:
        params_type = section.params_type
        if params_type is None:
            return None
        bound = self.bindings.get(params_type)
        if bound is not None:
            return bound
        if section.default_params is not None:
            return section.default_params
        raise PromptRenderError(
            f"prompt {self.template.ns}/{self.template.key}: section {format_path(path)!r} needs "
            f"{params_type.__qualname__} params: bind them with prompt.bind({params_type.__qualname__}(...)) "
            "or give the section default_params"
        )

    def offer(
        self, tool: AnyTool, policy: ApprovalPolicy | None = None, rank: int = 0, *, required: bool = False
    ) -> None:
        entry = self.template.schema_cache.entry(tool, self.overrides.tools.get(tool.name))
        offered = entry.tool or tool
        if policy is not None and offered.requires_approval is False:  # the section's policy applies
            offered = attrs.evolve(offered, requires_approval=policy)
        if required and not offered.required:  # the section's tools are all required
            offered = attrs.evolve(offered, required=True)
        self.tools.append(offered)
        self.schemas.append(entry.schema)
        self.hashes.append(entry.hash)
        self.tool_ranks.append(rank)

    def offer_live(self, section: AnySection, path: SectionPath, rank: int) -> None:
        """Offer the tools a section's toolsets hold right now (no overrides: they are not declared)."""
        for toolset in section.toolsets:
            self.toolsets.append((toolset, toolset.version))
            for tool in toolset.current_tools():
                taken = tool.name in self.names or tool.name == OPEN_SECTIONS_TOOL
                if taken or self.template.tool_named(tool.name) is not None:
                    raise PromptRenderError(
                        f"prompt {self.template.ns}/{self.template.key}: section {format_path(path)!r} "
                        f"offers a tool named {tool.name!r} from a toolset, but a tool of that name is "
                        "already offered; give the toolset a prefix"
                    )
                entry = self.template.schema_cache.live_entry(tool)
                self.tools.append(tool)
                self.schemas.append(entry.schema)
                self.hashes.append(entry.hash)
                self.tool_ranks.append(rank)
                self.names.add(tool.name)

    def order_tools(self) -> None:
        """Stable sections' tools first, then session ones', then turn ones' (declaration order within)."""
        if not any(self.tool_ranks):
            return
        order = sorted(range(len(self.tools)), key=self.tool_ranks.__getitem__)
        self.tools = [self.tools[i] for i in order]
        self.schemas = [self.schemas[i] for i in order]
        self.hashes = [self.hashes[i] for i in order]

    def values_for(self, params: object | None) -> FieldValues:
        """Formatted fields of ``params``, shared by every section bound to the same object."""
        key = id(params)
        values = self.values.get(key)
        if values is None:
            values = self.values[key] = FieldValues(params)
        return values

    def walk(
        self,
        sections: tuple[AnySection, ...],
        parent: SectionPath,
        prefix: str,
        depth: int,
        inherited: ApprovalPolicy | None = None,
        *,
        required: bool = False,
        volatility: Volatility = "stable",
    ) -> None:
        hashes = "#" * min(depth + 2, _MAX_HEADING)
        shown: list[tuple[AnySection, SectionPath, object | None, Volatility]] = []
        for section in sections:
            if section.enabled is False:
                continue
            path = (*parent, section.key)
            params = self.params_for(section, path)
            if section.is_enabled(params, self.session):
                shown.append((section, path, params, effective_volatility(section.volatility, volatility)))
        if any(placed != volatility for *_, placed in shown):  # stable first (a stable sort)
            shown.sort(key=lambda entry: VOLATILITY_RANK[entry[3]])
        for count, (section, path, params, placed) in enumerate(shown, start=1):
            number = f"{prefix}{count}"
            heading = f"{hashes} {number}. {section.title}"
            values = self.values_for(params)
            collapsed = section.visibility is Visibility.SUMMARY and section.key not in self.expanded
            if collapsed:
                self.summarized.append(section.key)
                summary = section.render_summary(params, values)
                block = f"{heading}\n\n{summary}\n\n{expansion_hint(section.key)}"
            else:
                override = self.overrides.sections.get(path) if self.overrides.sections else None
                body = section.render_body(params, override=override, values=values)
                block = f"{heading}\n\n{body}" if body else heading
            self.rendered.append(
                RenderedSection(
                    path=path,
                    number=number,
                    title=section.title,
                    summarized=collapsed,
                    volatility=section.volatility,
                    text_hash=content_hash(block),
                )
            )
            if placed == "turn":
                blocks = self.turn_blocks
            else:
                blocks = self.blocks
                if placed == "session" and self.first_session_block is None:
                    self.first_session_block = len(blocks)
            blocks.append(block)
            if collapsed:
                continue
            policy = section.requires_approval if section.requires_approval is not None else inherited
            needed = required or section.required
            rank = VOLATILITY_RANK[placed]
            for tool in section.tools:
                self.offer(tool, policy, rank, required=needed)
                examples = self.template.examples_text(tool.name)
                if examples:
                    blocks.append(examples)
            if section.toolsets:
                self.offer_live(section, path, rank)
            if section.children:
                child_prefix = f"{number}."
                self.walk(
                    section.children,
                    path,
                    child_prefix,
                    depth + 1,
                    policy,
                    required=needed,
                    volatility=placed,
                )

    def stable_chars(self, text: str) -> int:
        """Length of the stable prefix of ``text`` (all of it when no session section was rendered)."""
        if self.first_session_block is None:
            return len(text)
        return len("\n\n".join(self.blocks[: self.first_session_block]))


def render_template(
    template: PromptTemplate[OutputT],
    *,
    bindings: Mapping[type[object], object],
    session: Session | None,
    expanded: frozenset[str],
    overrides: PromptOverrides | None,
) -> RenderedPrompt[OutputT]:
    """Render ``template`` with bound params; pure apart from logging warnings."""
    walk = _Walk(
        template=template,
        bindings=bindings,
        session=session,
        expanded=expanded,
        overrides=resolve_overrides(template, overrides),
    )
    walk.walk(template.sections, (), "", 0)
    walk.order_tools()
    if walk.summarized:
        walk.offer(open_sections_tool(walk.summarized))
    text = "\n\n".join(walk.blocks)
    return RenderedPrompt(
        ns=template.ns,
        key=template.key,
        text=text,
        turn_text="\n\n".join(walk.turn_blocks),
        stable_chars=walk.stable_chars(text),
        tools=tuple(walk.tools),
        tool_schemas=tuple(walk.schemas),
        tool_hashes=tuple(walk.hashes),
        output_type=template.output_type,
        output_schema=template.output_schema,
        descriptor=template.descriptor,
        sections=tuple(walk.rendered),
        summarized_keys=tuple(walk.summarized),
        expanded_keys=expanded,
        output_mode=template.output_mode,
        model_settings=template.model_settings,
        toolset_versions=tuple(walk.toolsets),
    )
