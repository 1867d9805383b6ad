"""The concurrency benchmark's pieces run at tiny sizes and do the work they claim (no timings asserted)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from weakprompt.store import Store

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location("concurrency_bench", BENCHMARKS / "concurrency_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
        sys.path.remove(str(BENCHMARKS))


def test_weakprompt_sessions_run_every_round_trip_with_either_store(
    bench: ModuleType, tmp_path: Path
) -> None:
    timing = bench.time_sessions("default", bench.weakprompt_sessions(None), 3, 0.001)
    assert timing.wall_s > 0 and timing.cpu_s >= 0
    store = Store.open(tmp_path / "s.db")
    try:
        bench.time_sessions("file", bench.weakprompt_sessions(store), 3, 0.001)
        assert len(store.session_ids()) == 3  # every session's transcript is in the shared file
    finally:
        store.close()


def test_time_sessions_refuses_a_case_that_skips_work(bench: ModuleType) -> None:
    async def lazy(n: int, latency: float) -> int:
        return 0

    with pytest.raises(RuntimeError, match="executed 0 tool calls instead of 15"):
        bench.time_sessions("lazy", lazy, 3, 0.0)


@pytest.mark.parametrize(("factory", "module"), [("pydantic_ai", "pydantic_ai"), ("openai_agents", "agents")])
def test_peer_sessions_and_slow_tools_run(bench: ModuleType, factory: str, module: str) -> None:
    pytest.importorskip(module)
    bench.time_sessions(factory, getattr(bench, f"{factory}_sessions")(), 3, 0.001)
    assert bench.time_once(factory, getattr(bench, f"{factory}_slow_tools")(0.001), 4) > 0


def test_weakprompt_slow_tools_all_succeed(bench: ModuleType) -> None:
    assert bench.time_once("weakprompt", bench.weakprompt_slow_tools(0.001), 4) > 0


def test_profile_summarises_own_time_by_area(bench: ModuleType) -> None:
    profile = bench.profile_sessions(bench.weakprompt_sessions(None), 2, 0.0, top=5)
    assert len(profile["top"]) == 5
    assert any(area.startswith("weakprompt.") for area in profile["areas"])


def test_streaming_latencies_pair_every_chunk_with_its_event(bench: ModuleType) -> None:
    streamed = asyncio.run(bench.stream_latencies(5, 0.0))
    floor = asyncio.run(bench.floor_latencies(5, 0.0))
    assert len(streamed) == len(floor) == 5
    assert all(value >= 0 for value in streamed + floor)
    with pytest.raises(RuntimeError, match="2 chunks were yielded but 1 text events arrived"):
        bench._latencies_us([0.0, 1.0], [2.0])


def test_k_round_trips_sync_and_async_both_run_k_tools(bench: ModuleType) -> None:
    store = Store.open("sqlite://")
    try:
        runners = bench.k_round_trips(2, store)
        assert bench.EVALUATE_K in runners and len(runners) == 3
        per_trip = bench.time_k(runners, 2, 1)
        assert set(per_trip) == set(runners)
        assert all(median >= best > 0 for median, best in per_trip.values())
        assert bench.time_k({"wrong": lambda: 1}, 2, 1) == {}
    finally:
        store.close()


def test_area_and_short_names(bench: ModuleType) -> None:
    assert bench._area("/x/src/weakprompt/runtime/loop.py", "run") == "weakprompt.runtime"
    assert bench._area("~", "<method 'execute' of 'sqlite3.Cursor' objects>") == "sqlite3 (C)"
    assert bench._area("/usr/lib/python3.11/asyncio/events.py", "_run") == "asyncio"
    assert bench._short("/a/site-packages/sqlalchemy/x.py") == "sqlalchemy/x.py"
    assert bench.percentile([3.0, 1.0, 2.0], 0.99) == 3.0


def test_every_framework_runs_with_a_sync_and_an_async_tool(bench: ModuleType, tmp_path: Path) -> None:
    store = Store.open(tmp_path / "styles.db")
    try:
        cases = bench._session_cases(store)
        assert {framework for framework, _ in cases.values()} == {
            "weakprompt (default store)",
            "weakprompt (SQLite file)",
            "pydantic-ai",
            "openai-agents",
        }
        # the peers are the `bench` extra: run those that are installed (a plain `make test` has none)
        installed = {
            "pydantic-ai": importlib.util.find_spec("pydantic_ai") is not None,
            "openai-agents": importlib.util.find_spec("agents") is not None,
        }
        for name, (framework, factory) in cases.items():
            if installed.get(framework, True):
                bench.time_sessions(name, factory(), 2, 0.0)  # raises unless every tool call ran
    finally:
        store.close()


def test_a_frameworks_sessions_worker_builds_its_cases_and_times_them(bench: ModuleType) -> None:
    worker = bench._SessionsWorker("weakprompt")
    try:
        ours = [name for name in bench._session_cases(None) if name.startswith("weakprompt")]
        assert worker.cases == dict.fromkeys(ours, "measured")  # and no peer's case
        # The worker checks that every session made all its tool calls before it answers.
        timing = worker.time("weakprompt (default store, async tool)", 2)
        assert timing.wall_s > 0 and timing.cpu_s > 0
        with pytest.raises(RuntimeError, match="KeyError"):
            worker.time("no such case", 2)
    finally:
        worker.close()
    assert worker.process.returncode == 0
