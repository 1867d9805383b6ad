"""The K=100 ``evaluate()`` round trip, in a process of its own, on whichever weakprompt it imports.

``concurrency_bench`` starts this twice: once on this checkout and once on
the source of the pre-async commit (extracted with ``git archive``), and
asks each in turn for timings, so the regression check is a ratio measured
in one run on the same machine load instead of against a figure recorded on
another day. Only what both versions have is used here.

Protocol, one line each way: ``time N`` answers the seconds per round trip
of each of N runs, space-separated. The collector stays on, as in the rest
of ``concurrency_bench``.
"""

from __future__ import annotations

import sys
import time
import uuid
from dataclasses import dataclass

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call_turn
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.model import ModelRequest
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool

K = 100
ARGUMENTS = '{"city": "Lisbon", "days": 3, "units": "metric"}'
ONE_CALL = Usage(input_tokens=10, output_tokens=5, model_calls=1)


@dataclass(frozen=True)
class Forecast:
    city: str
    days: int
    units: str


@tool(name="forecast", description="Weather forecast for a city.")
def forecast(params: Forecast, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"{params.city}: sunny for {params.days} days")


PROMPT: Prompt[None] = Prompt(
    PromptTemplate(
        ns="bench",
        key="concurrency",
        sections=[MarkdownSection(title="Task", key="task", template="Use the tools.", tools=[forecast])],
    )
)


def model(request: ModelRequest) -> AssistantTurn:
    done = sum(1 for m in request.context.messages if m.role == "tool")
    if done < K:
        call = ToolCall(id=f"call_{done}", name="forecast", arguments=ARGUMENTS)
        return tool_call_turn(call, usage=ONE_CALL)
    return text_turn("done", usage=ONE_CALL)


def main() -> None:
    store = Store.open("sqlite://")
    adapter = FunctionAdapter(model)

    def once() -> float:
        session = Session(session_id=uuid.uuid4().hex)
        start = time.perf_counter()
        response = evaluate(PROMPT, adapter=adapter, session=session, store=store, max_turns=K + 1)
        elapsed = time.perf_counter() - start
        if sum(1 for e in response.tool_executions if e.success) != K:
            raise RuntimeError(f"a run did not execute {K} tool calls")
        return elapsed / K

    once()  # warm imports and caches
    for line in sys.stdin:
        _command, number = line.split()
        print(" ".join(repr(once()) for _ in range(int(number))), flush=True)


if __name__ == "__main__":
    main()
