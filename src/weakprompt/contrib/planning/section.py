"""The prompt section that documents the planning tools and carries them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...prompt import MarkdownSection
from .state import register_planning_state
from .strategies import PlanningStrategy, render_planning_copy
from .tools import planning_tools

if TYPE_CHECKING:
    from ...prompt import EnabledPredicate
    from ...session import Session

__all__ = ["PlanningToolsSection"]


class PlanningToolsSection(MarkdownSection[None]):
    """Planning instructions for one strategy plus the four planning tools.

    Building the section registers the plan's slices and reducers on
    ``session``, so ``session[Plan].latest()`` works from the first call on.
    The tools act on whichever session runs them (they register lazily too),
    which is normally this one. ``accepts_overrides`` applies to the section
    text and to every tool: off by default, because the copy and the tool
    descriptions are written to match each other.
    """

    __slots__ = ("_planning_session", "_strategy")

    def __init__(
        self,
        *,
        session: Session,
        strategy: PlanningStrategy = PlanningStrategy.REACT,
        accepts_overrides: bool = False,
        title: str = "Planning",
        key: str = "planning",
        enabled: EnabledPredicate[None] = True,
    ) -> None:
        register_planning_state(session)
        super().__init__(
            title=title,
            key=key,
            template=render_planning_copy(strategy),
            tools=planning_tools(accepts_overrides=accepts_overrides),
            accepts_overrides=accepts_overrides,
            enabled=enabled,
        )
        object.__setattr__(self, "_planning_session", session)
        object.__setattr__(self, "_strategy", strategy)

    @property
    def session(self) -> Session:
        """The session the section registered its state on."""
        return self._planning_session

    @property
    def strategy(self) -> PlanningStrategy:
        return self._strategy
