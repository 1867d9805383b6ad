"""Replies that arrive broken, through the official SDKs over a transport fake.

A stream that stops before its end marker (a dropped connection), a data
line that is not JSON, chunks with no choice, and errors sent inside a
stream after the 200 status: each is a typed error, never a finished
answer; retried (or handed to the next adapter) while nothing of the reply
has reached the caller, and raised as it is once text has.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters_support import ANSWER_TURN, USER, anthropic_error_body, make_request
from stream_support import (
    StreamServer,
    anthropic_stream_events,
    collect,
    collect_until_error,
    final_turn,
    of_type,
    openai_chunk,
    openai_stream_chunks,
    openai_usage_chunk,
    pieces_of,
    sse_data,
    sse_events,
    turns,
)
from test_adapters_anthropic_stream import _anthropic_turns as anthropic_turns
from test_adapters_retries import FakeSleep, retrier
from weakprompt.adapters import FallbackAdapter, default_fall_back_on
from weakprompt.adapters.anthropic import AnthropicAdapter
from weakprompt.adapters.error_mapping import classified_status
from weakprompt.adapters.openai import OpenAIAdapter
from weakprompt.adapters.retries import NO_RETRIES, RetryPolicy, is_transient
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.clock import FakeClock
from weakprompt.errors import ProviderConnectionError, ProviderError, RateLimitError
from weakprompt.messages import AssistantTurn, Usage
from weakprompt.model import ReplyCompleted, TextDelta, ToolCallStarted, UsageReported
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime.loop import evaluate
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript

MEDICATION = "Do NOT take the medication if you "
OVERLOADED = anthropic_error_body("overloaded_error", "Overloaded")
SERVER_ERROR = {"error": {"message": "The server had an error", "type": "server_error", "code": None}}


def openai_adapter(
    server: StreamServer, sleep: FakeSleep, attempts: int = 3, **options: Any
) -> OpenAIAdapter:
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url="http://fake.test/v1", http_client=server.async_client()
    )
    policy = RetryPolicy(attempts=attempts)
    return OpenAIAdapter("gpt-test", async_client=client, retries=retrier(sleep, policy), **options)


def anthropic_adapter(server: StreamServer, sleep: FakeSleep, attempts: int = 3) -> AnthropicAdapter:
    client = anthropic.AsyncAnthropic(
        api_key="k", base_url="http://fake.test", http_client=server.async_client()
    )
    policy = RetryPolicy(attempts=attempts)
    return AnthropicAdapter(
        "claude-test", async_client=client, retries=retrier(sleep, policy, provider="anthropic")
    )


def cut_medication_chunks() -> bytes:
    """Text pieces, then nothing: no finish reason, no ``[DONE]``; the connection simply closed."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": piece}) for piece in pieces_of(MEDICATION, 9)]
    return sse_data(*chunks)


def text(events: list[Any]) -> str:
    return "".join(event.text for event in of_type(events, TextDelta))


# ---------------------------------------------------------------- cut streams


def test_a_cut_openai_stream_is_an_error_not_a_finished_answer() -> None:
    sleep = FakeSleep(FakeClock())
    server = StreamServer().stream(cut_medication_chunks())

    seen, raised = collect_until_error(openai_adapter(server, sleep), make_request([USER]))

    assert text(seen) == MEDICATION and not of_type(seen, ReplyCompleted)
    assert isinstance(raised, ProviderConnectionError)
    assert "broke off before the reply was complete" in str(raised) and "http://fake.test/v1" in str(raised)
    # the caller saw text: a second reply would not continue it, so no silent retry
    assert len(server.requests) == 1 and sleep.waits == []


def test_an_openai_stream_cut_before_any_text_is_retried() -> None:
    sleep = FakeSleep(FakeClock())
    server = (
        StreamServer()
        .stream(sse_data(openai_chunk({"role": "assistant", "content": ""})))
        .stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    )

    turn = final_turn(collect(openai_adapter(server, sleep), make_request([USER])))

    assert turn == ANSWER_TURN
    assert len(server.requests) == 2 and len(sleep.waits) == 1


def test_a_cut_tool_call_from_a_llama_cpp_server_is_never_completed() -> None:
    """llama.cpp's server repeats the call's id and name on every piece; cut mid-arguments: no call."""

    def piece(arguments: str) -> dict[str, Any]:
        call = {"index": 0, "id": "call_x", "type": "function"}
        return openai_chunk(
            {"tool_calls": [{**call, "function": {"name": "get_weather", "arguments": arguments}}]}
        )

    chunks = [openai_chunk({"role": "assistant", "content": None}), piece('{"city": '), piece('"Par')]
    sleep = FakeSleep(FakeClock())
    server = StreamServer().stream(sse_data(*chunks))
    adapter = openai_adapter(server, sleep, strict_tools=False, max_tokens_field="max_tokens")

    seen, raised = collect_until_error(adapter, make_request([USER]))

    assert of_type(seen, ToolCallStarted) and not of_type(seen, ReplyCompleted)
    assert isinstance(raised, ProviderConnectionError) and "no chunk gave a finish reason" in str(raised)
    assert len(server.requests) == 1


def test_a_stream_whose_chunks_carry_no_choice_is_an_error_not_an_empty_answer() -> None:
    server = StreamServer().stream(
        sse_data(openai_chunk(None), openai_usage_chunk(ANSWER_TURN.usage), "[DONE]")
    )

    _, raised = collect_until_error(
        openai_adapter(server, FakeSleep(FakeClock()), attempts=1), make_request([USER])
    )

    assert isinstance(raised, ProviderConnectionError) and "no chunk gave a finish reason" in str(raised)


def test_an_openai_data_line_that_is_not_json_is_a_provider_error_and_retried_before_any_text() -> None:
    garbled = b'data: {"id": "chatcmpl-1", "choi\n\n'
    alone = StreamServer().stream(garbled)
    _, raised = collect_until_error(
        openai_adapter(alone, FakeSleep(FakeClock()), attempts=1), make_request([USER])
    )
    assert isinstance(raised, ProviderConnectionError) and "a data line is not JSON" in str(raised)

    sleep = FakeSleep(FakeClock())
    retried = StreamServer().stream(garbled).stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    assert final_turn(collect(openai_adapter(retried, sleep), make_request([USER]))) == ANSWER_TURN
    assert len(retried.requests) == 2


def test_a_cut_anthropic_stream_is_an_error_not_a_finished_answer() -> None:
    sleep = FakeSleep(FakeClock())
    events = anthropic_stream_events(ANSWER_TURN)[
        :5
    ]  # start, block start, ping, first text piece; then closed
    server = StreamServer().stream(sse_events(*events))

    seen, raised = collect_until_error(anthropic_adapter(server, sleep), make_request([USER]))

    assert of_type(seen, TextDelta) and not of_type(seen, ReplyCompleted)
    assert isinstance(raised, ProviderConnectionError) and "no message_stop event came" in str(raised)
    assert len(server.requests) == 1 and sleep.waits == []


def test_an_anthropic_stream_cut_after_its_start_is_retried_and_the_lost_usage_dropped() -> None:
    cut = anthropic_stream_events(ANSWER_TURN)[:1]
    cut[0][1]["message"]["usage"]["input_tokens"] = 999  # what the lost attempt reported
    sleep = FakeSleep(FakeClock())
    server = StreamServer().stream(sse_events(*cut)).stream(sse_events(*anthropic_stream_events(ANSWER_TURN)))

    events = collect(anthropic_adapter(server, sleep), make_request([USER]))

    assert final_turn(events) == ANSWER_TURN and len(server.requests) == 2
    assert all(report.usage.input_tokens != 999 for report in of_type(events, UsageReported))


def test_an_anthropic_data_line_that_is_not_json_is_a_provider_error() -> None:
    start = sse_events(*anthropic_stream_events(ANSWER_TURN)[:1])
    server = StreamServer().stream(start + b'event: content_block_start\ndata: {"type": "content_bl\n\n')

    _, raised = collect_until_error(
        anthropic_adapter(server, FakeSleep(FakeClock()), attempts=1), make_request([USER])
    )

    assert isinstance(raised, ProviderConnectionError) and "a data line is not JSON" in str(raised)


# ---------------------------------------------------------------- errors sent inside a stream


@pytest.mark.parametrize("after_start", [False, True])
def test_an_anthropic_overloaded_error_event_before_any_content_is_retried(after_start: bool) -> None:
    prefix = anthropic_stream_events(ANSWER_TURN)[:1] if after_start else []
    sleep = FakeSleep(FakeClock())
    server = (
        StreamServer()
        .stream(sse_events(*prefix, ("error", OVERLOADED)))
        .stream(sse_events(*anthropic_stream_events(ANSWER_TURN)))
    )

    turn = final_turn(collect(anthropic_adapter(server, sleep), make_request([USER])))

    assert turn == ANSWER_TURN
    assert len(server.requests) == 2 and len(sleep.waits) == 1


def test_an_anthropic_overloaded_error_event_hands_over_to_the_next_adapter() -> None:
    start = anthropic_stream_events(ANSWER_TURN)[:1]
    overloaded = sse_events(*start, ("error", OVERLOADED))
    server = StreamServer().stream(overloaded).stream(overloaded)
    backup = ScriptedAdapter(["from the backup"], name="backup")
    adapter = FallbackAdapter([anthropic_adapter(server, FakeSleep(FakeClock()), attempts=2), backup])

    turn = final_turn(collect(adapter, make_request([USER])))

    assert turn.text == "from the backup" and len(server.requests) == 2
    (failed,) = turn.metadata["adapter"]["fell_back_from"]  # type: ignore[index, misc]
    assert failed["name"] == "anthropic" and "overloaded_error" in failed["error"]  # type: ignore[index]


def test_an_anthropic_overloaded_error_event_after_text_is_raised_not_retried() -> None:
    events = anthropic_stream_events(ANSWER_TURN)[:5]
    server = StreamServer().stream(sse_events(*events, ("error", OVERLOADED)))
    backup = ScriptedAdapter(["never"], name="backup")
    adapter = FallbackAdapter([anthropic_adapter(server, FakeSleep(FakeClock())), backup])

    seen, raised = collect_until_error(adapter, make_request([USER]))

    assert of_type(seen, TextDelta) and type(raised) is ProviderError
    assert isinstance(raised, ProviderError) and raised.provider_error_type == "overloaded_error"
    assert raised.status_code is None
    assert len(server.requests) == 1 and backup.requests == ()


def test_an_openai_server_error_chunk_sent_first_is_retried_then_handed_over() -> None:
    sleep = FakeSleep(FakeClock())
    retried = (
        StreamServer()
        .stream(sse_data(SERVER_ERROR))
        .stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    )
    assert final_turn(collect(openai_adapter(retried, sleep), make_request([USER]))) == ANSWER_TURN
    assert len(retried.requests) == 2 and len(sleep.waits) == 1

    failing = StreamServer().stream(sse_data(SERVER_ERROR)).stream(sse_data(SERVER_ERROR))
    backup = ScriptedAdapter(["from the backup"], name="backup")
    adapter = FallbackAdapter([openai_adapter(failing, FakeSleep(FakeClock()), attempts=2), backup])
    assert final_turn(collect(adapter, make_request([USER]))).text == "from the backup"
    assert len(failing.requests) == 2


def test_a_fallback_holds_back_usage_until_the_reply_starts() -> None:
    """An adapter that reports usage and then fails has shown nothing yet: the next one answers."""

    class UsageThenOverloaded(ScriptedAdapter):
        async def stream(self, request: Any) -> Any:  # type: ignore[override]
            yield UsageReported(Usage(input_tokens=5, model_calls=1))
            raise ProviderError("overloaded", provider_error_type="overloaded_error")

    adapter = FallbackAdapter([UsageThenOverloaded([]), ScriptedAdapter(["answer"], name="backup")])

    events = collect(adapter, make_request([USER]))

    assert final_turn(events).text == "answer"
    assert UsageReported(Usage(input_tokens=5, model_calls=1)) not in events


@pytest.mark.parametrize(
    ("kind", "status", "transient"),
    [
        ("overloaded_error", 529, True),
        ("api_error", 500, True),
        ("server_error", 500, True),
        ("invalid_request_error", 400, False),
        ("something_new", None, False),
        (None, None, False),
    ],
)
def test_in_stream_errors_are_retried_and_handed_over_by_their_type(
    kind: str | None, status: int | None, transient: bool
) -> None:
    error = ProviderError("in-stream error", provider_error_type=kind)

    assert classified_status(error) == status
    assert is_transient(error) is transient
    assert default_fall_back_on(error) is transient


def test_an_http_status_wins_over_the_type() -> None:
    error = ProviderError("x", status_code=400, provider_error_type="overloaded_error")
    assert classified_status(error) == 400 and not is_transient(error)
    assert is_transient(RateLimitError("in-stream rate limit", provider_error_type="rate_limit_error"))


def test_no_retries_still_types_a_cut_stream() -> None:
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="http://fake.test/v1",
        http_client=StreamServer().stream(cut_medication_chunks()).async_client(),
    )
    adapter = OpenAIAdapter("gpt-test", async_client=client, retries=NO_RETRIES)

    seen, raised = collect_until_error(adapter, make_request([USER]))

    assert text(seen) == MEDICATION and isinstance(raised, ProviderConnectionError)
    assert raised.attempts == 1


# ---------------------------------------------------------------- what the run stores


def plain_prompt() -> Prompt[None]:
    template: PromptTemplate[None] = PromptTemplate(
        ns="tests/stream-integrity",
        key="plain",
        sections=[MarkdownSection(title="Task", key="task", template="Say something.")],
    )
    return Prompt(template)


def assistant_commits(path: Path, session_id: str) -> list[str]:
    """The assistant texts stored for the session, read back through a fresh store on the file."""
    with Store.open(f"sqlite:///{path}") as store:
        log = Transcript(store, session_id).log()
        return [c.content.content for c in log if c.content.role == "assistant"]


def test_a_run_whose_reply_is_cut_stores_no_assistant_turn(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    session = Session()
    server = StreamServer().stream(cut_medication_chunks())
    adapter = openai_adapter(server, FakeSleep(FakeClock()))

    with Store.open(f"sqlite:///{path}") as store, pytest.raises(ProviderConnectionError) as raised:
        evaluate(plain_prompt(), adapter=adapter, session=session, store=store)

    assert "broke off" in str(raised.value)
    assert assistant_commits(path, session.session_id) == []


def test_a_run_whose_first_reply_is_cut_before_any_text_stores_exactly_the_retried_turn(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    session = Session()
    sleep = FakeSleep(FakeClock())
    server = (
        StreamServer()
        .stream(sse_data(openai_chunk({"role": "assistant", "content": ""})))
        .stream(sse_data(*openai_stream_chunks(ANSWER_TURN), "[DONE]"))
    )

    with Store.open(f"sqlite:///{path}") as store:
        response = evaluate(
            plain_prompt(), adapter=openai_adapter(server, sleep), session=session, store=store
        )

    assert response.text == ANSWER_TURN.text and len(server.requests) == 2
    assert assistant_commits(path, session.session_id) == [ANSWER_TURN.text]


# ---------------------------------------------------------------- any cut, anywhere before the end marker


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(turns().filter(lambda turn: turn.finish_reason != "other"), st.data())
def test_an_openai_stream_cut_anywhere_before_its_finish_reason_never_completes(
    turn: AssistantTurn, data: st.DataObject
) -> None:
    chunks = openai_stream_chunks(turn)
    finish_at = next(i for i, c in enumerate(chunks) if c["choices"] and c["choices"][0]["finish_reason"])
    kept = data.draw(st.integers(0, finish_at), label="chunks kept")
    whole = collect(
        openai_adapter(
            StreamServer().stream(sse_data(*chunks, "[DONE]")), FakeSleep(FakeClock()), attempts=1
        ),
        make_request([USER]),
    )
    server = StreamServer().stream(sse_data(*chunks[:kept]))

    seen, raised = collect_until_error(
        openai_adapter(server, FakeSleep(FakeClock()), attempts=1), make_request([USER])
    )

    assert isinstance(raised, ProviderError) and not of_type(seen, ReplyCompleted)
    assert seen == whole[: len(seen)]  # what arrived was passed on as it was, and nothing more


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(anthropic_turns(), st.data())
def test_an_anthropic_stream_cut_anywhere_before_its_message_stop_never_completes(
    turn: AssistantTurn, data: st.DataObject
) -> None:
    events = anthropic_stream_events(turn)
    kept = data.draw(st.integers(0, len(events) - 1), label="events kept")
    whole = collect(
        anthropic_adapter(StreamServer().stream(sse_events(*events)), FakeSleep(FakeClock()), attempts=1),
        make_request([USER]),
    )
    server = StreamServer().stream(sse_events(*events[:kept]))

    seen, raised = collect_until_error(
        anthropic_adapter(server, FakeSleep(FakeClock()), attempts=1), make_request([USER])
    )

    assert isinstance(raised, ProviderConnectionError) and not of_type(seen, ReplyCompleted)
    assert seen == whole[: len(seen)]
