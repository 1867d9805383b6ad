"""OpenAI prompt caching: ``prompt_cache_key`` per template version and the retention setting,
read from bodies recorded through the official SDK (Chat Completions and Responses)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter

from adapters_support import FakeServer
from cache_support import Status, Who, cache_template, openai_adapter, script_openai
from stream_support import StreamServer
from weakprompt.adapters import OpenAIResponsesAdapter
from weakprompt.agent import Agent
from weakprompt.errors import ConfigurationError
from weakprompt.messages import Message
from weakprompt.model import CacheHints, CompiledContext, ModelRequest
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.session import Session
from weakprompt.store import Store

CHAT = TypeAdapter(CompletionCreateParamsStreaming)
RESPONSES = TypeAdapter(ResponseCreateParamsNonStreaming)


def run(tmp_path: Path, sessions: list[tuple[str, int, str]], **options: Any) -> list[dict[str, Any]]:
    server = script_openai(StreamServer(), len(sessions))
    with Store.open(tmp_path / "cache.db") as store:
        agent = Agent(openai_adapter(server, **options), template=cache_template(), store=store)
        for session_id, step, name in sessions:
            agent.run_sync("hi", session=Session(session_id=session_id), params=[Status(step), Who(name)])
    return server.bodies()


def test_prompt_cache_key_names_the_template_version_across_turns_and_sessions(tmp_path: Path) -> None:
    bodies = run(tmp_path, [("a", 1, "Ada"), ("a", 2, "Ada"), ("b", 9, "Grace")])
    keys = {body["prompt_cache_key"] for body in bodies}
    assert len(keys) == 1
    (key,) = keys
    assert key.startswith("tests/cache/loop@") and len(key) <= 64
    assert key == Prompt(cache_template()).bind(Status(0), Who("x")).render().cache_key
    for body in bodies:
        CHAT.validate_python(body)
        assert "prompt_cache_retention" not in body


def test_retention_is_sent_and_the_key_can_be_left_out(tmp_path: Path) -> None:
    bodies = run(tmp_path, [("a", 1, "Ada")], prompt_cache_key=False, prompt_cache_retention="24h")
    assert all(body["prompt_cache_retention"] == "24h" and "prompt_cache_key" not in body for body in bodies)


def test_a_long_template_name_still_gives_a_key_of_at_most_64_characters() -> None:
    template = PromptTemplate(
        ns="a-very-long-namespace/for-a-team",
        key="and-an-even-longer-prompt-key-name",
        sections=[MarkdownSection(title="T", key="t", template="x")],
    )
    key = Prompt(template).render().cache_key
    assert len(key) == 64 and key.startswith("a-very-long-namespace/")


def test_an_unknown_retention_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"prompt_cache_retention must be one of in_memory, 24h"):
        OpenAIResponsesAdapter("gpt-test", api_key="sk", prompt_cache_retention="forever")  # type: ignore[arg-type]


def _response() -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1780000000,
        "model": "gpt-test",
        "status": "completed",
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "store": False,
    }


def test_responses_requests_carry_the_key_and_the_retention() -> None:
    server = FakeServer().reply(200, _response()).reply(200, _response())
    client = openai.OpenAI(api_key="sk-test", base_url="https://api.test/v1", http_client=server.client())
    adapter = OpenAIResponsesAdapter("gpt-test", client=client, prompt_cache_retention="in_memory")
    context = CompiledContext(messages=(Message("system", "s"), Message("user", "hi")))
    adapter.complete(ModelRequest(context=context, cache=CacheHints("ns/key@0123456789abcdef", 1)))
    adapter.complete(ModelRequest(context=context))
    keyed, plain = server.bodies()
    RESPONSES.validate_python(keyed)
    assert keyed["prompt_cache_key"] == "ns/key@0123456789abcdef"
    assert keyed["prompt_cache_retention"] == plain["prompt_cache_retention"] == "in_memory"
    assert "prompt_cache_key" not in plain
