"""pydantic-ai's documented history-processor recipes, run by pydantic-ai itself.

Used by compaction_bench.py (it needs pydantic-ai installed: /work/benchvenv
has pydantic-ai-slim). The docs give two processors: keep the last 5
messages, and once there are more than 10, have a summarizer agent summarize
the oldest 10 and send that summary plus the last message. In pydantic-ai 2.x
a processor is mounted with ``capabilities=[ProcessHistory(f)]``
(``Agent(history_processors=...)`` was the 1.x spelling of the same hook and
now raises ``TypeError``). Each request of the baseline run becomes a
pydantic-ai history, runs through a real ``Agent`` whose ``FunctionModel``
records what it is given, and what it was given is converted back to
weakprompt messages for the same pairing checker. No network: both models are
``FunctionModel``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version

import pydantic_ai.messages as pai
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.exceptions import UnexpectedModelBehavior, UserError
from pydantic_ai.messages import SYNTHESIZED_TOOL_RETURN_METADATA_KEY
from pydantic_ai.models.function import AgentInfo, FunctionModel

from compaction_support import request_problems
from weakprompt.messages import Message, ToolCall
from weakprompt.model import ModelRequest
from weakprompt.parts import ReasoningPart, TextPart

Processor = Callable[[list[pai.ModelMessage]], list[pai.ModelMessage] | Awaitable[list[pai.ModelMessage]]]


def to_pydantic_ai(messages: Sequence[Message]) -> list[pai.ModelMessage]:
    """pydantic-ai's grouping: one ModelRequest per run of system/user/tool messages."""
    out: list[pai.ModelMessage] = []
    parts: list[pai.ModelRequestPart] = []
    for message in messages:
        if message.role != "assistant":
            if message.role == "system":
                parts.append(pai.SystemPromptPart(content=message.content))
            elif message.role == "user":
                parts.append(pai.UserPromptPart(content=message.content))
            else:
                parts.append(
                    pai.ToolReturnPart(
                        tool_name=message.name or "",
                        content=message.content,
                        tool_call_id=message.tool_call_id or "",
                    )
                )
            continue
        if parts:
            out.append(pai.ModelRequest(parts=parts))
            parts = []
        reply: list[pai.ModelResponsePart] = [
            pai.ThinkingPart(content=p.text, signature=p.signature)
            for p in message.parts
            if isinstance(p, ReasoningPart)
        ]
        if message.content:
            reply.append(pai.TextPart(content=message.content))
        reply += [pai.ToolCallPart(c.name, c.arguments_json(), tool_call_id=c.id) for c in message.tool_calls]
        out.append(pai.ModelResponse(parts=reply))
    if parts:
        out.append(pai.ModelRequest(parts=parts))
    return out


def from_pydantic_ai(messages: Sequence[pai.ModelMessage]) -> list[Message]:
    """Back to the neutral shape, so one checker judges both frameworks' requests."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, pai.ModelResponse):
            reasoning = [
                ReasoningPart(text=p.content, issuer="function:function", signature=p.signature)
                for p in message.parts
                if isinstance(p, pai.ThinkingPart)
            ]
            text = "".join(p.content for p in message.parts if isinstance(p, pai.TextPart))
            calls = tuple(
                ToolCall(id=p.tool_call_id, name=p.tool_name, arguments=p.args_as_json_str())
                for p in message.parts
                if isinstance(p, pai.ToolCallPart)
            )
            out.append(Message.of("assistant", (*reasoning, TextPart(text)), tool_calls=calls))
            continue
        for part in message.parts:
            if isinstance(part, pai.ToolReturnPart | pai.RetryPromptPart) and part.tool_name:
                out.append(
                    Message("tool", str(part.content), tool_call_id=part.tool_call_id, name=part.tool_name)
                )
            elif isinstance(part, pai.SystemPromptPart):
                out.append(Message("system", part.content))
            else:
                out.append(Message("user", str(getattr(part, "content", ""))))
    return out


def keep_recent_messages(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """The docs' trimming recipe: only the 5 most recent messages go to the model."""
    return messages[-5:] if len(messages) > 5 else messages


def summary_reply(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
    return pai.ModelResponse(parts=[pai.TextPart(content="Earlier: routine lookups of project notes.")])


summarize_agent = Agent(
    FunctionModel(summary_reply),
    instructions="Summarize this conversation without small talk; keep the technical facts and next steps.",
)


async def summarize_old_messages(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
    """The docs' summarization recipe: past 10 messages, the oldest 10 become a summary."""
    if len(messages) > 10:
        summary = await summarize_agent.run(message_history=messages[:10])
        return summary.new_messages() + messages[-1:]
    return messages


def run_recipe(processor: Processor, requests: list[ModelRequest]) -> dict[str, int]:
    """Every baseline request through a pydantic-ai Agent with ``processor``; what reaches its model.

    pydantic-ai 2.x repairs a history after the processors and before the
    model (``repair_messages``: orphaned tool results are dropped, a call
    without its result gets a synthesized placeholder result), so we count
    both what the recipe produced and what the repaired request lost or made up.
    """
    produced: list[list[pai.ModelMessage]] = []
    seen: list[list[pai.ModelMessage]] = []

    async def recorded(messages: list[pai.ModelMessage]) -> list[pai.ModelMessage]:
        out = processor(messages)
        out = await out if isinstance(out, Awaitable) else out
        produced.append(list(out))
        return out

    def capture(messages: list[pai.ModelMessage], info: AgentInfo) -> pai.ModelResponse:
        seen.append(list(messages))
        return pai.ModelResponse(parts=[pai.TextPart(content="ok")])

    agent = Agent(FunctionModel(capture), capabilities=[ProcessHistory(recorded)])
    figures = dict.fromkeys(
        (
            "requests",
            "recipe_output_invalid",
            "sent_invalid",
            "results_dropped",
            "results_synthesized",
            "raised",
        ),
        0,
    )
    for request in requests:
        produced.clear()
        seen.clear()
        figures["requests"] += 1
        try:
            agent.run_sync(message_history=to_pydantic_ai(request.context.messages))
        except (UserError, UnexpectedModelBehavior):
            figures["raised"] += 1  # the library refused the processed history before sending it
            continue
        figures["recipe_output_invalid"] += bool(request_problems(from_pydantic_ai(produced[0])))
        figures["sent_invalid"] += bool(request_problems(from_pydantic_ai(seen[0])))
        sent = [p for m in seen[0] for p in m.parts if isinstance(p, pai.ToolReturnPart)]
        synthesized = [p for p in sent if (p.metadata or {}).get(SYNTHESIZED_TOOL_RETURN_METADATA_KEY)]
        kept = {p.tool_call_id for p in sent}
        figures["results_synthesized"] += len(synthesized)
        figures["results_dropped"] += sum(
            isinstance(p, pai.ToolReturnPart) and p.tool_call_id not in kept
            for m in produced[0]
            for p in m.parts
        )
    return figures


def recipe_figures(requests: list[ModelRequest]) -> dict[str, str | dict[str, int]]:
    """The two documented recipes over the same requests."""
    return {
        "version": version("pydantic-ai-slim"),
        "keep_last_5": run_recipe(keep_recent_messages, requests),
        "summarize_oldest_10": run_recipe(summarize_old_messages, requests),
    }
