"""The event of a child run inside its parent's stream (``specs/SUBAGENTS.md``).

An agent used as a tool runs as a run of its own; each event it reports
reaches the parent's listener wrapped in one :class:`ChildEvent`, tagged
with the path from the root run. Published by ``weakprompt.runtime``
(``child_runs``), which loads it with the first child that streams.
"""

from __future__ import annotations

import attrs

__all__ = ["ChildEvent"]


@attrs.frozen(kw_only=True)
class ChildEvent:
    """One event of a child run (at any depth), as its ancestors' streams carry it.

    ``path`` names the calls from the root run down to the run that reported
    ``event``, one ``"tool:call_id"`` step each; ``event`` is that run's own
    event, unchanged (a ``TextDelta``, a ``ToolInvoked``, its ``RunFinished``...).
    """

    path: tuple[str, ...]
    event: object

    @property
    def depth(self) -> int:
        """How far below the root run the event happened (1: a child of the root)."""
        return len(self.path)
