"""The conversation record: provenance, tool tracking, compile to provider params."""

from __future__ import annotations

from .compiled import CompiledContext

__all__ = ["CompiledContext"]
