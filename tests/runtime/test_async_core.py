"""The async core: run() and evaluate() everywhere, async handlers, concurrency, refusals."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from async_support import Item, Markers, tools_prompt
from weakprompt import run
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.events import ToolInvoked
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher, evaluate
from weakprompt.session import Session
from weakprompt.tools import Tool, ToolContext, ToolResult, tool


@dataclass(frozen=True)
class Text:
    text: str


@tool
async def shout(params: Text, *, context: ToolContext) -> ToolResult[None]:
    """Upper-case the text after yielding to the loop."""
    await asyncio.sleep(0)
    context.session[Item].append(Item(params.text.upper()))
    return ToolResult.ok(None, message=params.text.upper())


@tool
async def plain_shout(text: str) -> ToolResult[None]:
    """Plain-parameter async tool."""
    await asyncio.sleep(0)
    return ToolResult.ok(None, message=text.upper())


def _calls_then(text: str, *calls: ToolCall) -> ScriptedAdapter:
    return ScriptedAdapter([tool_call_turn(*calls), text])


def test_evaluate_works_inside_a_running_loop() -> None:
    async def main() -> str:
        adapter = _calls_then("done", tool_call("shout", {"text": "hi"}, id="c1"))
        session = Session()
        response = evaluate(tools_prompt([shout]), adapter=adapter, session=session)
        assert session[Item].all() == (Item("HI"),)
        return response.text

    assert asyncio.run(main()) == "done"


def test_run_is_awaitable_and_async_handlers_are_first_class() -> None:
    adapter = _calls_then(
        "done", tool_call("shout", {"text": "a"}, id="c1"), tool_call("plain_shout", {"text": "b"}, id="c2")
    )
    response = asyncio.run(run(tools_prompt([shout, plain_shout]), adapter=adapter, session=Session()))
    assert [e.message for e in response.tool_executions] == ["A", "B"]


def test_dispatcher_execute_runs_an_async_handler_from_sync_code() -> None:
    session = Session()
    execution = ToolDispatcher([shout], session=session).execute(
        ToolCall(id="x", name="shout", arguments='{"text": "q"}')
    )
    assert execution.message == "Q" and session[Item].all() == (Item("Q"),)


def test_evaluate_works_in_a_plain_script(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(Path(__file__).resolve().parents[1] / "support")!r})
            from async_support import tools_prompt
            from weakprompt import evaluate
            from weakprompt.adapters.testing import ScriptedAdapter
            from weakprompt.session import Session
            print(evaluate(tools_prompt([]), adapter=ScriptedAdapter(["hello"]), session=Session()).text)
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "hello"


def test_a_sync_handler_does_not_block_the_event_loop() -> None:
    ticks: list[int] = []
    release = threading.Event()

    @tool
    def slow(text: str) -> ToolResult[None]:
        """Wait until the loop has ticked."""
        release.wait(timeout=30)
        return ToolResult.ok(None, message=text)

    async def ticker() -> None:
        for n in range(5):
            ticks.append(n)
            await asyncio.sleep(0)
        release.set()

    async def main() -> None:
        adapter = _calls_then("ok", tool_call("slow", {"text": "x"}, id="c"))
        tick = asyncio.ensure_future(ticker())
        response = await run(tools_prompt([slow]), adapter=adapter, session=Session())
        await tick
        assert response.tool_executions[0].success

    asyncio.run(main())
    # the handler only returned because the ticker ran to its end meanwhile
    assert ticks == [0, 1, 2, 3, 4]


def _sleepers(markers: Markers, names: list[str]) -> list[Tool[Text, None]]:
    made: list[Tool[Text, None]] = []
    for name in names:

        async def handler(params: Text, *, context: ToolContext, _name: str = name) -> ToolResult[None]:
            markers.mark("start", _name)
            await asyncio.sleep(0.5)
            markers.mark("end", _name)
            return ToolResult.ok(None, message=_name)

        made.append(Tool(name=name, description=f"sleeper {name}", handler=handler))
    return made


def test_four_sleeping_tools_overlap_and_results_come_back_in_call_order() -> None:
    markers = Markers()
    names = ["t1", "t2", "t3", "t4"]
    adapter = _calls_then("ok", *(tool_call(n, {"text": n}, id=f"id-{n}") for n in names))
    session = Session()
    response = evaluate(tools_prompt(_sleepers(markers, names)), adapter=adapter, session=session)
    # every call started before any finished: they ran at the same time
    assert [what for what, _ in markers.items[:4]] == ["start"] * 4
    assert [e.message for e in response.tool_executions] == names
    assert [e.call_id for e in session[ToolInvoked].all()] == [f"id-{n}" for n in names]
    results = adapter.requests[1].context.messages[-4:]
    assert [m.tool_call_id for m in results] == [f"id-{n}" for n in names]


def test_concurrency_off_runs_calls_one_after_another() -> None:
    markers = Markers()
    names = ["t1", "t2"]
    adapter = _calls_then("ok", *(tool_call(n, {"text": n}, id=n) for n in names))
    asyncio.run(
        run(
            tools_prompt(_sleepers(markers, names)),
            adapter=adapter,
            session=Session(),
            concurrent_tools=False,
        )
    )
    assert markers.items == [("start", "t1"), ("end", "t1"), ("start", "t2"), ("end", "t2")]


def test_a_sequential_tool_runs_alone_between_groups() -> None:
    markers = Markers()
    t1, t2, t3 = _sleepers(markers, ["t1", "t2", "t3"])
    import attrs

    t2 = attrs.evolve(t2, sequential=True)
    adapter = _calls_then("ok", *(tool_call(n, {"text": n}, id=n) for n in ["t1", "t2", "t3"]))
    evaluate(tools_prompt([t1, t2, t3]), adapter=adapter, session=Session())
    assert markers.items == [
        ("start", "t1"),
        ("end", "t1"),
        ("start", "t2"),
        ("end", "t2"),
        ("start", "t3"),
        ("end", "t3"),
    ]


def test_two_runs_on_one_session_at_once_are_refused() -> None:
    gate = asyncio.Event

    async def main() -> None:
        started = gate()
        release = gate()

        @tool
        async def hold(text: str) -> ToolResult[None]:
            """Hold the run open."""
            started.set()
            await release.wait()
            return ToolResult.ok(None, message=text)

        session = Session()
        first = asyncio.ensure_future(
            run(
                tools_prompt([hold]),
                adapter=_calls_then("ok", tool_call("hold", {"text": "x"})),
                session=session,
            )
        )
        await started.wait()
        with pytest.raises(ConfigurationError, match=session.session_id):
            await run(tools_prompt([hold]), adapter=ScriptedAdapter(["no"]), session=session)
        release.set()
        assert (await first).text == "ok"
        # once the first run is over, the session runs again
        assert (
            await run(tools_prompt([hold]), adapter=ScriptedAdapter(["again"]), session=session)
        ).text == "again"

    asyncio.run(main())


def test_many_runs_on_different_sessions_share_one_store(tmp_path: Path) -> None:
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    store = Store.open(f"sqlite:///{tmp_path / 'shared.db'}")

    async def main() -> list[str]:
        sessions = [Session() for _ in range(6)]
        runs = [
            run(
                tools_prompt([shout]),
                adapter=_calls_then(f"r{i}", tool_call("shout", {"text": str(i)})),
                session=s,
                store=store,
            )
            for i, s in enumerate(sessions)
        ]
        done = await asyncio.gather(*runs)
        for s in sessions:
            assert len(Transcript(store, s.session_id).log()) == 4  # system, call, result, answer
        return [r.text for r in done]

    assert asyncio.run(main()) == [f"r{i}" for i in range(6)]


def test_a_failed_call_in_a_concurrent_batch_leaves_no_trace() -> None:
    @tool
    async def breaks(text: str, *, context: ToolContext) -> ToolResult[None]:
        """Write, then fail."""
        context.session[Item].append(Item("broken " + text))
        await asyncio.sleep(0)
        raise RuntimeError("nope")

    adapter = _calls_then(
        "ok",
        tool_call("shout", {"text": "a"}, id="1"),
        tool_call("breaks", {"text": "b"}, id="2"),
        tool_call("shout", {"text": "c"}, id="3"),
    )
    session = Session()
    response = evaluate(tools_prompt([shout, breaks]), adapter=adapter, session=session)
    assert [e.success for e in response.tool_executions] == [True, False, True]
    assert session[Item].all() == (Item("A"), Item("C"))
