"""Events of pausing and resuming a run (``specs/APPROVAL.md``), published on the session's bus.

They live in :mod:`weakprompt.events` with every other event; this module
names them for the loop.
"""

from __future__ import annotations

from ..events import DecisionKind, RunPaused, RunResumed, ToolCallDecided

__all__ = ["DecisionKind", "RunPaused", "RunResumed", "ToolCallDecided"]
