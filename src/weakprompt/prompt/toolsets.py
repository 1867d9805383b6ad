"""Tools a section learns at render time: the protocol a mounted tool source (an MCP server) meets.

A section's own ``tools`` are fixed when the template is built. A toolset's
tools are read on every render, so a source whose list changes (an MCP
server announcing ``tools/list_changed``) is offered anew by the next
render, and a render can tell whether it is out of date.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..tools import AnyTool

__all__ = ["Toolset"]


@runtime_checkable
class Toolset(Protocol):
    """A live set of tools owned by a section.

    ``version`` changes whenever ``current_tools()`` would return something
    else; a render records the version it saw (``RenderedPrompt.tools_changed``).
    """

    @property
    def version(self) -> int:
        """A number that changes whenever the tool list changes."""
        ...

    def current_tools(self) -> tuple[AnyTool, ...]:
        """The tools on offer now, in a stable order."""
        ...
