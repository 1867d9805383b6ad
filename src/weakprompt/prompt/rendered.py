"""The result of one render: text, the tools on offer and their schemas."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic

import attrs

from ..canonical import content_hash
from ..errors import OutputParseError
from .keys import SectionPath, format_path
from .output import OutputMode, OutputT, parse_output
from .volatility import Volatility

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..model_settings import ModelSettings
    from ..tools import AnyTool
    from .descriptor import PromptDescriptor
    from .toolsets import Toolset

__all__ = ["RenderedPrompt", "RenderedSection"]


@attrs.frozen
class RenderedSection:
    """A section that made it into the text, with its heading number."""

    path: SectionPath
    number: str
    title: str
    summarized: bool = False
    volatility: Volatility = "stable"
    text_hash: str = ""
    """Content hash of the section's own text (heading and body, not its children's)."""

    @property
    def key(self) -> str:
        return self.path[-1]

    @property
    def path_text(self) -> str:
        return format_path(self.path)


@attrs.frozen(kw_only=True, eq=False)
class RenderedPrompt(Generic[OutputT]):
    """Immutable output of :meth:`Prompt.render`.

    ``tools``, ``tool_schemas`` and ``tool_hashes`` are parallel tuples in
    declaration order. The schema dicts are shared with the template's cache:
    treat them as read-only.
    """

    ns: str
    key: str
    text: str
    """The system message: stable sections' text, then session sections' (``specs/CACHING.md``)."""
    tools: tuple[AnyTool, ...]
    tool_schemas: tuple[JSONObject, ...]
    tool_hashes: tuple[str, ...]
    output_type: type[OutputT] | None
    output_schema: JSONObject | None
    descriptor: PromptDescriptor
    sections: tuple[RenderedSection, ...]
    summarized_keys: tuple[str, ...] = ()
    """Keys of sections shown as summaries (what ``open_sections`` accepts)."""
    expanded_keys: frozenset[str] = frozenset()
    """Keys that were expanded for this render."""
    output_mode: OutputMode | None = None
    """The template's output mode (``None``: the adapter's own choice)."""
    model_settings: ModelSettings | None = None
    """The template's model settings (over the adapter's, under the run's)."""
    toolset_versions: tuple[tuple[Toolset, int], ...] = ()
    """Each live toolset of an enabled, shown section, with the version this render offered."""
    turn_text: str = ""
    """The turn sections' text: sent after the conversation, never in the system message."""
    stable_chars: int | None = None
    """How many leading characters of ``text`` come from stable sections (``None``: all of them)."""
    _by_name: dict[str, int] = attrs.field(init=False, repr=False)
    _cache_key: str | None = attrs.field(init=False, default=None, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {tool.name: i for i, tool in enumerate(self.tools)})

    @property
    def stable_text(self) -> str:
        """The part of ``text`` that is the same in every session of this template version."""
        return self.text if self.stable_chars is None else self.text[: self.stable_chars]

    @property
    def cache_key(self) -> str:
        """``ns/key@hash`` (64 characters at most): names this template version for a provider cache.

        Sessions of one template version share it, so a provider that routes
        by key (OpenAI's ``prompt_cache_key``) sends them to one cache.
        """
        if self._cache_key is None:
            name = f"{self.ns}/{self.key}"
            stable = {"template": name, "stable": self.stable_text, "tools": list(self.tool_hashes)}
            digest = content_hash(stable)
            # at most 64 characters (OpenAI's limit on prompt_cache_key); the digest covers the whole name
            object.__setattr__(self, "_cache_key", f"{name[:47]}@{digest[:16]}")
        assert self._cache_key is not None
        return self._cache_key

    def tools_changed(self) -> bool:
        """Whether a toolset's tools changed since this render (then render again to offer them)."""
        return any(toolset.version != seen for toolset, seen in self.toolset_versions)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def tool_by_name(self, name: str) -> AnyTool | None:
        """The offered tool called ``name`` (overrides applied), or ``None``."""
        index = self._by_name.get(name)
        return None if index is None else self.tools[index]

    def tool_schema(self, name: str) -> JSONObject | None:
        """The advertised schema ``{name, description, parameters}`` for ``name``."""
        index = self._by_name.get(name)
        return None if index is None else self.tool_schemas[index]

    @property
    def output_name(self) -> str | None:
        """A provider-friendly name for the structured output (``None`` without one)."""
        if self.output_type is None:
            return None
        return f"{self.key.replace('.', '_')}_output"

    def parse_output(self, text: str) -> OutputT:
        """Decode the model's final answer as ``output_type`` (see :func:`parse_output`)."""
        if self.output_type is None:
            raise OutputParseError(f"prompt {self.ns}/{self.key} declares no output_type to parse into")
        return parse_output(self.output_type, text)
