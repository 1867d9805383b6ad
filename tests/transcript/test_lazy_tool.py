"""get_tool_result through the real dispatcher: full results, handles, not-found, bad input."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from outputs_support import log_lines
from weakprompt.budget import Budget, BudgetTracker
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher
from weakprompt.runtime.results import (
    GET_TOOL_RESULT_NAME,
    SizePolicy,
    ToolOutputStore,
    handle_text,
    make_get_tool_result_tool,
    output_stats,
)
from weakprompt.runtime.results.lazy_tool import not_found_text
from weakprompt.session import Session
from weakprompt.store import Store


@pytest.fixture
def outputs() -> Generator[ToolOutputStore]:
    with Store.open("sqlite://") as store:
        yield ToolOutputStore(store, "s1")


def _dispatch(
    outputs: ToolOutputStore, arguments: str, *, tracker: BudgetTracker | None = None
) -> tuple[str, bool]:
    tool = make_get_tool_result_tool(outputs, policy=SizePolicy())
    dispatcher = ToolDispatcher([tool], session=Session(session_id="s1"), budget_tracker=tracker)
    execution = dispatcher.execute(ToolCall("g1", GET_TOOL_RESULT_NAME, arguments))
    return execution.message, execution.success


def test_returns_an_earlier_result_in_full(outputs: ToolOutputStore) -> None:
    text = log_lines(100)
    outputs.store_result("c1", "read_log", "{}", text)
    assert _dispatch(outputs, '{"tool_call_id": "c1"}') == (text, True)


def test_an_oversized_result_comes_back_as_its_handle_message(outputs: ToolOutputStore) -> None:
    ref = outputs.store_result("c1", "read_log", "{}", log_lines(1000))
    message, ok = _dispatch(outputs, '{"tool_call_id": "c1"}')
    assert ok and message == handle_text(ref.handle, output_stats(ref))
    assert outputs.has_oversized()  # so tool_output is offered from now on


def test_an_oversized_result_is_answered_without_reading_its_payload(
    outputs: ToolOutputStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import weakprompt.runtime.results.store as module

    ref = outputs.store_result("c1", "read_log", "{}", log_lines(1000))

    def refuse(*_: object) -> bytes:
        raise AssertionError("payload read")

    monkeypatch.setattr(module, "fetch_blob", refuse)
    assert _dispatch(outputs, '{"tool_call_id": "c1"}') == (handle_text(ref.handle, output_stats(ref)), True)


def test_a_result_purged_after_its_metadata_was_read_is_not_found(
    outputs: ToolOutputStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs.store_result("c1", "read_log", "{}", "small")
    monkeypatch.setattr(outputs, "get_result", lambda call_id: None)
    message, ok = _dispatch(outputs, '{"tool_call_id": "c1"}')
    assert not ok and message.startswith("No stored tool result has tool_call_id 'c1'")


def test_a_result_over_the_remaining_token_budget_comes_back_as_a_handle(outputs: ToolOutputStore) -> None:
    ref = outputs.store_result("c1", "read_log", "{}", log_lines(50))
    tracker = BudgetTracker(Budget(max_total_tokens=ref.tokens + 10))
    message, _ = _dispatch(outputs, '{"tool_call_id": "c1"}', tracker=tracker)
    assert message == log_lines(50)
    small = BudgetTracker(Budget(max_total_tokens=ref.tokens - 1))
    message, _ = _dispatch(outputs, '{"tool_call_id": "c1"}', tracker=small)
    assert message.startswith("Tool output is too large")


def test_unknown_id_lists_up_to_ten_known_ids(outputs: ToolOutputStore) -> None:
    for i in range(12):
        outputs.store_result(f"c{i}", "t", "{}", f"out {i}")
    message, ok = _dispatch(outputs, '{"tool_call_id": "nope"}')
    assert not ok
    assert message == not_found_text("nope", [f"c{i}" for i in range(11, 1, -1)])
    assert "c11, c10, c9" in message and "c1," not in message and "c0" not in message


def test_unknown_id_in_an_empty_session(outputs: ToolOutputStore) -> None:
    message, ok = _dispatch(outputs, '{"tool_call_id": "c1"}')
    assert not ok and "no stored results yet" in message


def test_another_sessions_ids_are_not_found(outputs: ToolOutputStore) -> None:
    other = ToolOutputStore(outputs.store, "s2")
    other.store_result("secret", "t", "{}", "other session data")
    message, ok = _dispatch(outputs, '{"tool_call_id": "secret"}')
    assert not ok and "other session data" not in message


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"tool_call_id": ""}', "No stored tool result"),
        ('{"tool_call_id": "' + "x" * 300 + '"}', "No stored tool result"),
        ("{}", "tool_call_id"),
        ('{"tool_call_id": 5}', "tool_call_id"),
        ("not json", "not valid JSON"),
        ('{"tool_call_id": "c1", "extra": 1}', "extra"),
    ],
)
def test_bad_input_gets_a_failed_reply_never_an_exception(
    outputs: ToolOutputStore, arguments: str, expected: str
) -> None:
    message, ok = _dispatch(outputs, arguments)
    assert not ok and expected in message


def test_long_ids_are_shortened_in_the_reply() -> None:
    assert "..." in not_found_text("y" * 200, [])
