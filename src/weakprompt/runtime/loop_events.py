"""Events the evaluation loop publishes besides the core ``PromptRendered``/``PromptExecuted``.

They let a caller follow an evaluation as it happens (the CLI prints from
them) without wrapping the adapter: one event per model reply, one per
section expansion, one per rejected structured answer; a tool call's are
``ToolInvoked`` and ``ToolResultStored``. They live in
:mod:`weakprompt.events` with every other event; this module names them for
the loop.
"""

from __future__ import annotations

from ..events import ModelTurnCompleted, OutputRejected, SectionsExpanded
from ..lazy import lazy_exports

__all__ = ["ModelTurnCompleted", "OutputRejected", "SectionsExpanded"]

# ``ToolResultCommitted`` said the same as the storage event, ``ToolResultStored``: one event now.
RENAMED: dict[str, str] = {"ToolResultCommitted": "weakprompt.events.ToolResultStored"}

__getattr__, __dir__ = lazy_exports(__name__, {}, __all__, renamed=RENAMED)
