"""Progressive disclosure: collapsed sections and the built-in ``open_sections`` tool.

A section rendered as its summary saves context. The model can ask for the full
text by calling ``open_sections``; the handler raises
:class:`~weakprompt.errors.VisibilityExpansionRequired`, which the dispatcher
re-raises so the evaluation loop can re-render with those sections expanded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import attrs

from ..errors import VisibilityExpansionRequired
from ..tools import Tool, ToolContext, ToolResult

__all__ = [
    "OPEN_SECTIONS_TOOL",
    "OpenSectionsParams",
    "expansion_hint",
    "open_sections_tool",
]

OPEN_SECTIONS_TOOL = "open_sections"
_DESCRIPTION = (
    "Show the full text (and tools) of summarized sections. "
    "Pass the keys named in their summaries and say why you need them."
)


@dataclasses.dataclass(frozen=True, slots=True)
class OpenSectionsParams:
    """Arguments of ``open_sections``."""

    section_keys: list[str] = dataclasses.field(
        metadata={"description": "Keys of the summarized sections to open."}
    )
    reason: str = dataclasses.field(metadata={"description": "Why the full text is needed for the task."})


@attrs.frozen
class _OpenSections:
    """Handler bound to the keys that are summarized in one render."""

    summarized: tuple[str, ...]

    def __call__(self, params: OpenSectionsParams, /, *, context: ToolContext) -> ToolResult[None]:
        del context
        requested = tuple(dict.fromkeys(params.section_keys))
        unknown = [key for key in requested if key not in self.summarized]
        if not requested or unknown:
            problem = f"unknown section key(s): {', '.join(unknown)}" if unknown else "no section keys given"
            return ToolResult.error(
                f"{problem}. Summarized sections you can open: {', '.join(self.summarized)}"
            )
        raise VisibilityExpansionRequired(requested, params.reason)


def open_sections_tool(summarized: Iterable[str]) -> Tool[OpenSectionsParams, None]:
    """The ``open_sections`` tool for a render in which ``summarized`` keys are collapsed."""
    return Tool(
        name=OPEN_SECTIONS_TOOL,
        description=_DESCRIPTION,
        handler=_OpenSections(tuple(summarized)),
        params_type=OpenSectionsParams,
        result_type=None,
        accepts_overrides=False,
        sequential=True,  # it changes the prompt: the calls after it must see the opened tools
    )


def expansion_hint(key: str) -> str:
    """The line under a summary telling the model how to open the section."""
    return f'(Summarized. Call `{OPEN_SECTIONS_TOOL}` with section_keys=["{key}"] to read all of it.)'
