"""Cost of one tool-call round trip through a whole agent loop, next to two peers.

A round trip is: the (scripted) model asks for one tool call, the framework
runs the tool, feeds the result back and calls the model again. Each run
makes K such round trips and then gets a final answer; per-round-trip cost is
the run's time divided by K (fixed costs included, so K = 1 shows them) and,
separately, the marginal cost ``(t(K=100) - t(K=1)) / 99``.

Cases, measured in one process and one run, with the same 3-field tool:
- weakprompt: ``evaluate()`` with a ``FunctionAdapter``; every model turn
  (reply and tool result) is stored as one transcript turn in an in-memory
  SQLite store (opened once, as an application would), every tool result is
  also kept in the tool-output store, every tool call goes through the
  transactional dispatcher, events are published;
- the transcript share: what one round trip asks of the transcript, alone,
  done as the loop does it (a turn: compile, the reply and the result
  staged, one write transaction, on the connection the evaluation holds);
- the output-store share: what one round trip asks of the tool-output store,
  alone (``store_result``; ``has_oversized`` once per run);
- pydantic-ai: ``Agent(FunctionModel(...)).run_sync`` with a plain tool;
- openai-agents: ``Runner.run`` with a scripted ``Model`` written here
  (tracing disabled), awaited inside one event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call_turn
from weakprompt.messages import AssistantTurn, ToolCall, Usage
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest, evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript

KS = (1, 10, 100)
ARGUMENTS = '{"city": "Lisbon", "days": 3, "units": "metric"}'


@dataclass(frozen=True)
class Forecast:
    city: str
    days: int
    units: str


@tool(name="forecast", description="Weather forecast for a city.")
def forecast(params: Forecast, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=f"{params.city}: sunny for {params.days} days")


TEMPLATE: PromptTemplate[None] = PromptTemplate(
    ns="bench",
    key="loop",
    sections=[MarkdownSection(title="Task", key="task", template="Use the tool.", tools=[forecast])],
)
PROMPT: Prompt[None] = Prompt(TEMPLATE)
_ONE_CALL = Usage(input_tokens=10, output_tokens=5, model_calls=1)


# -- weakprompt ----------------------------------------------------------------------------------


def weakprompt_runner(k: int, store: Store) -> Callable[[], int]:
    def model(request: ModelRequest) -> AssistantTurn:
        done = sum(1 for m in request.context.messages if m.role == "tool")
        if done < k:
            call = ToolCall(id=f"call_{done}", name="forecast", arguments=ARGUMENTS)
            return tool_call_turn(call, usage=_ONE_CALL)
        return text_turn("done", usage=_ONE_CALL)

    adapter = FunctionAdapter(model)

    def run() -> int:
        session = Session(session_id=uuid.uuid4().hex)
        response = evaluate(PROMPT, adapter=adapter, session=session, store=store, max_turns=k + 1)
        return sum(1 for e in response.tool_executions if e.success)

    return run


def transcript_share_runner(k: int, store: Store) -> Callable[[], int]:
    """Only the transcript work of K round trips, as the loop does it: one turn each."""
    schemas = PROMPT.render().tool_schemas
    call = ToolCall(id="call", name="forecast", arguments=ARGUMENTS)

    def run() -> int:
        with store.hold_connection():
            transcript = Transcript(store, uuid.uuid4().hex)
            transcript.set_tools(schemas)
            transcript.system("Use the tool.")
            for _ in range(k):
                with transcript.turn(refresh=False):
                    transcript.compile()
                    transcript.assistant("", tool_calls=(call,), usage=_ONE_CALL)
                    transcript.tool_result(call.id, call.name, "Lisbon: sunny for 3 days")
        return k

    return run


def output_store_share_runner(k: int, store: Store) -> Callable[[], int]:
    """Only the tool-output store work of K round trips, as the loop does it: storing each result."""
    from weakprompt.runtime.results import ToolOutputStore

    def run() -> int:
        with store.hold_connection():
            outputs = ToolOutputStore(store, uuid.uuid4().hex)
            outputs.has_oversized()  # once per evaluation
            for i in range(k):
                outputs.store_result(f"call_{i}", "forecast", ARGUMENTS, "Lisbon: sunny for 3 days")
        return k

    return run


# -- pydantic-ai ---------------------------------------------------------------------------------


def pydantic_ai_runner(k: int) -> Callable[[], int]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        done = sum(1 for m in messages for p in m.parts if isinstance(p, ToolReturnPart))
        if done < k:
            return ModelResponse(parts=[ToolCallPart("forecast", ARGUMENTS, tool_call_id=f"call_{done}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), instructions="Use the tool.")
    limits = UsageLimits(request_limit=k + 2)

    @agent.tool_plain
    def forecast(city: str, days: int, units: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Weather forecast for a city."""
        return f"{city}: sunny for {days} days"

    def run() -> int:
        result = agent.run_sync("go", usage_limits=limits)
        return sum(1 for m in result.all_messages() for p in m.parts if isinstance(p, ToolReturnPart))

    return run


# -- openai-agents -------------------------------------------------------------------------------


def openai_agents_runner(k: int, loop: asyncio.AbstractEventLoop) -> Callable[[], int]:
    from agents import (
        Agent,
        Model,
        ModelResponse,
        RunConfig,
        Runner,
        ToolCallOutputItem,
        Usage,
        function_tool,
    )
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        """Asks for the tool until K results are in the input, then answers."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            items = input if isinstance(input, list) else []
            done = sum(
                1 for item in items if isinstance(item, dict) and item.get("type") == "function_call_output"
            )
            if done < k:
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call", call_id=f"call_{done}", name="forecast", arguments=ARGUMENTS
                    )
                ]
            else:
                output = [
                    ResponseOutputMessage(
                        id="msg",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                    )
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def forecast(city: str, days: int, units: str) -> str:
        """Weather forecast for a city."""
        return f"{city}: sunny for {days} days"

    agent = Agent(name="bench", instructions="Use the tool.", model=ScriptedModel(), tools=[forecast])
    config = RunConfig(tracing_disabled=True)

    def run() -> int:
        result = loop.run_until_complete(Runner.run(agent, "go", run_config=config, max_turns=k + 2))
        return sum(1 for item in result.new_items if isinstance(item, ToolCallOutputItem))

    return run


# -- measuring -----------------------------------------------------------------------------------


def _time_runs(name: str, k: int, run: Callable[[], int], repeats: int) -> list[float]:
    """Seconds per run; the first run checks the work done and warms caches.

    With ``repeats == 1`` the checking run is the sample (used for the slow
    K=100 runs in quick mode, after smaller K already warmed everything).
    """
    start = time.perf_counter()
    ran = run()
    first = time.perf_counter() - start
    if ran != k:
        raise RuntimeError(f"{name}: a run executed {ran} tool calls instead of {k}")
    if repeats == 1:
        return [first]
    samples: list[float] = []
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            samples.append(time.perf_counter() - start)
    finally:
        if enabled:
            gc.enable()
    return samples


def main(quick: bool = False) -> dict[str, object]:
    repeats = {1: 7, 10: 5, 100: 1} if quick else {1: 31, 10: 15, 100: 7}
    loop = asyncio.new_event_loop()
    store = Store.open("sqlite://")
    factories: dict[str, Callable[[int], Callable[[], int]]] = {
        "weakprompt": lambda k: weakprompt_runner(k, store),
        "weakprompt transcript share": lambda k: transcript_share_runner(k, store),
        "weakprompt output-store share": lambda k: output_store_share_runner(k, store),
        "pydantic-ai": pydantic_ai_runner,
        "openai-agents": lambda k: openai_agents_runner(k, loop),
    }
    peers: dict[str, str] = {}
    per_trip: dict[str, dict[int, float]] = {}
    rows: list[dict[str, object]] = []
    for name, factory in factories.items():
        try:
            for k in KS:  # in increasing order: smaller runs warm the caches
                samples = _time_runs(name, k, factory(k), repeats[k])
                median = statistics.median(samples)
                quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [median] * 3
                per_trip.setdefault(name, {})[k] = median / k * 1e3
                rows.append(
                    {
                        "case": name,
                        "K": k,
                        "run_ms": round(median * 1e3, 3),
                        "p25_ms": round(quartiles[0] * 1e3, 3),
                        "p75_ms": round(quartiles[2] * 1e3, 3),
                        "per_round_trip_ms": round(median / k * 1e3, 4),
                    }
                )
            peers[name] = "measured"
        except Exception as exc:  # a missing or failing peer is reported, not dropped
            peers[name] = f"failed: {type(exc).__name__}: {exc}"
    loop.close()
    store.close()

    marginal: dict[str, float] = {}
    for name, trips in per_trip.items():
        if 1 in trips and 100 in trips:
            marginal[name] = (trips[100] * 100 - trips[1]) / 99
    ours = per_trip.get("weakprompt", {})
    goals: list[dict[str, object]] = []
    notes: list[str] = []
    for peer in ("pydantic-ai", "openai-agents"):
        theirs = per_trip.get(peer)
        if not theirs or 100 not in theirs or 100 not in ours:
            goals.append(
                {"goal": f">= 10x faster per round trip than {peer}", "met": False, "value": "peer missing"}
            )
            continue
        ratio = theirs[100] / ours[100]
        goals.append(
            {
                "goal": f">= 10x faster per round trip than {peer} (K=100)",
                "met": ratio >= 10,
                "value": f"{ratio:.2f}x",
            }
        )
        notes.append(
            f"K=100: {peer} {theirs[100]:.3f} ms vs weakprompt {ours[100]:.3f} ms per round trip "
            f"({ratio:.2f}x); marginal {marginal.get(peer, float('nan')):.3f} vs "
            f"{marginal.get('weakprompt', float('nan')):.3f} ms"
        )
    notes.append(
        "weakprompt stores every model turn (reply + tool results) in its transcript in one SQLite "
        "transaction, keeps every tool result in its output store, and publishes events; the peers keep "
        "the conversation in memory only."
    )
    for share in ("weakprompt transcript share", "weakprompt output-store share"):
        if share in per_trip and 100 in per_trip[share] and 100 in ours:
            notes.append(
                f"{share}: {per_trip[share][100]:.3f} ms of the {ours[100]:.3f} ms round trip "
                f"({per_trip[share][100] / ours[100]:.0%}) at K=100"
            )
    result: dict[str, object] = {
        "title": "Agent loop: tool-call round trips with a scripted model",
        "rows": rows,
        "marginal_ms": {k: round(v, 4) for k, v in marginal.items()},
        "peers": peers,
        "goals": goals,
        "notes": notes,
        "charts": [
            {
                "kind": "line",
                "title": "Per tool-call round trip (run time / K)",
                "xlabel": "K tool calls per run",
                "ylabel": "ms per round trip",
                "logx": True,
                "logy": True,
                "series": {
                    name: [[k, v] for k, v in sorted(trips.items())] for name, trips in per_trip.items()
                },
                "file": "loop_round_trip.png",
            }
        ],
    }
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    outcome = main(quick=args.quick)
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "loop.json").write_text(json.dumps(outcome, indent=2, default=str))
    print(
        json.dumps({"rows": outcome["rows"], "goals": outcome["goals"], "notes": outcome["notes"]}, indent=2)
    )
