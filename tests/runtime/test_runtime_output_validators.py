"""Output validators: a rejected answer is a corrective turn, counted against output_retries, stored with why.

Also: a run that ended on an answer it could not use (parse failure or
rejection) is listed as ``failed``, not ``finished`` (issue 30, item 9).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loop_support import Answer, Recorder, arithmetic_prompt
from weakprompt.adapters.testing import ScriptedAdapter
from weakprompt.errors import ConfigurationError, OutputParseError, OutputValidationError
from weakprompt.inspector.session_view import load_session
from weakprompt.inspector.sessions import list_sessions
from weakprompt.inspector.status import shape_status
from weakprompt.runtime.loop import evaluate, run
from weakprompt.runtime.loop_events import OutputRejected
from weakprompt.runtime.output_checks import OUTPUT_CORRECTION, OUTPUT_REJECTED, PARSE
from weakprompt.runtime.run_events import RunFinished
from weakprompt.runtime.streaming import stream
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.transcript import Transcript


def _answer(value: int) -> str:
    return json.dumps({"value": value, "note": "n"})


def positive(answer: Answer) -> None:
    if answer.value <= 0:
        raise OutputValidationError(f"value must be positive, got {answer.value}")


async def even(answer: Answer) -> None:
    await asyncio.sleep(0)
    if answer.value % 2:
        raise OutputValidationError("value must be even")


def test_a_rejection_reaches_the_model_as_a_corrective_turn_with_its_reason() -> None:
    session = Session()
    events = Recorder(session.bus)
    adapter = ScriptedAdapter([_answer(-1), _answer(4)])
    response = evaluate(
        arithmetic_prompt(output=True), adapter=adapter, session=session, output_validators=(positive,)
    )
    assert response.output == Answer(4, "n")
    assert response.turns == 2 and response.output_retries_used == 1
    correction = adapter.requests[1].context.messages[-1]
    assert correction.role == "user" and "value must be positive, got -1" in correction.content
    (rejected,) = events.of(OutputRejected)
    assert isinstance(rejected, OutputRejected) and rejected.retrying
    assert "value must be positive" in rejected.errors


def test_async_validators_run_in_order_after_sync_ones() -> None:
    adapter = ScriptedAdapter([_answer(3), _answer(-2), _answer(6)])
    response = evaluate(
        arithmetic_prompt(output=True),
        adapter=adapter,
        session=Session(),
        output_retries=2,
        output_validators=[positive, even],
    )
    assert response.output == Answer(6, "n") and response.turns == 3
    reasons = [r.context.messages[-1].content for r in adapter.requests[1:]]
    assert "value must be even" in reasons[0] and "value must be positive" in reasons[1]


def test_parse_failures_and_rejections_share_output_retries() -> None:
    adapter = ScriptedAdapter(["no json", _answer(-1), _answer(2)])
    with pytest.raises(OutputValidationError, match="positive") as info:
        evaluate(
            arithmetic_prompt(output=True),
            adapter=adapter,
            session=Session(),
            output_retries=1,
            output_validators=(positive,),
        )
    assert len(adapter.requests) == 2
    assert any("1 corrective turn" in note for note in info.value.__notes__)


def test_exhausted_retries_raise_the_last_reason() -> None:
    reasons = iter(["first reason", "second reason"])

    def refuse(_answer: Answer) -> None:
        raise OutputValidationError(next(reasons))

    adapter = ScriptedAdapter([_answer(1), _answer(2)])
    with pytest.raises(OutputValidationError) as info:
        evaluate(
            arithmetic_prompt(output=True), adapter=adapter, session=Session(), output_validators=(refuse,)
        )
    assert info.value.reason == "second reason" and str(info.value) == "second reason"


def test_a_rejection_is_stored_with_who_rejected_and_the_reply_it_corrects() -> None:
    store = Store.open("sqlite://")
    session = Session()
    adapter = ScriptedAdapter(["not json", _answer(-5), _answer(5)])
    evaluate(
        arithmetic_prompt(output=True),
        adapter=adapter,
        session=session,
        store=store,
        output_retries=2,
        output_validators=(positive,),
    )
    log = Transcript(store, session.session_id).log()
    assert [c.role for c in log] == ["system", "assistant", "user", "assistant", "user", "assistant"]
    parse_reply, parse_fix, rejected, rejection_fix, final = log[1:]
    assert parse_reply.metadata[OUTPUT_REJECTED]["by"] == PARSE  # type: ignore[index]
    assert parse_fix.metadata[OUTPUT_CORRECTION] == {"by": PARSE, "corrects": parse_reply.hash}
    assert rejected.metadata[OUTPUT_REJECTED] == {  # type: ignore[comparison-overlap]
        "by": "positive",
        "reason": "value must be positive, got -5",
    }
    assert rejection_fix.metadata[OUTPUT_CORRECTION] == {"by": "positive", "corrects": rejected.hash}
    assert OUTPUT_REJECTED not in final.metadata


def test_a_validator_that_breaks_ends_the_run_and_its_reply_is_not_stored() -> None:
    def broken(_answer: Answer) -> None:
        raise KeyError("oops")

    store = Store.open("sqlite://")
    session = Session()
    with pytest.raises(KeyError):
        evaluate(
            arithmetic_prompt(output=True),
            adapter=ScriptedAdapter([_answer(1)]),
            session=session,
            store=store,
            output_validators=(broken,),
        )
    assert [c.role for c in Transcript(store, session.session_id).log()] == ["system"]


def test_validators_need_an_output_type() -> None:
    with pytest.raises(ConfigurationError, match="no output_type"):
        evaluate(
            arithmetic_prompt(output=False),
            adapter=ScriptedAdapter(["hi"]),
            session=Session(),
            output_validators=(positive,),
        )


@pytest.mark.parametrize(
    ("validators", "message"),
    [
        (positive, r"sequence of functions, got function"),
        ((positive, 3), r"output_validators\[1\] is not callable"),
    ],
)
def test_output_validators_must_be_a_sequence_of_functions(validators: object, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        evaluate(
            arithmetic_prompt(output=True),
            adapter=ScriptedAdapter([_answer(1)]),
            session=Session(),
            output_validators=validators,  # type: ignore[arg-type]
        )


def test_run_and_stream_take_output_validators() -> None:
    async def main() -> None:
        response = await run(
            arithmetic_prompt(output=True),
            adapter=ScriptedAdapter([_answer(1), _answer(2)]),
            session=Session(),
            output_validators=(even,),
        )
        assert response.output == Answer(2, "n")
        async with stream(
            arithmetic_prompt(output=True),
            adapter=ScriptedAdapter([_answer(-1), _answer(8)]),
            session=Session(),
            output_validators=(positive,),
        ) as events:
            finished = [e async for e in events if isinstance(e, RunFinished)]
        assert finished[0].response.output == Answer(8, "n")

    asyncio.run(main())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rejections=st.integers(min_value=0, max_value=5), retries=st.integers(min_value=0, max_value=4))
def test_k_rejections_succeed_with_k_plus_one_calls_within_retries(rejections: int, retries: int) -> None:
    verdicts = iter([False] * rejections + [True])

    def judge(_answer: Answer) -> None:
        if not next(verdicts):
            raise OutputValidationError("not yet")

    adapter = ScriptedAdapter([_answer(n) for n in range(rejections + 1)])
    call = lambda: evaluate(  # noqa: E731
        arithmetic_prompt(output=True),
        adapter=adapter,
        session=Session(),
        output_retries=retries,
        max_turns=10,
        output_validators=(judge,),
    )
    if rejections <= retries:
        response = call()
        assert response.turns == rejections + 1 == len(adapter.requests)
        assert response.output_retries_used == rejections
        assert response.output == Answer(rejections, "n")
    else:
        with pytest.raises(OutputValidationError, match="not yet"):
            call()
        assert len(adapter.requests) == retries + 1


# -- a run that could not use its final answer is recorded as failed (issue 30, item 9) -----------


def test_a_run_that_failed_to_parse_is_recorded_as_failed(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "runs.db")
    with pytest.raises(OutputParseError):
        evaluate(
            arithmetic_prompt(output=True),
            adapter=ScriptedAdapter(["not json"]),
            session=Session(session_id="unparsed"),
            store=store,
            output_retries=0,
        )
    with pytest.raises(OutputValidationError):
        evaluate(
            arithmetic_prompt(output=True),
            adapter=ScriptedAdapter([_answer(-1)]),
            session=Session(session_id="rejected"),
            store=store,
            output_retries=0,
            output_validators=(positive,),
        )
    evaluate(
        arithmetic_prompt(output=True),
        adapter=ScriptedAdapter(["not json", _answer(1)]),
        session=Session(session_id="corrected"),
        store=store,
    )
    statuses = {s.session_id: s.status for s in list_sessions(store).sessions}
    assert statuses == {"unparsed": "failed", "rejected": "failed", "corrected": "finished"}
    assert load_session(store, "unparsed").status == "failed"
    assert load_session(store, "corrected").status == "finished"
    store.close()


def test_status_reads_a_rejected_final_answer_as_failed() -> None:
    rejected = json.dumps({OUTPUT_REJECTED: {"by": PARSE, "reason": "no JSON"}})
    assert shape_status("assistant", False, rejected) == "failed"
    assert shape_status("assistant", False, "{}") == "finished"
