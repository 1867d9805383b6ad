"""The runtime layer: the provider-adapter contract and the shared tool dispatcher."""

from __future__ import annotations

from .adapter import ForceTool, ModelRequest, ProviderAdapter, ToolChoice
from .dispatcher import ToolDispatcher, ToolExecution
from .redaction import Redactor, default_redact

__all__ = [
    "ForceTool",
    "ModelRequest",
    "ProviderAdapter",
    "Redactor",
    "ToolChoice",
    "ToolDispatcher",
    "ToolExecution",
    "default_redact",
]
