"""Adding toolsets to a prompt someone else wrote (``weakprompt run --mcp``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ..prompt import MarkdownSection

if TYPE_CHECKING:
    from ..prompt import Prompt
    from ..prompt.output import OutputT
    from ._toolset import McpToolset

__all__ = ["with_toolsets"]


def with_toolsets(
    prompt: Prompt[OutputT], *toolsets: McpToolset, title: str = "MCP tools", key: str = "mcp-tools"
) -> Prompt[OutputT]:
    """``prompt`` with one more section, last, that owns ``toolsets``' tools (bindings kept)."""
    names = ", ".join(toolset.server.name for toolset in toolsets)
    section = MarkdownSection(
        title=title,
        key=key,
        template=f"Tools from the MCP server(s): {names}.".replace("$", "$$"),
        toolsets=toolsets,
    )
    template = attrs.evolve(prompt.template, sections=(*prompt.template.sections, section))
    return attrs.evolve(prompt, template=template)
