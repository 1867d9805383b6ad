"""The prefix-reuse benchmark's harness works: recording, the replayed body, the log reading.

No server here (the benchmark itself starts llama_cpp.server); this only
checks the pieces quickly, so a broken harness shows up in the test run.
"""

from __future__ import annotations

import importlib.util
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("prefix_reuse_bench", BENCHMARKS / "prefix_reuse_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_weakprompt_recording_keeps_each_request_a_prefix_of_the_next(bench: ModuleType) -> None:
    bodies = bench.record_weakprompt(3)
    assert len(bodies) == 6
    for before, after in itertools.pairwise(bodies):
        assert before["messages"][-1]["content"].startswith("<turn-context>")
        kept = before["messages"][:-1]
        assert after["messages"][: len(kept)] == kept
        assert after["tools"] == before["tools"]
    assert "Turn 3 of 20" in bodies[-1]["messages"][-1]["content"]


def test_the_replayed_body_asks_for_one_token_and_fills_missing_content(bench: ModuleType) -> None:
    body = {
        "model": "gpt",
        "stream": True,
        "stream_options": {"include_usage": True},
        "prompt_cache_key": "k",
        "messages": [{"role": "assistant", "content": None, "tool_calls": []}],
        "tools": [],
    }
    sent = bench.replay_body(body)
    assert sent["max_tokens"] == 1 and sent["stream"] is False and sent["model"] == bench.SERVER_ALIAS
    assert "stream_options" not in sent and "prompt_cache_key" not in sent
    assert sent["messages"][0]["content"] == ""


def test_tokens_evaluated_are_read_from_the_servers_log(bench: ModuleType) -> None:
    hit = ["noise", "Llama.generate: 372 prefix-match hit, remaining 10 prompt tokens to eval"]
    assert bench.evaluated_from_log(hit, 382) == 10
    assert bench.evaluated_from_log(["Llama.generate: full prompt already cached, skipping reset"], 9) == 0
    assert bench.evaluated_from_log(["no reuse logged"], 500) == 500
    row = bench.summary("x", [bench.Evaluated(100, 100), bench.Evaluated(110, 20), bench.Evaluated(120, 6)])
    assert row["evaluated_tokens"] == 126 and row["min_reuse_turns_2_on"] == 0.95
