"""The prompt section that documents the planning tools and carries them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import attrs

from ...prompt import MarkdownSection, Section
from .state import current_plan, register_planning_state
from .strategies import PlanningStrategy, render_planning_copy
from .tools import planning_tools

if TYPE_CHECKING:
    from ...prompt import EnabledPredicate
    from ...prompt.template import CompiledTemplate
    from ...session import Session

__all__ = ["PLAN_VIEW_KEY", "PlanViewSection", "PlanningToolsSection", "plan_view_section"]

PLAN_VIEW_KEY = "current-plan"
"""Key of the plan view under the planning section."""


@attrs.frozen(kw_only=True, eq=False)
class PlanViewSection(Section[None]):
    """The current plan, declared ``"turn"``: sent after the conversation, fresh on every request.

    The plan changes with every planning call, so it stays out of the system
    message (``specs/CACHING.md``); shown only once there is a plan.
    """

    plan_session: Session

    @property
    def override_source(self) -> str:
        return ""

    def render_body(
        self,
        params: None,
        *,
        override: CompiledTemplate | None = None,
        values: Mapping[str, str] | None = None,
    ) -> str:
        plan = current_plan(self.plan_session)
        return "" if plan is None else plan.render()


def plan_view_section(session: Session) -> PlanViewSection:
    """The plan view of ``session``'s plan (enabled while the session has one)."""
    return PlanViewSection(
        title="Current plan",
        key=PLAN_VIEW_KEY,
        plan_session=session,
        enabled=lambda _: current_plan(session) is not None,
        accepts_overrides=False,
        volatility="turn",
    )


class PlanningToolsSection(MarkdownSection[None]):
    """Planning instructions for one strategy plus the four planning tools.

    Building the section registers the plan's slices and reducers on
    ``session``, so ``session[Plan].latest()`` works from the first call on.
    The tools act on whichever session runs them (they register lazily too),
    which is normally this one. ``accepts_overrides`` applies to the section
    text and to every tool: off by default, because the copy and the tool
    descriptions are written to match each other.

    ``plan_view`` (default on) adds the current plan as a child section
    declared ``"turn"``: the model sees the plan as it stands on every
    request, after the conversation, without a cache-busting system edit.
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
        plan_view: bool = True,
    ) -> None:
        register_planning_state(session)
        super().__init__(
            title=title,
            key=key,
            template=render_planning_copy(strategy),
            children=(plan_view_section(session),) if plan_view else (),
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
