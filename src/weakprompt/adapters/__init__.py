"""Provider adapters: the wire-format layer between the loop and a model.

Importing this package loads no provider SDK and no llama.cpp: each adapter
imports its SDK when it is constructed, so ``weakprompt[openai]``,
``[anthropic]``, ``[gemini]`` and ``[local]`` stay optional. Nor does it load the adapter
modules themselves: each name is resolved on first access, so importing
``weakprompt.adapters.testing`` for a first agent costs only that module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .anthropic import AnthropicAdapter
    from .error_mapping import classify_status, from_anthropic_error, from_openai_error
    from .fallback import FallbackAdapter, default_fall_back_on
    from .gemini import GeminiAdapter
    from .local import LocalAdapter, default_model_path
    from .openai import OpenAIAdapter
    from .openai_responses import OpenAIResponsesAdapter
    from .output_modes import FINAL_ANSWER_TOOL, OutputModes, UnsupportedOutputModeError
    from .retries import Retrier, RetryPolicy
    from .testing import FunctionAdapter, ScriptedAdapter

# name -> the module of this package that defines it
_LAZY: dict[str, str] = {
    "AnthropicAdapter": ".anthropic",
    "FINAL_ANSWER_TOOL": ".output_modes",
    "FallbackAdapter": ".fallback",
    "GeminiAdapter": ".gemini",
    "OutputModes": ".output_modes",
    "Retrier": ".retries",
    "RetryPolicy": ".retries",
    "UnsupportedOutputModeError": ".output_modes",
    "default_fall_back_on": ".fallback",
    "FunctionAdapter": ".testing",
    "LocalAdapter": ".local",
    "OpenAIAdapter": ".openai",
    "OpenAIResponsesAdapter": ".openai_responses",
    "ScriptedAdapter": ".testing",
    "classify_status": ".error_mapping",
    "default_model_path": ".local",
    "from_anthropic_error": ".error_mapping",
    "from_openai_error": ".error_mapping",
}

__all__ = [
    "FINAL_ANSWER_TOOL",
    "AnthropicAdapter",
    "FallbackAdapter",
    "FunctionAdapter",
    "GeminiAdapter",
    "LocalAdapter",
    "OpenAIAdapter",
    "OpenAIResponsesAdapter",
    "OutputModes",
    "Retrier",
    "RetryPolicy",
    "ScriptedAdapter",
    "UnsupportedOutputModeError",
    "classify_status",
    "default_fall_back_on",
    "default_model_path",
    "from_anthropic_error",
    "from_openai_error",
]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
