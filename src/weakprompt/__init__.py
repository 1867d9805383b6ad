"""weakprompt: typed prompts and tools for LLM agents.

Everything a first agent needs is importable from here: prompts, tools, the
evaluation loop, sessions, the store and transcript, adapters (the test ones
included), limits and the common errors. The package stays cheap to import:
each name is resolved on first access, so ``import weakprompt`` does not pull
in SQLAlchemy, the prompt machinery or any provider SDK until they are used.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .lazy import lazy_exports

__version__ = "0.1.0"

# Library logging stays silent unless the application configures logging.
logging.getLogger("weakprompt").addHandler(logging.NullHandler())

# name -> the package that defines it publicly (always a package root, never an internal module)
_LAZY: dict[str, str] = {
    # prompts
    "MarkdownSection": "weakprompt.prompt",
    "Prompt": "weakprompt.prompt",
    "PromptTemplate": "weakprompt.prompt",
    "RenderedPrompt": "weakprompt.prompt",
    # tools
    "NoParams": "weakprompt.tools",
    "Tool": "weakprompt.tools",
    "ToolArguments": "weakprompt.tools",
    "ToolContext": "weakprompt.tools",
    "ToolExample": "weakprompt.tools",
    "ToolResult": "weakprompt.tools",
    "tool": "weakprompt.tools",
    "Meta": "weakprompt.serde",
    # running
    "ForceTool": "weakprompt.model",
    "ModelRequest": "weakprompt.model",
    "PromptResponse": "weakprompt.runtime",
    "ToolDispatcher": "weakprompt.runtime",
    "evaluate": "weakprompt.runtime",
    "run": "weakprompt.runtime",
    "run_sync": "weakprompt.runtime",
    "stream": "weakprompt.runtime",
    "stream_sync": "weakprompt.runtime",
    "RunEvent": "weakprompt.runtime",
    "Session": "weakprompt.session",
    "Budget": "weakprompt.budget",
    "Deadline": "weakprompt.deadlines",
    # conversation data and storage
    "AssistantTurn": "weakprompt.messages",
    "ToolCall": "weakprompt.messages",
    "Usage": "weakprompt.messages",
    "Store": "weakprompt.store",
    "Transcript": "weakprompt.transcript",
    # adapters (none imports its SDK before it is built)
    "AnthropicAdapter": "weakprompt.adapters",
    "FunctionAdapter": "weakprompt.adapters",
    "LocalAdapter": "weakprompt.adapters",
    "OpenAIAdapter": "weakprompt.adapters",
    "ScriptedAdapter": "weakprompt.adapters",
    # errors
    "AdapterError": "weakprompt.errors",
    "BudgetExceededError": "weakprompt.errors",
    "ConfigurationError": "weakprompt.errors",
    "DeadlineExceededError": "weakprompt.errors",
    "MaxTurnsExceededError": "weakprompt.errors",
    "OutputParseError": "weakprompt.errors",
    "PromptEvaluationError": "weakprompt.errors",
    "PromptRenderError": "weakprompt.errors",
    "PromptValidationError": "weakprompt.errors",
    "StoreError": "weakprompt.errors",
    "ToolValidationError": "weakprompt.errors",
    "TranscriptError": "weakprompt.errors",
    "WeakpromptError": "weakprompt.errors",
}

__all__ = [
    "__version__",
    "AdapterError",
    "AnthropicAdapter",
    "AssistantTurn",
    "Budget",
    "BudgetExceededError",
    "ConfigurationError",
    "Deadline",
    "DeadlineExceededError",
    "ForceTool",
    "FunctionAdapter",
    "LocalAdapter",
    "MarkdownSection",
    "MaxTurnsExceededError",
    "Meta",
    "ModelRequest",
    "NoParams",
    "OpenAIAdapter",
    "OutputParseError",
    "Prompt",
    "PromptEvaluationError",
    "PromptRenderError",
    "PromptResponse",
    "PromptTemplate",
    "PromptValidationError",
    "RenderedPrompt",
    "ScriptedAdapter",
    "Session",
    "Store",
    "StoreError",
    "Tool",
    "ToolArguments",
    "ToolCall",
    "ToolContext",
    "ToolDispatcher",
    "RunEvent",
    "ToolExample",
    "ToolResult",
    "ToolValidationError",
    "Transcript",
    "TranscriptError",
    "Usage",
    "WeakpromptError",
    "evaluate",
    "run",
    "run_sync",
    "stream",
    "stream_sync",
    "tool",
]

if TYPE_CHECKING:
    from .adapters import AnthropicAdapter, FunctionAdapter, LocalAdapter, OpenAIAdapter, ScriptedAdapter
    from .budget import Budget
    from .deadlines import Deadline
    from .errors import (
        AdapterError,
        BudgetExceededError,
        ConfigurationError,
        DeadlineExceededError,
        MaxTurnsExceededError,
        OutputParseError,
        PromptEvaluationError,
        PromptRenderError,
        PromptValidationError,
        StoreError,
        ToolValidationError,
        TranscriptError,
        WeakpromptError,
    )
    from .messages import AssistantTurn, ToolCall, Usage
    from .model import ForceTool, ModelRequest
    from .prompt import MarkdownSection, Prompt, PromptTemplate, RenderedPrompt
    from .runtime import (
        PromptResponse,
        RunEvent,
        ToolDispatcher,
        evaluate,
        run,
        run_sync,
        stream,
        stream_sync,
    )
    from .serde import Meta
    from .session import Session
    from .store import Store
    from .tools import NoParams, Tool, ToolArguments, ToolContext, ToolExample, ToolResult, tool
    from .transcript import Transcript


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
