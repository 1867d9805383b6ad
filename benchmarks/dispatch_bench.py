"""Cost of one tool call through ToolDispatcher.execute(), next to a floor and a peer.

Cases, measured in one process and one run:
- floor: ``json.loads`` + build the params dataclass + call the handler;
- weakprompt: ``ToolDispatcher.execute()`` for the same 3-field tool with a
  no-op handler (lookup, decode, validate, context, session snapshot, handler,
  render, one ``ToolInvoked`` through the session's dispatcher);
- openai-agents: ``FunctionTool.on_invoke_tool`` for the same function
  (tracing disabled), awaited inside one running event loop;
- rollback: a failing call (handler raises) with 1 KB, 100 KB and 10 MB of
  session state, to show snapshot + restore cost does not grow with state.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Stats, run_cli, stats_of

from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher
from weakprompt.session import Session
from weakprompt.tools import NoParams, Tool, ToolContext, ToolResult

ARGUMENTS = '{"city": "Lisbon", "days": 3, "units": "metric"}'


@dataclass
class Forecast:
    city: str
    days: int
    units: str


def noop(params: Forecast, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message="ok", value=None)


def floor_call() -> object:
    data = json.loads(ARGUMENTS)
    params = Forecast(**data)
    return noop(params, context=None)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Blob:
    payload: str


@dataclass(frozen=True)
class Marker:
    step: int


def explode(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
    # Change a small slice: the handler's own write should cost the same at
    # every state size, so what grows (or not) is snapshot + restore.
    context.session[Marker].append(Marker(1))
    raise ValueError("rolled back")


def session_with_state(total_bytes: int) -> Session:
    """A session whose STATE holds ``total_bytes`` of payload in 1 KB values."""
    session = Session()
    chunk = "x" * 1024
    session[Blob].seed(Blob(chunk) for _ in range(max(1, total_bytes // 1024)))
    return session


@dataclass(frozen=True)
class Case:
    """One thing to time: a plain call, or a coroutine factory when ``is_async``."""

    fn: Callable[[], object]
    number: int
    is_async: bool = False


def measure_interleaved(cases: dict[str, Case], *, repeats: int) -> dict[str, Stats]:
    """Time the cases in alternating rounds, so changes in machine load hit them all alike.

    Everything runs inside one event loop; coroutine cases are awaited there.
    """

    async def one_round(case: Case) -> float:
        start = time.perf_counter()
        if case.is_async:
            for _ in range(case.number):
                await case.fn()  # type: ignore[misc]
        else:
            for _ in range(case.number):
                case.fn()
        return (time.perf_counter() - start) / case.number * 1e6

    async def run() -> dict[str, list[float]]:
        for case in cases.values():  # warm caches and lazy imports
            await one_round(Case(case.fn, 1, case.is_async))
        samples: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(repeats):
            for name, case in cases.items():
                samples[name].append(await one_round(case))
        return samples

    enabled = gc.isenabled()
    gc.disable()
    try:
        samples = asyncio.run(run())
    finally:
        if enabled:
            gc.enable()
    return {name: stats_of(values) for name, values in samples.items()}


def openai_agents_call() -> tuple[Callable[[], Awaitable[object]] | None, str]:
    """A zero-argument coroutine factory invoking the peer's tool, and its version (or why missing)."""
    try:
        import agents
        from agents import function_tool
        from agents.tool_context import ToolContext as AgentsToolContext
    except Exception as exc:  # missing or broken install: report, do not crash
        return None, f"missing ({type(exc).__name__}: {exc})"
    agents.set_tracing_disabled(True)

    def forecast(city: str, days: int, units: str) -> str:
        """Weather forecast."""
        return "ok"

    peer_tool = function_tool(forecast)
    context: Any = AgentsToolContext(
        context=None, tool_name="forecast", tool_call_id="call-1", tool_arguments=ARGUMENTS
    )

    def call() -> Awaitable[object]:
        return peer_tool.on_invoke_tool(context, ARGUMENTS)

    from importlib import metadata

    return call, metadata.version("openai-agents")


def main(quick: bool) -> dict[str, Any]:
    number = 2_000 if quick else 20_000
    repeats = 7 if quick else 11

    session = Session()
    dispatcher = ToolDispatcher(
        [Tool(name="forecast", description="Weather forecast.", handler=noop)], session=session
    )
    call = ToolCall(id="call-1", name="forecast", arguments=ARGUMENTS)
    assert dispatcher.execute(call).result.success

    peer_call, peer_version = openai_agents_call()
    cases = {
        "floor": Case(floor_call, number),
        "ours": Case(lambda: dispatcher.execute(call), number),
    }
    if peer_call is not None:
        cases["peer"] = Case(peer_call, max(200, number // 10), is_async=True)
    timed = measure_interleaved(cases, repeats=repeats)
    floor, ours = timed["floor"], timed["ours"]
    rows = [
        floor.as_row("floor: json.loads + dataclass + handler"),
        ours.as_row("weakprompt execute()", x_floor=round(ours.ratio_to(floor), 2)),
    ]
    peers: dict[str, str] = {"openai-agents": peer_version}
    goals: list[dict[str, Any]] = [
        {
            "goal": "execute() <= 10x floor",
            "met": ours.ratio_to(floor) <= 10,
            "value": f"{ours.ratio_to(floor):.1f}x",
        },
    ]
    bars = {"floor": floor.median_us, "weakprompt": ours.median_us}
    if "peer" in timed:
        peer = timed["peer"]
        rows.append(peer.as_row("openai-agents on_invoke_tool", x_floor=round(peer.ratio_to(floor), 2)))
        speedup = peer.median_us / ours.median_us
        goals.append(
            {"goal": ">= 5x faster than openai-agents", "met": speedup >= 5, "value": f"{speedup:.1f}x"}
        )
        bars["openai-agents"] = peer.median_us
    else:
        goals.append({"goal": ">= 5x faster than openai-agents", "met": False, "value": peer_version})

    # Rollback: a failing call with growing session state.
    sizes = {"1 KB": 1024, "100 KB": 100 * 1024, "10 MB": 10 * 1024 * 1024}
    dispatch_logger = logging.getLogger("weakprompt.runtime.dispatcher")
    previous_level = dispatch_logger.level
    dispatch_logger.setLevel(logging.CRITICAL)
    failing_cases: dict[str, Callable[[], object]] = {}
    for label, size in sizes.items():
        state_session = session_with_state(size)
        failing = ToolDispatcher(
            [Tool(name="explode", description="Fails.", handler=explode)], session=state_session
        )
        failing_call = ToolCall(id="call-1", name="explode", arguments="{}")
        before = state_session[Blob].all()
        assert not failing.execute(failing_call).result.success
        assert state_session[Blob].all() is before  # restored exactly, nothing copied
        assert state_session[Marker].all() == ()
        failing_cases[label] = lambda f=failing, c=failing_call: f.execute(c)
    try:
        rollback = measure_interleaved(
            {label: Case(fn, number // 4) for label, fn in failing_cases.items()}, repeats=repeats
        )
    finally:
        dispatch_logger.setLevel(previous_level)
    for label, stats in rollback.items():
        rows.append(stats.as_row(f"failing execute() with {label} state (snapshot + rollback)"))
    flatness = rollback["10 MB"].ratio_to(rollback["1 KB"])
    goals.append(
        {
            "goal": "rollback flat in state size (10 MB / 1 KB <= 1.5)",
            "met": flatness <= 1.5,
            "value": f"{flatness:.2f}",
        }
    )

    return {
        "title": "Tool dispatch: execute() vs floor vs openai-agents",
        "rows": rows,
        "goals": goals,
        "peers": peers,
        "notes": [
            "The dispatcher logs each failing call (WARNING with traceback); that logger is silenced "
            "while the rollback cases run, so they measure snapshot, handler, restore and the event.",
        ],
        "charts": [
            {
                "kind": "bar",
                "title": "One tool call (us, lower is better)",
                "ylabel": "us per call",
                "bars": bars,
                "logy": True,
                "file": "dispatch.png",
            },
            {
                "kind": "line",
                "title": "Failing call vs session state size",
                "xlabel": "state bytes",
                "ylabel": "us per call",
                "logx": True,
                "series": {"execute() + rollback": [[sizes[k], v.median_us] for k, v in rollback.items()]},
                "file": "dispatch_rollback.png",
            },
        ],
    }


if __name__ == "__main__":
    run_cli(main, name="dispatch", description=__doc__)
