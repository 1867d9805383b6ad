"""weakprompt: typed prompts and tools for LLM agents.

Everything a first agent and a first approval need is importable from here:
the ``Agent``, prompts, tools, the evaluation loop, sessions, the store and
transcript, adapters (the test ones included), limits, the decisions that
resume a paused run and the common errors. Internal machinery (the tool
dispatcher) lives in its package (``weakprompt.runtime``). The package stays cheap to import:
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
    # the agent
    "Agent": "weakprompt.agent",
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
    "ModelSettings": "weakprompt.model",
    "CompactionSettings": "weakprompt.model",
    "PromptResponse": "weakprompt.runtime",
    "evaluate": "weakprompt.runtime",
    "run": "weakprompt.runtime",
    "run_sync": "weakprompt.runtime",
    "stream": "weakprompt.runtime",
    "stream_sync": "weakprompt.runtime",
    "RunEvent": "weakprompt.runtime",
    # approvals: a paused run, the decisions that resume it
    "Approve": "weakprompt.runtime",
    "Deny": "weakprompt.runtime",
    "Supply": "weakprompt.runtime",
    "PausedRun": "weakprompt.runtime",
    "ResumeError": "weakprompt.runtime",
    "paused_run": "weakprompt.runtime",
    "Session": "weakprompt.session",
    "Budget": "weakprompt.budget",
    "Deadline": "weakprompt.deadlines",
    # conversation data and storage
    "AssistantTurn": "weakprompt.messages",
    "ToolCall": "weakprompt.messages",
    "Usage": "weakprompt.messages",
    "DocumentPart": "weakprompt.parts",
    "ImagePart": "weakprompt.parts",
    "ReasoningPart": "weakprompt.parts",
    "TextPart": "weakprompt.parts",
    "Store": "weakprompt.store",
    "Transcript": "weakprompt.transcript",
    # adapters (none imports its SDK before it is built)
    "AnthropicAdapter": "weakprompt.adapters",
    "FunctionAdapter": "weakprompt.adapters",
    "GeminiAdapter": "weakprompt.adapters",
    "LocalAdapter": "weakprompt.adapters",
    "OpenAIAdapter": "weakprompt.adapters",
    "OpenAIResponsesAdapter": "weakprompt.adapters",
    "ScriptedAdapter": "weakprompt.adapters",
    # errors
    "AdapterError": "weakprompt.errors",
    "BudgetExceededError": "weakprompt.errors",
    "ConfigurationError": "weakprompt.errors",
    "DeadlineExceededError": "weakprompt.errors",
    "MaxTurnsExceededError": "weakprompt.errors",
    "OutputParseError": "weakprompt.errors",
    "OutputValidationError": "weakprompt.errors",
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
    "Agent",
    "AnthropicAdapter",
    "Approve",
    "AssistantTurn",
    "Budget",
    "BudgetExceededError",
    "ConfigurationError",
    "Deadline",
    "DeadlineExceededError",
    "Deny",
    "DocumentPart",
    "ForceTool",
    "FunctionAdapter",
    "GeminiAdapter",
    "ImagePart",
    "LocalAdapter",
    "MarkdownSection",
    "MaxTurnsExceededError",
    "Meta",
    "ModelRequest",
    "ModelSettings",
    "CompactionSettings",
    "NoParams",
    "OpenAIAdapter",
    "OpenAIResponsesAdapter",
    "OutputParseError",
    "OutputValidationError",
    "PausedRun",
    "Prompt",
    "PromptEvaluationError",
    "PromptRenderError",
    "PromptResponse",
    "PromptTemplate",
    "PromptValidationError",
    "ReasoningPart",
    "RenderedPrompt",
    "ResumeError",
    "ScriptedAdapter",
    "Session",
    "Store",
    "StoreError",
    "Supply",
    "TextPart",
    "Tool",
    "ToolArguments",
    "ToolCall",
    "ToolContext",
    "RunEvent",
    "ToolExample",
    "ToolResult",
    "ToolValidationError",
    "Transcript",
    "TranscriptError",
    "Usage",
    "WeakpromptError",
    "evaluate",
    "paused_run",
    "run",
    "run_sync",
    "stream",
    "stream_sync",
    "tool",
]

if TYPE_CHECKING:
    from .adapters import (
        AnthropicAdapter,
        FunctionAdapter,
        GeminiAdapter,
        LocalAdapter,
        OpenAIAdapter,
        OpenAIResponsesAdapter,
        ScriptedAdapter,
    )
    from .agent import Agent
    from .budget import Budget
    from .deadlines import Deadline
    from .errors import (
        AdapterError,
        BudgetExceededError,
        ConfigurationError,
        DeadlineExceededError,
        MaxTurnsExceededError,
        OutputParseError,
        OutputValidationError,
        PromptEvaluationError,
        PromptRenderError,
        PromptValidationError,
        StoreError,
        ToolValidationError,
        TranscriptError,
        WeakpromptError,
    )
    from .messages import AssistantTurn, ToolCall, Usage
    from .model import CompactionSettings, ForceTool, ModelRequest, ModelSettings
    from .parts import DocumentPart, ImagePart, ReasoningPart, TextPart
    from .prompt import MarkdownSection, Prompt, PromptTemplate, RenderedPrompt
    from .runtime import (
        Approve,
        Deny,
        PausedRun,
        PromptResponse,
        ResumeError,
        RunEvent,
        Supply,
        evaluate,
        paused_run,
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


# Internal machinery once exported here: still importable from its package, with a warning here.
_RENAMED: dict[str, str] = {"ToolDispatcher": "weakprompt.runtime.ToolDispatcher"}

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__, renamed=_RENAMED)
