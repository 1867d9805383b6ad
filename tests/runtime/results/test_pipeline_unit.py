"""ToolResultPipeline on its own: what it commits for each kind of result."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from weakprompt.budget import Budget, BudgetTracker
from weakprompt.messages import ToolCall
from weakprompt.runtime.results import (
    SizePolicy,
    ToolOutputStore,
    ToolResultPipeline,
    handle_text,
    output_stats,
    stored_output_ref,
)
from weakprompt.store import Store
from weakprompt.transcript.lazy import LOADED_RESULT_KEY, STORED_OUTPUT_KEY
from weakprompt.transcript.originals import load_message_blob
from weakprompt.transcript.provenance import REDACTED_FROM


@pytest.fixture
def outputs() -> Generator[ToolOutputStore]:
    with Store.open("sqlite://") as store:
        yield ToolOutputStore(store, "s")


def test_a_fitting_result_is_stored_and_shown_as_is(outputs: ToolOutputStore) -> None:
    processed = ToolResultPipeline(outputs).process(ToolCall("c1", "t", "{}"), "small")
    assert processed.content == "small" and not processed.oversized
    assert processed.reference is not None
    assert processed.metadata == {STORED_OUTPUT_KEY: stored_output_ref(processed.reference).to_json()}


def test_an_oversized_result_is_shown_as_its_handle(outputs: ToolOutputStore) -> None:
    pipeline = ToolResultPipeline(outputs, policy=SizePolicy(max_bytes=1024))
    processed = pipeline.process(ToolCall("c1", "t", {"q": 1}), "x" * 2000)
    assert processed.oversized and processed.oversize_reason == "max_bytes"
    assert processed.reference is not None and processed.reference.oversized
    assert processed.content == handle_text(processed.reference.handle, output_stats(processed.reference))


def test_the_token_budget_reason(outputs: ToolOutputStore) -> None:
    tracker = BudgetTracker(Budget(max_input_tokens=10))
    pipeline = ToolResultPipeline(outputs, budget_tracker=tracker)
    assert pipeline.remaining_tokens() == 10
    processed = pipeline.process(ToolCall("c1", "t", "{}"), "y" * 100)
    assert processed.oversize_reason == "token_budget"
    assert ToolResultPipeline(outputs).remaining_tokens() is None


def test_results_that_cannot_be_keyed_stay_inline_unstored(outputs: ToolOutputStore) -> None:
    processed = ToolResultPipeline(outputs).process(ToolCall("c" * 300, "t", "{}"), "z" * 20000)
    assert processed.content == "z" * 20000
    assert processed.metadata == {} and processed.reference is None
    assert outputs.list_results() == []


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('{"tool_call_id": "c9"}', {LOADED_RESULT_KEY: {"tool_call_id": "c9"}}),
        ({"tool_call_id": "c9"}, {LOADED_RESULT_KEY: {"tool_call_id": "c9"}}),
        ("not json", {}),
        ("[1, 2]", {}),
        ('{"tool_call_id": ""}', {}),
        ('{"other": 1}', {}),
    ],
)
def test_get_tool_result_replies_are_marked_as_loaded_never_stored(
    outputs: ToolOutputStore, arguments: object, expected: dict[str, object]
) -> None:
    call = ToolCall("g1", "get_tool_result", arguments)  # type: ignore[arg-type]
    processed = ToolResultPipeline(outputs).process(call, "full text " * 5000)
    assert processed.metadata == expected
    assert processed.content == "full text " * 5000 and processed.reference is None
    assert outputs.list_results() == []


def test_failed_get_tool_result_and_tool_output_replies_carry_no_metadata(outputs: ToolOutputStore) -> None:
    pipeline = ToolResultPipeline(outputs)
    failed = pipeline.process(
        ToolCall("g1", "get_tool_result", '{"tool_call_id": "c1"}'), "No stored", is_error=True
    )
    assert failed.metadata == {}
    extracted = pipeline.process(ToolCall("o1", "tool_output", "{}"), "ABSTRACT FROM TOOL OUTPUT ...")
    assert extracted.metadata == {} and extracted.reference is None
    assert outputs.list_results() == []


# -- redaction at the entry ------------------------------------------------------------------------


def shout(text: str) -> str:
    return text.replace("secret", "[gone]")


def test_a_successful_result_is_redacted_before_it_is_stored_or_shown(outputs: ToolOutputStore) -> None:
    pipeline = ToolResultPipeline(outputs, redact=shout, policy=SizePolicy(max_bytes=1024))
    small = pipeline.process(ToolCall("c1", "t", "{}"), "a secret")
    big = pipeline.process(ToolCall("c2", "t", "{}"), "secret\n" * 400)
    assert small.content == "a [gone]" and REDACTED_FROM not in small.metadata
    assert outputs.get_result("c1").data == b"a [gone]"  # type: ignore[union-attr]
    assert outputs.get_result("c2").data == b"[gone]\n" * 400  # type: ignore[union-attr]
    assert big.reference is not None and "secret" not in big.reference.preview


def test_a_failure_text_is_left_to_the_dispatcher_which_scrubbed_it_already(outputs: ToolOutputStore) -> None:
    processed = ToolResultPipeline(outputs, redact=shout).process(
        ToolCall("c1", "t", "{}"), "secret", is_error=True
    )
    assert processed.content == "secret"


def test_the_raw_original_is_kept_for_replies_that_are_never_stored_too(outputs: ToolOutputStore) -> None:
    pipeline = ToolResultPipeline(outputs, redact=shout, keep_raw_original=True)
    call = ToolCall("g1", "get_tool_result", '{"tool_call_id": "c9"}')
    processed = pipeline.process(call, "old secret")
    assert processed.content == "old [gone]" and processed.reference is None
    raw = load_message_blob(outputs.store, str(processed.metadata[REDACTED_FROM]))
    assert (raw.content, raw.tool_call_id, raw.name) == ("old secret", "g1", "get_tool_result")
    assert processed.metadata[LOADED_RESULT_KEY] == {"tool_call_id": "c9"}
    unchanged = pipeline.process(ToolCall("c1", "t", "{}"), "nothing to hide")
    assert REDACTED_FROM not in unchanged.metadata
