"""weakprompt: typed prompts and tools for LLM agents.

The top-level package stays cheap to import: the most used names are resolved
lazily on first access, so ``import weakprompt`` does not pull in SQLAlchemy,
the prompt machinery or any provider SDK until they are needed.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# Library logging stays silent unless the application configures logging.
logging.getLogger("weakprompt").addHandler(logging.NullHandler())

_LAZY: dict[str, str] = {
    "MarkdownSection": "weakprompt.prompt",
    "Prompt": "weakprompt.prompt",
    "PromptTemplate": "weakprompt.prompt",
    "RenderedPrompt": "weakprompt.prompt",
    "Session": "weakprompt.session",
    "Tool": "weakprompt.tools",
    "ToolContext": "weakprompt.tools",
    "ToolExample": "weakprompt.tools",
    "ToolResult": "weakprompt.tools",
    "tool": "weakprompt.tools",
    "Store": "weakprompt.store",
    "Transcript": "weakprompt.transcript",
    "ForceTool": "weakprompt.model",
    "PromptResponse": "weakprompt.runtime",
    "ToolDispatcher": "weakprompt.runtime",
    "evaluate": "weakprompt.runtime",
}

__all__ = [
    "__version__",
    "ForceTool",
    "MarkdownSection",
    "Prompt",
    "PromptResponse",
    "PromptTemplate",
    "RenderedPrompt",
    "Session",
    "Store",
    "Tool",
    "ToolContext",
    "ToolDispatcher",
    "ToolExample",
    "ToolResult",
    "Transcript",
    "evaluate",
    "tool",
]

if TYPE_CHECKING:
    from .model import ForceTool
    from .prompt import MarkdownSection, Prompt, PromptTemplate, RenderedPrompt
    from .runtime import PromptResponse, ToolDispatcher, evaluate
    from .session import Session
    from .store import Store
    from .tools import Tool, ToolContext, ToolExample, ToolResult, tool
    from .transcript import Transcript


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'weakprompt' has no attribute {name!r}")
    value: object = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
