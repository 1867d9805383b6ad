"""LocalAdapter.stream driven by a stand-in for ``llama_cpp.Llama`` that streams scripted chunks.

The chunk shapes are llama-cpp-python's own (a role chunk, one chunk per
token, the tool-call header repeated on every piece, a final chunk with the
finish reason). The real model is streamed in test_adapters_local_stream_model.py.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from adapters_support import FIRST_PROMPT, TOOLS, USER, make_request
from stream_support import collect, collect_until_error, final_turn, of_type, openai_chunk
from weakprompt.adapters.local import LocalAdapter
from weakprompt.errors import ContextLengthError, ProviderError
from weakprompt.messages import Message, Usage
from weakprompt.model import (
    ForceTool,
    ModelEvent,
    ProviderAdapter,
    TextDelta,
    ToolCallDelta,
    ToolCallStarted,
    UsageReported,
    complete_async,
)


class StreamingLlama:
    """Scripted replies: a dict answers ``stream=False``, a list of chunks (or errors) ``stream=True``.

    With ``prompt_tokens`` it keeps ``n_tokens`` as llama.cpp does: the prompt
    once generation starts, one more per streamed piece (the last one not fed
    back when ``length_cut``). It records whether the model lock is held while
    it generates and how many generations ran at once.
    """

    def __init__(self, *replies: Any, prompt_tokens: int | None = None, length_cut: bool = False) -> None:
        self.replies = list(replies)
        self.calls: list[dict[str, Any]] = []
        self.metadata = {"tokenizer.chat_template": "{{ messages }}{{ tools }}"}
        self.prompt_tokens = prompt_tokens
        self.length_cut = length_cut
        self.lock: Any = None
        self.lock_held: list[bool] = []
        self.active = 0
        self.most_active = 0
        self.pulled = 0
        self.closed = False
        self.gate: threading.Event | None = None
        self._count = threading.Lock()
        if prompt_tokens is not None:
            self.n_tokens = 0

    def create_chat_completion(self, **kwargs: Any) -> Any:
        self.calls.append(copy.deepcopy(kwargs))
        reply = self._take(stream=bool(kwargs["stream"]))
        if isinstance(reply, Exception):
            raise reply
        if kwargs["stream"] and isinstance(reply, list):
            return self._generate(reply)
        return copy.deepcopy(reply)

    def _take(self, *, stream: bool) -> Any:
        """The next reply of the kind asked for (an error answers either), else the next one.

        Calls made at the same time from several threads reach the fake in
        any order: each still gets a reply of its own kind.
        """
        for position, reply in enumerate(self.replies):
            if isinstance(reply, Exception) or isinstance(reply, list) == stream:
                return self.replies.pop(position)
        return self.replies.pop(0)

    def _generate(self, chunks: list[Any]) -> Iterator[Any]:
        with self._count:
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            if self.prompt_tokens is not None:
                self.n_tokens = self.prompt_tokens
            pieces = sum(1 for c in chunks if _is_piece(c))
            for position, chunk in enumerate(chunks):
                if self.gate is not None and position == 2:
                    self.gate.wait(timeout=30)
                if isinstance(chunk, Exception):
                    raise chunk
                self.lock_held.append(self.lock is not None and self.lock.locked())
                self.pulled += 1
                yield copy.deepcopy(chunk)
                if self.prompt_tokens is not None and _is_piece(chunk):
                    pieces -= 1
                    if pieces or not self.length_cut:
                        self.n_tokens += 1
        finally:
            self.closed = True
            with self._count:
                self.active -= 1

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return [len(word) for word in text.split()]

    def n_ctx(self) -> int:
        return 512


def _is_piece(chunk: Any) -> bool:
    if not isinstance(chunk, dict) or not chunk["choices"]:
        return False
    delta = chunk["choices"][0]["delta"]
    calls = delta.get("tool_calls") or []
    return isinstance(delta.get("content"), str) or any(c["function"].get("arguments") for c in calls)


def text_chunks(*pieces: str, finish: str = "stop") -> list[dict[str, Any]]:
    return [
        openai_chunk({"role": "assistant"}),
        *(openai_chunk({"content": piece}) for piece in pieces),
        openai_chunk({}, finish),
    ]


def tool_chunks(name: str, *pieces: str) -> list[dict[str, Any]]:
    """As llama-cpp-python streams a grammar-forced call: the header on every piece, then an empty one."""
    header = {"index": 0, "id": "call__0_random_cmpl", "type": "function"}
    return [
        openai_chunk({"role": "assistant", "content": None, "tool_calls": None}),
        *(
            openai_chunk({"tool_calls": [{**header, "function": {"name": name, "arguments": piece}}]})
            for piece in (*pieces, "")
        ),
        openai_chunk({}, "tool_calls"),
    ]


def whole_reply(
    *, text: str | None = None, arguments: str | None = None, name: str = "", usage: Usage
) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if arguments is not None:
        message["tool_calls"] = [
            {"id": "call__0_other", "type": "function", "function": {"name": name, "arguments": arguments}}
        ]
    finish = "tool_calls" if arguments is not None else "stop"
    return {
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens},
    }


def adapter_for(fake: StreamingLlama) -> LocalAdapter:
    adapter = LocalAdapter(llama=fake, max_tokens=64)
    fake.lock = adapter.loaded_model._lock
    return adapter


def test_text_streams_token_by_token_and_equals_the_whole_reply() -> None:
    usage = Usage(input_tokens=30, output_tokens=3, model_calls=1)
    fake = StreamingLlama(
        whole_reply(text="It is mild.", usage=usage),
        text_chunks("It", " is", " mild."),
        prompt_tokens=30,
    )
    adapter = adapter_for(fake)
    request = make_request(FIRST_PROMPT)

    whole = adapter.complete(request)
    events = collect(adapter, request)

    assert of_type(events, TextDelta) == [TextDelta("It"), TextDelta(" is"), TextDelta(" mild.")]
    assert final_turn(events) == whole
    assert of_type(events, UsageReported) == [UsageReported(usage)]
    sent = [{k: v for k, v in call.items() if k != "stream"} for call in fake.calls]
    assert sent[0] == sent[1] and [c["stream"] for c in fake.calls] == [False, True]
    assert all(fake.lock_held)  # the model's lock is held for the whole generation
    assert isinstance(adapter, ProviderAdapter)


def test_a_length_cut_still_counts_every_token() -> None:
    fake = StreamingLlama(text_chunks("a", "b", "c", "d", finish="length"), prompt_tokens=12, length_cut=True)

    turn = final_turn(collect(adapter_for(fake), make_request([USER])))

    assert (turn.text, turn.finish_reason) == ("abcd", "length")
    assert turn.usage == Usage(input_tokens=12, output_tokens=4, model_calls=1)


def test_forced_tool_call_streams_with_the_same_grammar_and_id_as_complete() -> None:
    usage = Usage(input_tokens=40, output_tokens=3, model_calls=1)  # one token per piece
    arguments = '{"city": "Paris"}'
    fake = StreamingLlama(
        whole_reply(arguments=arguments, name="get_weather", usage=usage),
        tool_chunks("get_weather", '{"city"', ': "Par', 'is"}'),
        prompt_tokens=40,
    )
    adapter = adapter_for(fake)
    request = make_request([USER], tools=TOOLS, tool_choice=ForceTool("get_weather"))

    whole = adapter.complete(request)
    events = collect(adapter, request)

    (started,) = of_type(events, ToolCallStarted)
    assert started.call_id == whole.tool_calls[0].id and started.call_id.startswith("call_")
    assert "".join(d.arguments_delta for d in of_type(events, ToolCallDelta)) == arguments
    assert final_turn(events) == whole
    streamed_params = fake.calls[1]
    assert streamed_params["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert streamed_params["tools"] == fake.calls[0]["tools"]  # the grammar comes from the same schema


def test_required_with_several_tools_chooses_first_then_streams_the_call() -> None:
    choice = whole_reply(text='"search_notes"', usage=Usage(input_tokens=50, output_tokens=4, model_calls=1))
    fake = StreamingLlama(choice, tool_chunks("search_notes", '{"query": "x"}'), prompt_tokens=60)

    turn = final_turn(collect(adapter_for(fake), make_request([USER], tools=TOOLS, tool_choice="required")))

    assert [call.name for call in turn.tool_calls] == ["search_notes"]
    assert turn.usage == Usage(input_tokens=110, output_tokens=5, model_calls=2)
    assert [c["stream"] for c in fake.calls] == [False, True]


def test_without_a_context_count_the_chunks_usage_or_one_call_is_used() -> None:
    with_usage = text_chunks("hi")
    with_usage[-1]["usage"] = {"prompt_tokens": 7, "completion_tokens": 1}
    fake = StreamingLlama(with_usage, text_chunks("hi"))
    adapter = adapter_for(fake)

    assert final_turn(collect(adapter, make_request([USER]))).usage == Usage(7, 1, 0, 1)
    assert final_turn(collect(adapter, make_request([USER]))).usage == Usage(model_calls=1)


def test_prompt_longer_than_the_window_is_refused_before_generating() -> None:
    fake = StreamingLlama()
    huge = Message(role="user", content="word " * 600)

    _, raised = collect_until_error(adapter_for(fake), make_request([huge]))

    assert type(raised) is ContextLengthError and "messages alone are 600 tokens" in str(raised)
    assert fake.calls == []


@pytest.mark.parametrize(
    ("content", "kind"),
    [("short question", ProviderError), ("word " * 505, ContextLengthError)],
)
def test_a_generation_failure_mid_stream_is_typed(content: str, kind: type[Exception]) -> None:
    fake = StreamingLlama(
        [
            openai_chunk({"role": "assistant"}),
            openai_chunk({"content": "Half"}),
            RuntimeError("decode failed"),
        ]
    )

    seen, raised = collect_until_error(
        adapter_for(fake), make_request([Message(role="user", content=content)])
    )

    assert of_type(seen, TextDelta) == [TextDelta("Half")]
    assert type(raised) is kind and "decode failed" in str(raised)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ({"choices": []}, "returned dict, expected an iterator of chunks"),
        (["not a chunk"], "a streamed chunk is str"),
    ],
)
def test_replies_that_are_not_chunk_streams_are_provider_errors(reply: Any, problem: str) -> None:
    class Whole(StreamingLlama):
        def create_chat_completion(self, **kwargs: Any) -> Any:
            return reply if isinstance(reply, dict) else iter(reply)

    _, raised = collect_until_error(adapter_for(Whole()), make_request([USER]))

    assert type(raised) is ProviderError and problem in str(raised)


def test_a_plain_iterator_of_chunks_is_enough() -> None:
    class Plain(StreamingLlama):
        def create_chat_completion(self, **kwargs: Any) -> Any:
            return iter(text_chunks("plain"))  # no close() to call

    assert final_turn(collect(adapter_for(Plain()), make_request([USER]))).text == "plain"


def test_a_reader_that_leaves_stops_the_generation_and_frees_the_model() -> None:
    fake = StreamingLlama(text_chunks(*["tok"] * 40), whole_reply(text="next", usage=Usage(model_calls=1)))
    fake.gate = gate = threading.Event()
    adapter = adapter_for(fake)

    async def read_one_then_leave() -> ModelEvent:
        events = adapter.stream(make_request([USER]))
        first = await anext(events)
        await events.aclose()
        gate.set()  # let the generator go on: it must now notice nobody reads
        return first

    first = asyncio.run(read_one_then_leave())
    assert adapter.complete(make_request([USER])).text == "next"  # the model's lock is free again

    assert first == TextDelta("tok")
    assert fake.closed
    assert fake.pulled <= 3  # the chunk it had, at most one more after the reader left: then it stopped


def test_concurrent_sessions_on_one_model_take_turns() -> None:
    fake = StreamingLlama(
        text_chunks("one", " two"),
        text_chunks("three", " four"),
        whole_reply(text="five", usage=Usage(model_calls=1)),
    )
    adapter = adapter_for(fake)
    other = LocalAdapter(llama=fake)  # a second adapter on the same llama object shares its lock
    assert other.loaded_model is adapter.loaded_model
    request = make_request([USER])

    async def both() -> list[str]:
        sync_answer = asyncio.to_thread(other.complete, request)
        first, second, third = await asyncio.gather(
            complete_async(adapter, request), complete_async(adapter, request), sync_answer
        )
        return sorted([first.text, second.text, third.text])

    assert asyncio.run(both()) == ["five", "one two", "three four"]
    assert fake.most_active == 1
    assert all(fake.lock_held)
