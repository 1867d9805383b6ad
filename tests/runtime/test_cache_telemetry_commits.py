"""Cache reads and writes a provider reports reach the assistant commit, the stream and the OTel span.

The Anthropic SDK answers over ``httpx2.MockTransport`` with the Messages API's own stream
(``cache_read_input_tokens`` / ``cache_creation_input_tokens`` in ``message_start``); the loop
writes a real SQLite file, read back after the store is closed.
"""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from stream_support import StreamServer, anthropic_stream_events, sse_events
from weakprompt import Agent, Store
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.testing import text_turn
from weakprompt.messages import Usage
from weakprompt.transcript import Transcript

CACHED = Usage(
    input_tokens=1200, output_tokens=7, cached_input_tokens=1000, cache_write_tokens=150, model_calls=1
)


def _adapter(server: StreamServer) -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url="http://fake.test", http_client=server.async_client(), max_retries=0
    )
    return AnthropicAdapter("claude-test", async_client=client)


def _reply_usage(path: Path, session: str) -> dict[str, object]:
    with Store.open(path) as store:
        replies = [c for c in Transcript(store, session).log() if c.role == "assistant"]
    assert len(replies) == 1
    usage = replies[0].content.metadata["usage"]
    assert isinstance(usage, dict)
    return dict(usage)


@pytest.mark.parametrize("streamed", [False, True], ids=["no-listener", "listened"])
def test_anthropic_cache_reads_and_writes_are_recorded_on_the_assistant_commit(
    tmp_path: Path, streamed: bool
) -> None:
    turn = text_turn("Hello.", usage=CACHED)
    server = StreamServer().stream(sse_events(*anthropic_stream_events(turn)))
    path = tmp_path / "runs.db"
    seen: list[object] = []
    with Store.open(path) as store:
        agent = Agent(_adapter(server), instructions="Greet.", store=store)
        if streamed:
            response = agent.run_sync("hi", session="s", on_event=seen.append)
        else:
            response = agent.run_sync("hi", session="s")
    assert response.usage.cached_input_tokens == 1000
    assert response.usage.cache_write_tokens == 150
    if streamed:  # the stream's usage report carries both counts too
        from weakprompt.events import UsageReported

        reports = [e for e in seen if isinstance(e, UsageReported)]
        assert reports and reports[-1].usage.cache_write_tokens == 150

    usage = _reply_usage(path, "s")
    assert usage["cached_input_tokens"] == 1000
    assert usage["cache_write_tokens"] == 150
    assert usage["input_tokens"] == 1200  # reads and writes are a part of the input


def test_a_reply_without_cache_counts_records_no_cache_write_key(tmp_path: Path) -> None:
    turn = text_turn("Hi.", usage=Usage(10, 2, model_calls=1))
    server = StreamServer().stream(sse_events(*anthropic_stream_events(turn)))
    path = tmp_path / "runs.db"
    with Store.open(path) as store:
        Agent(_adapter(server), instructions="Greet.", store=store).run_sync("hi", session="s")
    usage = _reply_usage(path, "s")
    assert usage["cached_input_tokens"] == 0
    assert "cache_write_tokens" not in usage
