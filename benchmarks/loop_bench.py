"""Cost of one tool-call round trip through a whole agent loop, next to two peers.

A round trip is: the (scripted) model asks for one tool call, the framework
runs the tool, feeds the result back and calls the model again. Each run
makes K such round trips and then gets a final answer; per-round-trip cost is
the run's time divided by K (fixed costs included, so K = 1 shows them) and,
separately, the marginal cost ``(t(K=100) - t(K=1)) / 99``.

Cases, measured in one run with the same 3-field tool, each in a worker
process of its own (a framework never runs in a heap another one filled),
timed in turn round after round so that all meet the same load; each
sample runs a case back to back for about half a second (0.2 s with
``--quick``), so a fast case is not timed on one cold start:
- weakprompt: ``evaluate()`` with a ``FunctionAdapter``; every model turn
  (reply, tool result and the result's stored output) is stored as one
  transcript turn, in one transaction, in an in-memory SQLite store (opened
  once per K, as an application would open one), every tool call goes
  through the transactional dispatcher, events are published;
- weakprompt default store: the same without ``store=``; the run's private
  store keeps each turn back until something in the run reads the store
  (nothing does here), as the peers keep their history in memory;
- the transcript share: what one round trip asks of the transcript, alone,
  done as the loop does it (a turn: compile, the reply and the result
  staged, one write transaction, on the connection the evaluation holds);
- the storage share: the same turn with the result's output prepared and
  its row written in the turn's transaction, as the loop does it; the
  output store's share is the difference between the two;
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

from harness import LineWorker, interleaved_workers

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


def weakprompt_runner(k: int, store: Store | None) -> Callable[[], int]:
    def model(request: ModelRequest) -> AssistantTurn:
        done = sum(1 for m in request.context.messages if m.role == "tool")
        if done < k:
            call = ToolCall(id=f"call_{done}", name="forecast", arguments=ARGUMENTS)
            return tool_call_turn(call, usage=_ONE_CALL)
        return text_turn("done", usage=_ONE_CALL)

    adapter = FunctionAdapter(model, keep_requests=False)  # as the peers' function models, it keeps none

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


def storage_share_runner(k: int, store: Store) -> Callable[[], int]:
    """The transcript share plus the output store's, as the loop does them: one turn per round trip.

    Each result is prepared (measured, hashed, summarised, compressed) and
    its row written in the turn's transaction, next to the two commits.
    """
    from weakprompt.runtime.results import ToolOutputStore

    schemas = PROMPT.render().tool_schemas
    result = "Lisbon: sunny for 3 days"

    def run() -> int:
        with store.hold_connection():
            session_id = uuid.uuid4().hex
            transcript = Transcript(store, session_id)
            outputs = ToolOutputStore(store, session_id)
            outputs.has_oversized()  # once per evaluation
            transcript.set_tools(schemas)
            transcript.system("Use the tool.")
            for i in range(k):
                call = ToolCall(id=f"call_{i}", name="forecast", arguments=ARGUMENTS)
                with transcript.turn(refresh=False) as turn:
                    transcript.compile()
                    transcript.assistant("", tool_calls=(call,), usage=_ONE_CALL)
                    outputs.stage(turn, outputs.prepare(call.id, call.name, call.arguments_json(), result))
                    transcript.tool_result(call.id, call.name, result)
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


GOALS = {"pydantic-ai": 15.0, "openai-agents": 20.0}
"""Per round trip at K=100, weakprompt must be this many times faster than each peer."""

_WEAKPROMPT_CASES = {
    "weakprompt": "a store given, every turn written",
    "weakprompt default store": "default store, turns kept back",
}
"""weakprompt's two loop cases, each held to the goals."""


CASES = (
    "weakprompt",
    "weakprompt default store",
    "weakprompt transcript share",
    "weakprompt storage share",
    "pydantic-ai",
    "openai-agents",
)


def _factories() -> dict[str, Callable[[int], Callable[[], int]]]:
    """How each case builds its runner for K (in the worker process that runs it).

    weakprompt's cases open one in-memory store per K, as an application
    opens one, so that each K starts from an empty database instead of
    the thousands of sessions the smaller K left behind.
    """
    loop = asyncio.new_event_loop()
    return {
        "weakprompt": lambda k: weakprompt_runner(k, Store.open("sqlite://")),
        "weakprompt default store": lambda k: weakprompt_runner(k, None),
        "weakprompt transcript share": lambda k: transcript_share_runner(k, Store.open("sqlite://")),
        "weakprompt storage share": lambda k: storage_share_runner(k, Store.open("sqlite://")),
        "pydantic-ai": pydantic_ai_runner,
        "openai-agents": lambda k: openai_agents_runner(k, loop),
    }


def _worker(name: str) -> None:
    """``--worker NAME``: run one case in this process, as the parent asks, one line per request.

    ``check K`` runs once, unmeasured, checks the work done and answers
    ``ok SECONDS`` (the first run also warms the caches); ``time K N``
    answers the seconds per run of N runs back to back, with the collector
    off while they run.
    """
    factory = _factories()[name]
    runners: dict[int, Callable[[], int]] = {}
    for line in sys.stdin:
        command, k_text, *rest = line.split()
        k = int(k_text)
        try:
            run = runners.get(k)
            if run is None:
                run = runners[k] = factory(k)
            if command == "check":
                start = time.perf_counter()
                ran = run()
                elapsed = time.perf_counter() - start
                answer = f"ok {elapsed!r}" if ran == k else f"failed: a run did {ran} tool calls, not {k}"
            else:
                number = int(rest[0])
                gc.disable()
                start = time.perf_counter()
                for _ in range(number):
                    run()
                answer = repr((time.perf_counter() - start) / number)
                gc.enable()
        except Exception as exc:  # a missing or failing peer is reported, not dropped
            answer = f"failed: {type(exc).__name__}: {exc}".replace("\n", " ")
        print(answer, flush=True)


def _worker_process(name: str) -> LineWorker:
    """One case in a process of its own, so that no framework runs in a heap another one filled."""
    return LineWorker([str(Path(__file__).resolve()), "--worker", name])


def main(quick: bool = False) -> dict[str, object]:
    repeats = {1: 5, 10: 5, 100: 3} if quick else {1: 15, 10: 11, 100: 9}
    sample_seconds = 0.2 if quick else 0.5
    workers = {name: _worker_process(name) for name in CASES}
    peers: dict[str, str] = {}
    per_trip: dict[str, dict[int, float]] = {}
    rows: list[dict[str, object]] = []
    try:
        for k in KS:  # in increasing order: smaller runs warm the caches
            timed = interleaved_workers(workers, str(k), repeats[k], peers, sample_seconds=sample_seconds)
            for name, samples in timed.items():
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
    finally:
        for worker in workers.values():
            worker.close()

    marginal: dict[str, float] = {}
    for name, trips in per_trip.items():
        if 1 in trips and 100 in trips:
            marginal[name] = (trips[100] * 100 - trips[1]) / 99
    ours = per_trip.get("weakprompt", {})
    goals: list[dict[str, object]] = []
    notes: list[str] = []
    for case, how in _WEAKPROMPT_CASES.items():
        mine = per_trip.get(case, {})
        for peer, wanted in GOALS.items():
            theirs = per_trip.get(peer)
            goal = f">= {wanted:.0f}x faster per round trip than {peer} (K=100, {how})"
            if not theirs or 100 not in theirs or 100 not in mine:
                goals.append({"goal": goal, "met": False, "value": "peer missing"})
                continue
            ratio = theirs[100] / mine[100]
            goals.append({"goal": goal, "met": ratio >= wanted, "value": f"{ratio:.2f}x"})
            notes.append(
                f"K=100, {how}: {peer} {theirs[100]:.3f} ms vs weakprompt {mine[100]:.3f} ms per round "
                f"trip ({ratio:.2f}x); marginal {marginal.get(peer, float('nan')):.3f} vs "
                f"{marginal.get(case, float('nan')):.3f} ms"
            )
    notes.append(
        "weakprompt with a store it is given writes every model turn (reply, tool results and their stored "
        "outputs) in one SQLite transaction, and publishes events; on its default store (no store=, which "
        "nothing outside the run can read) turns are kept back until something in the run reads the store, "
        "which in this loop nothing does; the peers keep the conversation in memory only."
    )
    transcript = per_trip.get("weakprompt transcript share", {}).get(100)
    storage = per_trip.get("weakprompt storage share", {}).get(100)
    if transcript is not None and storage is not None and 100 in ours:
        notes.append(
            f"at K=100, of the {ours[100]:.3f} ms round trip: the transcript {transcript:.3f} ms "
            f"({transcript / ours[100]:.0%}, its turn transaction included), the output store "
            f"{storage - transcript:.3f} ms ({(storage - transcript) / ours[100]:.0%}: preparing the "
            f"output and writing its row in that transaction)"
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
    parser.add_argument("--worker", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args.worker)
        sys.exit(0)
    outcome = main(quick=args.quick)
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "loop.json").write_text(json.dumps(outcome, indent=2, default=str))
    print(
        json.dumps({"rows": outcome["rows"], "goals": outcome["goals"], "notes": outcome["notes"]}, indent=2)
    )
