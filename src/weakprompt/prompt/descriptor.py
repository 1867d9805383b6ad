"""What an override may target, with the hash each override must match.

Overrides are written against one version of a template. Recording a hash of
the text (or tool schema) they were written for lets a later render notice the
template moved on and refuse a stale override instead of silently applying it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ..canonical import content_hash
from .keys import SectionPath, format_path

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from .section import AnySection

__all__ = [
    "PromptDescriptor",
    "SectionDescriptor",
    "ToolDescriptor",
    "section_hash",
    "tool_hash",
]


def section_hash(section: AnySection) -> str:
    """sha256 hex of the section's overridable template text (UTF-8)."""
    import hashlib  # here, on first use: OpenSSL's module costs milliseconds to import

    return hashlib.sha256(section.override_source.encode("utf-8")).hexdigest()


def tool_hash(description: str, parameters: JSONObject) -> str:
    """Hash of what a tool override changes: its description and params schema."""
    return content_hash({"description": description, "parameters": parameters})


@attrs.frozen
class SectionDescriptor:
    """One overridable section: where it is and what its template hashes to."""

    path: SectionPath
    content_hash: str

    @property
    def path_text(self) -> str:
        """The path as written in override files (``parent/child``)."""
        return format_path(self.path)


@attrs.frozen
class ToolDescriptor:
    """One overridable tool: its name, owning section and description+schema hash."""

    name: str
    section_path: SectionPath
    content_hash: str


@attrs.frozen
class PromptDescriptor:
    """Every override target of one template, in declaration order."""

    ns: str
    key: str
    sections: tuple[SectionDescriptor, ...]
    tools: tuple[ToolDescriptor, ...]

    def section(self, path: SectionPath) -> SectionDescriptor | None:
        """The descriptor for ``path``, or ``None`` if that section is not overridable."""
        for entry in self.sections:
            if entry.path == path:
                return entry
        return None

    def tool(self, name: str) -> ToolDescriptor | None:
        """The descriptor for tool ``name``, or ``None`` if it is not overridable."""
        for entry in self.tools:
            if entry.name == name:
                return entry
        return None
