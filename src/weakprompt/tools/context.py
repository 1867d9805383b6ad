"""What a handler may reach while it runs, passed explicitly instead of via globals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..resources import Filesystem, ResourceRegistry

if TYPE_CHECKING:
    from ..budget import BudgetTracker
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..prompt import Prompt, RenderedPrompt
    from ..session import Session

__all__ = ["ToolContext"]


@attrs.frozen(kw_only=True)
class ToolContext:
    """Everything a handler may use during one call.

    Each call gets the dispatcher's context with its own ``call_id``.
    Handlers that change state do it through ``session`` (or a snapshotable
    resource) so the dispatcher can roll the change back when the call fails.
    """

    session: Session
    prompt: Prompt[Any] | None = None
    rendered_prompt: RenderedPrompt[Any] | None = None
    adapter: ProviderAdapter | None = None
    deadline: Deadline | None = None
    budget_tracker: BudgetTracker | None = None
    resources: ResourceRegistry | None = None
    call_id: str | None = None
    """The id of the tool call being run (``None`` outside a call).

    The model's own id: unique within one reply, but some models and servers
    reuse ids from turn to turn (``call_0``). An idempotency key for a side
    effect should combine it with ``session.session_id`` and what the call
    does (its arguments), not rely on it alone.
    """

    @property
    def filesystem(self) -> Filesystem | None:
        """The registered filesystem, if any; handlers must cope with ``None``."""
        if self.resources is None:
            return None
        return self.resources.get_optional(Filesystem)
