"""Provider adapters: the wire-format layer between the loop and a model.

Importing this package loads no provider SDK and no llama.cpp: each adapter
imports its SDK when it is constructed, so ``weakprompt[openai]``,
``[anthropic]`` and ``[local]`` stay optional.
"""

from __future__ import annotations

from .anthropic import AnthropicAdapter
from .error_mapping import classify_status, from_anthropic_error, from_openai_error
from .local import LocalAdapter, default_model_path
from .openai import OpenAIAdapter
from .testing import FunctionAdapter, ScriptedAdapter

__all__ = [
    "AnthropicAdapter",
    "FunctionAdapter",
    "LocalAdapter",
    "OpenAIAdapter",
    "ScriptedAdapter",
    "classify_status",
    "default_model_path",
    "from_anthropic_error",
    "from_openai_error",
]
