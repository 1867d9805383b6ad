"""What each framework adds above the official ``openai`` SDK for one streamed tool round trip.

A round trip is two streamed Chat Completions requests: the model asks for
one tool call, the framework runs the tool and sends its result, and the
model answers with text. Every case talks to the same fake server: an
``httpx2.MockTransport`` behind a real ``openai.AsyncOpenAI`` client, which
answers with Server-Sent Events of the shape OpenAI sends (a tool-call
stream, then a text stream with a usage chunk). So every case pays the same
SDK and HTTP-stack cost, and the differences are the frameworks' own.

Cases, each in a process of its own and timed in turn, round after round:
- bare SDK: the same two requests written by hand (accumulate the tool-call
  deltas, decode the arguments, call the function, append the messages);
- weakprompt, default store: ``await run(...)`` with no ``store=``;
- weakprompt, SQLite file: the same with a store on a SQLite file opened once,
  so every turn is written to disk in its own transaction;
- pydantic-ai: ``Agent.run`` on ``OpenAIChatModel`` with an event stream
  handler (which makes it stream);
- openai-agents: ``Runner.run_streamed`` on ``OpenAIChatCompletionsModel``
  (tracing off), its events drained.

Run: ``python benchmarks/sdk_overhead_bench.py [--quick]``; writes
``benchmarks/results/sdk_overhead.json``. Besides the ratio of medians,
each row gives the median and range of the per-round ratios (a case's
sample over the bare SDK's of the same round), which a shared machine's
load drift disturbs less.

Figures (issue 29 item 7; two cores shared with other jobs, so the load
is given; "x" is the per-round ratio's median, [its range]). The code
before and after were run in turn, each in its own worker processes:

- Before: 9 trips to the store lane per file-store round trip. After: 5
  (the run's scope opened and taken in one trip, the run started with its
  first turn opened, the journal written first in the sync handler's
  trip, the last write closing the run; a lane trip is one future and one
  callback, not an executor future chained to a shielded one). Loop
  callbacks per file-store round trip: 51 before, 27 after.
- This script, load 2.7 to 2.9, two runs each: default store 2.12x
  [1.22..3.50] and 2.07x [1.55..2.85] before, 1.94x [1.76..2.98] and 1.97x
  [1.32..2.31] after; SQLite file 2.75x [1.55..4.63] and 2.67x
  [2.34..4.13] before, 2.38x [2.17..4.10] and 2.56x [1.79..2.81] after;
  pydantic-ai 3.57x and 3.47x; openai-agents 2.51x and 2.61x (bare SDK
  3.4 to 3.8 ms). With more warm-up and 9 rounds of 60 round trips (load
  2.2 to 2.7): default 1.57x before, 1.58x after; file 2.56x [2.14..4.93]
  before, 2.31x [2.01..3.13] after (7.36 ms, below openai-agents' 7.73
  ms and pydantic-ai's 11.36 ms); CPU time per round trip 7.67 ms before,
  7.06 ms after (bare SDK 3.20 ms).
- At load 7 to 11 the wall-clock ratios swing from 0.5x to 20x within one
  run, and nothing can be told apart there.
- Neither goal (1.3x default, 1.5x file) is met. The default store's only
  trip is its sync handler's, as in both peers (they run sync tools in a
  thread too); what is left is weakprompt's own work on the loop's thread
  (rendering, staging and hashing commits, the adapter's chunk
  conversion, about 1.8 ms of CPU per round trip above the SDK), and for
  the file store SQLite's and SQLAlchemy's (nine transactions per round
  trip, about 2 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import LineWorker, interleaved_workers

from weakprompt import ToolResult

MODEL = "gpt-4o-mini"
ARGUMENTS = '{"city": "Lisbon", "days": 3}'
ANSWER = "Sunny in Lisbon for the next three days."
GOALS = {"weakprompt, SQLite file": 1.5, "weakprompt, default store": 1.3}
"""Largest cost allowed, as a multiple of the bare SDK's round trip."""


# -- the fake server -----------------------------------------------------------------------------


def _sse(chunks: list[dict[str, Any]]) -> bytes:
    lines = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def _chunk(
    delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None
) -> dict[str, Any]:
    choices = [] if usage is not None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    chunk: dict[str, Any] = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1_790_000_000,
        "model": MODEL,
        "choices": choices,
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


_USAGE = {"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72}
TOOL_CALL_STREAM = _sse(
    [
        _chunk({"role": "assistant", "content": None}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_bench",
                        "type": "function",
                        "function": {"name": "forecast", "arguments": ""},
                    }
                ]
            }
        ),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[:12]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": ARGUMENTS[12:]}}]}),
        _chunk({}, "tool_calls"),
        _chunk({}, usage=_USAGE),
    ]
)
TEXT_STREAM = _sse(
    [
        _chunk({"role": "assistant", "content": ""}),
        *(_chunk({"content": piece}) for piece in (ANSWER[:10], ANSWER[10:25], ANSWER[25:])),
        _chunk({}, "stop"),
        _chunk({}, usage=_USAGE),
    ]
)


def async_client() -> Any:
    """An ``openai.AsyncOpenAI`` whose requests the fake server answers (no network)."""
    import httpx2
    import openai

    def answer(request: httpx2.Request) -> httpx2.Response:
        messages = json.loads(request.content)["messages"]
        body = TEXT_STREAM if messages[-1]["role"] == "tool" else TOOL_CALL_STREAM
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(answer))
    return openai.AsyncOpenAI(api_key="sk-bench", base_url="http://bench.invalid/v1", http_client=http)


@dataclass(frozen=True)
class Forecast:
    city: str
    days: int


def forecast_text(city: str, days: int) -> str:
    return f"{city}: sunny for {days} days"


def forecast_tool(params: Forecast) -> ToolResult[None]:
    """Weather forecast for a city."""
    return ToolResult(message=forecast_text(params.city, params.days))


# -- the cases: each returns an async function doing one round trip, answering the final text --


def bare_sdk() -> Callable[[], Awaitable[str]]:
    client = async_client()
    tools = [
        {
            "type": "function",
            "function": {
                "name": "forecast",
                "description": "Weather forecast for a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                    "required": ["city", "days"],
                    "additionalProperties": False,
                },
            },
        }
    ]

    async def once() -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "Use the tool."},
            {"role": "user", "content": "Weather in Lisbon?"},
        ]
        calls: dict[int, dict[str, str]] = {}
        stream = await client.chat.completions.create(
            model=MODEL, messages=messages, tools=tools, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            for choice in chunk.choices:
                for delta in choice.delta.tool_calls or ():
                    call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                    if delta.id:
                        call["id"] = delta.id
                    if delta.function is not None:
                        call["name"] += delta.function.name or ""
                        call["arguments"] += delta.function.arguments or ""
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in calls.values()
                ],
            }
        )
        for call in calls.values():
            arguments = json.loads(call["arguments"])
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": forecast_text(**arguments)}
            )
        text: list[str] = []
        stream = await client.chat.completions.create(
            model=MODEL, messages=messages, tools=tools, stream=True, stream_options={"include_usage": True}
        )
        async for chunk in stream:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
        return "".join(text)

    return once


def weakprompt_case(store_kind: str) -> Callable[[], Awaitable[str]]:
    from weakprompt import MarkdownSection, OpenAIAdapter, Prompt, PromptTemplate, Session, Store, tool
    from weakprompt.runtime import run

    section = MarkdownSection(
        title="Task", key="task", template="Use the tool.", tools=[tool(name="forecast")(forecast_tool)]
    )
    prompt = Prompt(PromptTemplate(ns="bench", key="sdk", sections=[section]))
    adapter = OpenAIAdapter(MODEL, async_client=async_client())
    store = None
    if store_kind == "file":
        folder = Path(tempfile.mkdtemp(prefix="wp-sdk-bench-"))
        store = Store.open(str(folder / "runs.db"))

    async def once() -> str:
        response = await run(
            prompt,
            adapter=adapter,
            session=Session(session_id=uuid.uuid4().hex),
            store=store,
            input="Weather in Lisbon?",
        )
        return response.text

    return once


def pydantic_ai_case() -> Callable[[], Awaitable[str]]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=async_client()))
    agent = Agent(model, instructions="Use the tool.")

    @agent.tool_plain
    def forecast(city: str, days: int) -> str:  # pyright: ignore[reportUnusedFunction]
        """Weather forecast for a city."""
        return forecast_text(city, days)

    async def drain(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    async def once() -> str:
        result = await agent.run("Weather in Lisbon?", event_stream_handler=drain)
        return str(result.output)

    return once


def openai_agents_case() -> Callable[[], Awaitable[str]]:
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        RunConfig,
        Runner,
        function_tool,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)

    @function_tool
    def forecast(city: str, days: int) -> str:
        """Weather forecast for a city."""
        return forecast_text(city, days)

    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=async_client())
    agent = Agent(name="bench", instructions="Use the tool.", tools=[forecast], model=model)
    config = RunConfig(tracing_disabled=True)

    async def once() -> str:
        result = Runner.run_streamed(agent, "Weather in Lisbon?", run_config=config)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return once


CASES: dict[str, Callable[[], Callable[[], Awaitable[str]]]] = {
    "bare SDK": bare_sdk,
    "weakprompt, default store": lambda: weakprompt_case("default"),
    "weakprompt, SQLite file": lambda: weakprompt_case("file"),
    "pydantic-ai": pydantic_ai_case,
    "openai-agents": openai_agents_case,
}
PEERS = ("pydantic-ai", "openai-agents")


def _worker(name: str) -> None:
    """``--worker NAME``: one case in this process; ``check`` and ``time N`` requests, one per line."""
    loop = asyncio.new_event_loop()
    try:
        once = CASES[name]()
    except Exception as exc:  # a peer that is not installed is reported, not fatal
        print(f"failed: {type(exc).__name__}: {exc}".replace("\n", " "), flush=True)
        return
    for line in sys.stdin:
        command, *rest = line.split()
        try:
            if command == "check":
                start = time.perf_counter()
                text = loop.run_until_complete(once())
                elapsed = time.perf_counter() - start
                answer = f"ok {elapsed!r}" if text == ANSWER else f"failed: answered {text!r}"
            else:
                number = int(rest[0])

                async def many(number: int = number) -> None:
                    for _ in range(number):
                        await once()

                gc.disable()
                start = time.perf_counter()
                loop.run_until_complete(many())
                answer = repr((time.perf_counter() - start) / number)
                gc.enable()
        except Exception as exc:
            answer = f"failed: {type(exc).__name__}: {exc}".replace("\n", " ")
        print(answer, flush=True)
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def main(quick: bool = False) -> dict[str, object]:
    repeats = 5 if quick else 15
    workers = {name: LineWorker([str(Path(__file__).resolve()), "--worker", name]) for name in CASES}
    status: dict[str, str] = {}
    try:
        samples = interleaved_workers(workers, "", repeats, status, sample_seconds=0.2 if quick else 0.5)
    finally:
        for worker in workers.values():
            worker.close()
    medians = {name: statistics.median(values) for name, values in samples.items() if values}
    bare = medians.get("bare SDK")
    rows: list[dict[str, object]] = []
    bare_rounds = samples.get("bare SDK", [])
    for name, values in samples.items():
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        # Each round's sample over the bare SDK's of the same round: the load both met cancels out.
        paired = sorted(mine / theirs for mine, theirs in zip(values, bare_rounds, strict=False))
        rows.append(
            {
                "case": name,
                "round_trip_ms": round(medians[name] * 1e3, 3),
                "p25_ms": round(quartiles[0] * 1e3, 3),
                "p75_ms": round(quartiles[2] * 1e3, 3),
                "x_bare_sdk": round(medians[name] / bare, 3) if bare else None,
                "x_bare_sdk_per_round": round(statistics.median(paired), 3) if paired else None,
                "x_range": f"{paired[0]:.2f}..{paired[-1]:.2f}" if paired else None,
            }
        )
    goals: list[dict[str, object]] = []
    for case, most in GOALS.items():
        mine = medians.get(case)
        met = bool(bare and mine and mine / bare <= most)
        value = f"{mine / bare:.2f}x" if bare and mine else "not measured"
        goals.append({"goal": f"{case}: at most {most}x the bare SDK", "met": met, "value": value})
        for peer in PEERS:
            theirs = medians.get(peer)
            goals.append(
                {
                    "goal": f"{case}: below {peer}",
                    "met": bool(mine and theirs and mine < theirs),
                    "value": f"{mine * 1e3:.2f} vs {theirs * 1e3:.2f} ms"
                    if mine and theirs
                    else "not measured",
                }
            )
    return {
        "title": "Cost above the official openai SDK: one streamed tool round trip",
        "rows": rows,
        "peers": status,
        "goals": goals,
        "notes": [
            "every case sends the same two streamed requests through a real openai.AsyncOpenAI over an "
            "httpx2.MockTransport; the ratio is the case's round trip over the bare SDK's, measured in turn "
            "in one run, each case in a process of its own"
        ],
        "charts": [
            {
                "kind": "bar",
                "title": "One streamed tool round trip, as a multiple of the bare SDK",
                "ylabel": "x bare SDK",
                "bars": {str(row["case"]): row["x_bare_sdk"] for row in rows},
                "file": "sdk_overhead.png",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args.worker)
        sys.exit(0)
    from harness import run_cli

    run_cli(main, name="sdk_overhead", description=None)
