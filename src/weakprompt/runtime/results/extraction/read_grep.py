"""The read-grep strategy: a sub-agent that searches the output with ``grep`` and ``read``.

It is an ordinary nested evaluation through :func:`weakprompt.runtime.evaluate`
(the one loop), with a prompt whose only tools read this one output. The loop
runs this pipeline, so the pipeline does not import the loop: the evaluation
function is passed in (:class:`RunSubAgent`). The sub-agent runs in a private
session so its tool calls and events stay out of the caller's state; its
model calls still go through the metered adapter, so they are charged to the
caller's usage and budget.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ....errors import AdapterError, MaxTurnsExceededError, OutputParseError
from ....prompt import MarkdownSection, Prompt, PromptTemplate
from ....session import Session
from .config import ExtractionConfig
from .failure import StrategyFailed, reply_preview
from .prompts import READ_GREP_TEMPLATE, ReadGrepBrief, read_grep_brief, read_grep_request
from .source import DocumentStats, ExtractionSource
from .stored_view import StoredOutputView, read_grep_tools
from .wrapper import FinalWrapper

if TYPE_CHECKING:
    from ....clock import Clock
    from ....deadlines import Deadline
    from ....model import ProviderAdapter

__all__ = ["RunSubAgent", "SubAgentReply", "read_grep_prompt", "run_read_grep"]


class SubAgentReply(Protocol):
    """What the sub-agent's evaluation returns that read-grep reads: its final text."""

    @property
    def text(self) -> str: ...


class RunSubAgent(Protocol):
    """Runs a prompt to its final answer: :func:`weakprompt.runtime.evaluate` fits."""

    def __call__(
        self,
        prompt: Prompt[None],
        *,
        adapter: ProviderAdapter,
        session: Session,
        input: str | None,
        deadline: Deadline | None,
        max_turns: int,
        max_output_tokens: int | None,
    ) -> SubAgentReply: ...


def read_grep_prompt(view: StoredOutputView, brief: ReadGrepBrief) -> Prompt[None]:
    """The sub-agent's prompt: the instructions, and ``read`` / ``grep`` over ``view``."""
    template: PromptTemplate[None] = PromptTemplate(
        ns="weakprompt/extraction",
        key="read-grep",
        name="tool_output read-grep",
        sections=[
            MarkdownSection(
                title="Search a stored tool output",
                key="search",
                template=READ_GREP_TEMPLATE,
                params_type=ReadGrepBrief,
                tools=read_grep_tools(view),
            )
        ],
    )
    return Prompt(template).bind(brief)


def run_read_grep(
    adapter: ProviderAdapter,
    source: ExtractionSource,
    text: str,
    stats: DocumentStats,
    query: str,
    *,
    config: ExtractionConfig,
    clock: Clock,
    deadline: Deadline | None,
    run_agent: RunSubAgent,
) -> str:
    """Run the sub-agent with ``run_agent``; returns the answer from its wrapped final reply."""
    wrapper = FinalWrapper(config.nonce_factory())
    view = StoredOutputView(source, text, config)
    brief = read_grep_brief(source, stats, query, wrapper, max_lines=config.read_max_lines)
    try:
        response = run_agent(
            read_grep_prompt(view, brief),
            adapter=adapter,
            session=Session(clock=clock),
            input=read_grep_request(source, query, wrapper),
            deadline=deadline,
            max_turns=config.read_grep_max_turns,
            max_output_tokens=config.max_output_tokens,
        )
    except MaxTurnsExceededError as exc:
        raise StrategyFailed(
            f"the sub-agent made {config.read_grep_max_turns} model calls without a final answer"
        ) from exc
    except (AdapterError, OutputParseError) as exc:
        raise StrategyFailed(f"the sub-agent's model call failed: {type(exc).__name__}: {exc}") from exc
    answer = wrapper.parse(response.text)
    if answer is None:
        raise StrategyFailed(
            f"the sub-agent's final reply had no {wrapper.opening} wrapper ({reply_preview(response.text)})"
        )
    return answer
