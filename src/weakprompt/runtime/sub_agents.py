"""The sub-agent of ``tool_output``'s read-grep extraction: a run of its own, through the loop.

The loop hands each run's pipeline this runner (``run_agent``); extraction
never imports the loop (``specs/LAYOUT.md``).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .redaction import Redactor, default_redact

if TYPE_CHECKING:
    from ..deadlines import Deadline
    from ..model import ProviderAdapter
    from ..parts import Content
    from ..prompt import Prompt
    from ..session import Session
    from .response import PromptResponse
    from .results import RunSubAgent, ToolOutputSettings
    from .tracing import Tracing

__all__ = ["default_sub_agent_runner", "make_sub_agent_runner", "sub_agent_runner", "sub_agent_settings"]


def sub_agent_runner(redact: Redactor, tracing: Tracing | None) -> RunSubAgent:
    """``run_sync`` for the read-grep sub-agent of ``tool_output``.

    The sub-agent reads an output already stored (so already redacted, if
    the evaluation redacts output), and its answer comes back through this
    evaluation's pipeline: its own tool results are not redacted again.
    Its failure texts are, with this evaluation's hook.
    """
    if redact is default_redact and tracing is None:
        return default_sub_agent_runner()  # the usual case: one runner for every run
    return make_sub_agent_runner(redact, tracing)


@functools.cache
def default_sub_agent_runner() -> RunSubAgent:
    return make_sub_agent_runner(default_redact, None)


@functools.cache
def sub_agent_settings() -> ToolOutputSettings:
    """The sub-agent's output settings (its results are already redacted): immutable, so shared."""
    from .results import ToolOutputSettings

    return ToolOutputSettings(redact_output=False)


def make_sub_agent_runner(redact: Redactor, tracing: Tracing | None) -> RunSubAgent:
    settings = sub_agent_settings()

    def run_sub_agent(
        prompt: Prompt[None],
        *,
        adapter: ProviderAdapter,
        session: Session,
        input: Content | None,
        deadline: Deadline | None,
        max_turns: int,
        max_output_tokens: int | None,
    ) -> PromptResponse[None]:
        from .loop import run_sync  # the loop imports this module: its run resolves at the call

        return run_sync(
            prompt,
            adapter=adapter,
            session=session,
            input=input,
            deadline=deadline,
            max_turns=max_turns,
            max_output_tokens=max_output_tokens,
            redact=redact,
            tool_outputs=settings,
            tracing=tracing,
        )

    return run_sub_agent
