"""Prompts as trees of sections that own both their text and their tools.

See ``specs/PROMPTS.md``. Typical use::

    template = PromptTemplate(ns="demo", key="greet", sections=[MarkdownSection(...)])
    rendered = Prompt(template).bind(Params(...)).render(session)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports
from .descriptor import PromptDescriptor, SectionDescriptor, ToolDescriptor, section_hash, tool_hash
from .disclosure import OPEN_SECTIONS_TOOL, OpenSectionsParams, open_sections_tool
from .keys import KEY_PATTERN, SectionPath, format_path, normalize_key
from .output import extract_json, parse_output
from .prompt import Prompt
from .prompt_template import PromptTemplate, SectionNode
from .rendered import RenderedPrompt, RenderedSection
from .section import AnySection, EnabledPredicate, MarkdownSection, Section, Visibility
from .tool_schemas import OverriddenTool, ToolSchemaCache
from .toolsets import Toolset
from .volatility import CacheLayoutWarning, Volatility

if TYPE_CHECKING:
    from .overrides import LocalOverridesStore, OverridesStore, PromptOverrides, SectionOverride, ToolOverride

# Overrides (their records and the file store) resolve on first access: a prompt rendered without
# overrides never needs them.
_LAZY: dict[str, str] = {
    "LocalOverridesStore": ".overrides",
    "OverridesStore": ".overrides",
    "PromptOverrides": ".overrides",
    "SectionOverride": ".overrides",
    "ToolOverride": ".overrides",
}

__all__ = [
    "KEY_PATTERN",
    "OPEN_SECTIONS_TOOL",
    "AnySection",
    "CacheLayoutWarning",
    "EnabledPredicate",
    "LocalOverridesStore",
    "MarkdownSection",
    "OpenSectionsParams",
    "OverriddenTool",
    "OverridesStore",
    "Prompt",
    "PromptDescriptor",
    "PromptOverrides",
    "PromptTemplate",
    "RenderedPrompt",
    "RenderedSection",
    "Section",
    "SectionDescriptor",
    "SectionNode",
    "SectionOverride",
    "SectionPath",
    "ToolDescriptor",
    "ToolOverride",
    "ToolSchemaCache",
    "Toolset",
    "Visibility",
    "Volatility",
    "extract_json",
    "format_path",
    "normalize_key",
    "open_sections_tool",
    "parse_output",
    "section_hash",
    "tool_hash",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
