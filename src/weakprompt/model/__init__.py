"""The model contract: what the loop sends a provider adapter and what it gets back.

Core layer: the transcript compiles a :class:`CompiledContext`, the loop
wraps it in a :class:`ModelRequest`, and any :class:`ProviderAdapter`
answers it. Lower layers that need a model receive a ``ProviderAdapter``;
nothing here imports the runtime or a provider SDK.
"""

from __future__ import annotations

from .adapter import ProviderAdapter
from .context import CompiledContext
from .request import ForceTool, ModelRequest, ToolChoice

__all__ = ["CompiledContext", "ForceTool", "ModelRequest", "ProviderAdapter", "ToolChoice"]
