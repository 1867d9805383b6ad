"""Durable evaluations in this process: the sync and async API, stored errors, recovery after a stop."""

from __future__ import annotations

import asyncio
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("dbos")

sys.path.insert(0, str(Path(__file__).parent))

from dbos import DBOS

from durable_support import notes, repeated
from weakprompt.durable import DurableApp, DurableClient, QueueLimits, Served
from weakprompt.durable._liveness import Liveness
from weakprompt.errors import ConfigurationError, ProviderError
from weakprompt.runtime import Approve, PausedRun
from weakprompt.store import Store
from weakprompt.transcript import Transcript

COUNTER = {"adapter": "durable_fixtures:counter_adapter"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("durable")


@pytest.fixture(scope="module")
def app(folder: Path) -> Iterator[DurableApp]:
    counts = folder / "counts"
    counts.mkdir()
    patch = pytest.MonkeyPatch()
    patch.setenv("WEAKPROMPT_DURABLE_COUNTS", str(counts))
    durable = DurableApp(
        str(folder / "store.db"),
        executor_id="here",
        queues=[QueueLimits("local", worker_concurrency=2)],
        serves=Served(modules=["durable_fixtures"]),
    )
    durable.launch()
    try:
        yield durable
    finally:
        durable.shutdown(timeout=5)
        patch.undo()


def _kinds(workflow_id: str) -> list[str]:
    return [step["output"].kind for step in DBOS.list_workflow_steps(workflow_id)]


def test_a_durable_evaluation_records_each_call_once(app: DurableApp, folder: Path) -> None:
    result = app.run_sync(
        "durable_fixtures:counter_prompt", session_id="sync-1", input="rounds=2 id=sync-1", **COUNTER
    )
    assert result.text == "counted 2" and result.paused is None and result.turns == 3
    assert _kinds("sync-1") == ["end", "model", "tool", "model", "tool", "model"]
    again = app.run_sync(
        "durable_fixtures:counter_prompt", session_id="sync-1", input="rounds=2 id=sync-1", **COUNTER
    )
    assert again == result  # the same workflow id: its stored result, nothing called again
    assert sum(1 for who, _, _ in notes(folder / "counts", "model") if who == "sync-1") == 3


def test_the_async_api_runs_the_same_workflow(app: DurableApp) -> None:
    async def go() -> str:
        result = await app.run(
            "durable_fixtures:counter_prompt", session_id="async-1", input="rounds=1 id=async-1", **COUNTER
        )
        return result.text

    assert asyncio.run(go()) == "counted 1"


def test_durable_run_sync_drives_run_even_inside_a_running_loop(app: DurableApp) -> None:
    """One implementation: the blocking twin waits for the coroutine, on a thread of its own in a loop."""

    async def inside() -> str:
        return app.run_sync(
            "durable_fixtures:counter_prompt", session_id="nested-1", input="rounds=1 id=nested-1", **COUNTER
        ).text

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the new names never warn
        assert asyncio.run(inside()) == "counted 1"


def test_durable_evaluate_and_evaluate_async_still_run_and_warn(app: DurableApp) -> None:
    with pytest.warns(DeprecationWarning, match=r"DurableApp\.evaluate is deprecated.*run_sync"):
        old = app.evaluate(
            "durable_fixtures:counter_prompt", session_id="old-1", input="rounds=1 id=old-1", **COUNTER
        )
    assert old.text == "counted 1"

    async def go() -> str:
        result = await app.evaluate_async(
            "durable_fixtures:counter_prompt", session_id="old-2", input="rounds=1 id=old-2", **COUNTER
        )
        return result.text

    with pytest.warns(DeprecationWarning, match=r"DurableApp\.evaluate_async is deprecated.*await run"):
        assert asyncio.run(go()) == "counted 1"


def test_a_failing_model_fails_the_workflow_with_its_error(app: DurableApp) -> None:
    with pytest.raises(ProviderError, match="the provider is down"):
        app.run_sync(
            "durable_fixtures:counter_prompt", adapter="durable_fixtures:failing_adapter", session_id="down-1"
        )
    assert DBOS.retrieve_workflow("down-1").get_status().status == "ERROR"


@pytest.mark.parametrize("tool_name", ["flaky", "flaky_async"])
def test_an_error_that_cannot_be_stored_reaches_the_model_as_text(app: DurableApp, tool_name: str) -> None:
    result = app.run_sync(
        "durable_fixtures:tools_prompt",
        adapter="durable_fixtures:tool_adapter",
        params={"tool_name": tool_name},
        session_id=f"{tool_name}-1",
        input=f"rounds=1 tool={tool_name} id={tool_name}-1",
    )
    assert "Unpicklable: flaky step 0" in result.text
    assert _kinds(f"{tool_name}-1") == ["end", "model", "tool", "model"]  # the failure is recorded too


def test_a_stopped_workflow_continues_from_the_transcript_without_repeating_calls(
    app: DurableApp, folder: Path
) -> None:
    """Cancelled in the middle of its second tool call, then resumed: DBOS runs it again from the start."""
    job = {
        "adapter": "durable_fixtures:tool_adapter",
        "params": {"tool_name": "cancel_me"},
        "session_id": "stop-1",
        "input": "rounds=3 tool=cancel_me id=stop-1",
    }
    with pytest.raises(Exception, match="cancel"):
        app.run_sync("durable_fixtures:tools_prompt", **job)  # type: ignore[arg-type]
    store = Store.open(str(folder / "store.db"))
    try:
        stored = [m.role for m in Transcript(store, "stop-1").compile().messages]
        assert stored == ["system", "user", "assistant", "tool"]  # the first turn only
        result = DBOS.resume_workflow("stop-1").get_result()
        assert result.text == 'done: {"total":3}'  # the tally survived the stop
        messages = Transcript(store, "stop-1").compile().messages
        assert [m.content for m in messages if m.role == "tool"] == [
            '{"total":1}',
            '{"total":2}',
            '{"total":3}',
        ]
    finally:
        store.close()
    counts = folder / "counts"
    assert not repeated([n for n in notes(counts, "model") if n[0] == "stop-1"])
    tool_runs = [n for n in notes(counts, "tools") if n[0] == "stop-1"]
    # step 1 was in flight when the workflow stopped (its record never written): it runs again;
    # the finished step 0 is replayed, with the session state it left
    assert sorted(step for _, step, _ in tool_runs) == ["0", "1", "1", "2"]


def test_a_fork_of_a_finished_run_gives_the_stored_answer(app: DurableApp) -> None:
    app.run_sync(
        "durable_fixtures:counter_prompt", session_id="fork-1", input="rounds=1 id=fork-1", **COUNTER
    )
    forked = DBOS.fork_workflow("fork-1", 4).get_result()  # replays begin and the first calls
    assert forked.text == "counted 1" and forked.turns == 0


def test_pauses_wait_and_resume_through_the_queue(app: DurableApp, folder: Path) -> None:
    approval = {"adapter": "durable_fixtures:approval_adapter"}
    paused = app.run_sync("durable_fixtures:approval_prompt", session_id="ok-1", input="tidy", **approval)
    assert isinstance(paused.paused, PausedRun)
    forked = DBOS.fork_workflow("ok-1", 4).get_result()  # an attempt that finds the pause stored
    assert forked.paused == paused.paused
    client = DurableClient(str(folder / "store.db"))
    try:
        pending = paused.paused.pending[0]
        decided = client.decide(
            "local",
            paused,
            [Approve(pending.call_id, pending.token)],
            prompt="durable_fixtures:approval_prompt",
            decided_by="ann",
            **approval,
        )
        assert client.result_sync(decided, timeout=60).text == "all tidy"
        assert client.status(decided) == "SUCCESS"
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # the new names never warn
            submitted = client.submit_sync(
                "local",
                "durable_fixtures:counter_prompt",
                session_id="queued-1",
                input="rounds=1 id=queued-1",
                **COUNTER,
            )
            assert client.result_sync(submitted).text == "counted 1"

        async def from_a_loop() -> str:
            queued = await client.submit_async(
                "local",
                "durable_fixtures:counter_prompt",
                session_id="queued-2",
                input="rounds=1 id=queued-2",
                **COUNTER,
            )
            return (await client.result_async(queued, timeout=60)).text

        with pytest.warns(DeprecationWarning, match="(submit|result)_async is deprecated"):  # old names work
            assert asyncio.run(from_a_loop()) == "counted 1"
        with pytest.warns(DeprecationWarning, match=r"DurableClient\.submit blocks .* submit_sync"):
            old = client.submit(
                "local",
                "durable_fixtures:counter_prompt",
                session_id="queued-3",
                input="rounds=1 id=queued-3",
                **COUNTER,
            )
        with pytest.warns(DeprecationWarning, match=r"DurableClient\.result blocks .* result_sync"):
            assert client.result(old, timeout=60).text == "counted 1"
        with pytest.raises(ConfigurationError, match="not paused"):
            client.decide("local", client.result_sync(submitted), [], prompt="x:y", **approval)
    finally:
        client.close()
    assert app.recover_dead_workers() == []


def test_liveness_tells_a_held_lock_from_a_released_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    owner, peer = Liveness(url), Liveness(url)
    with peer.if_dead("nobody") as dead:
        assert dead  # it never held a lock here
    owner.hold("w")
    with peer.if_dead("w") as dead:
        assert not dead
    owner.release()
    with peer.if_dead("w") as dead:
        assert dead


def test_a_finished_call_of_an_unstored_turn_is_served_from_its_record(
    app: DurableApp, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped in the second call of a turn: the first call's record serves the resumed turn."""
    monkeypatch.setenv("WEAKPROMPT_DURABLE_CANCEL_AT", "3")
    job = {
        "adapter": "durable_fixtures:pair_adapter",
        "params": {"tool_name": "cancel_me"},
        "session_id": "pair-1",
        "input": "rounds=2 id=pair-1",
    }
    with pytest.raises(Exception, match="cancel"):
        app.run_sync("durable_fixtures:tools_prompt", **job)  # type: ignore[arg-type]
    result = DBOS.resume_workflow("pair-1").get_result()
    assert result.text == 'done: {"total":4}'
    steps = sorted(step for who, step, _ in notes(folder / "counts", "tools") if who == "pair-1")
    assert steps == ["0", "1", "2", "3", "3"]  # 2 served from its record; 3 was cut short
    assert not repeated([n for n in notes(folder / "counts", "model") if n[0] == "pair-1"])


def test_a_continuation_found_finished_or_paused_again_gives_what_is_stored(
    app: DurableApp, folder: Path
) -> None:
    approval = {"adapter": "durable_fixtures:approval_adapter"}
    first = app.run_sync("durable_fixtures:approval_prompt", session_id="twice-1", input="twice", **approval)
    assert first.paused is not None
    client = DurableClient(str(folder / "store.db"))
    try:
        pending = first.paused.pending[0]
        decided = client.decide(
            "local",
            first,
            [Approve(pending.call_id, pending.token)],
            prompt="durable_fixtures:approval_prompt",
            **approval,
        )
        second = client.result_sync(decided, timeout=60)
        assert second.paused is not None and second.paused.seq == 2
        again = DBOS.fork_workflow(decided, 3).get_result()  # the attempt finds pause 2 waiting
        assert again.paused == second.paused
        pending = second.paused.pending[0]
        last = client.decide(
            "local",
            second,
            [Approve(pending.call_id, pending.token)],
            prompt="durable_fixtures:approval_prompt",
            **approval,
        )
        assert client.result_sync(last, timeout=60).text == "all tidy"
        replayed = DBOS.fork_workflow(last, 3).get_result()  # found finished: the stored answer
        assert replayed.text == "all tidy"
        with pytest.raises(TimeoutError, match="did not finish"):
            client.result_sync(
                client.submit_sync(
                    "nobody-listens", "durable_fixtures:counter_prompt", session_id="never-1", **COUNTER
                ),
                timeout=0.2,
            )
    finally:
        client.close()


def test_a_dead_workers_runs_go_back_to_their_queue(app: DurableApp, folder: Path) -> None:
    import signal

    from durable_support import start_worker

    db = str(folder / "store.db")
    ghost = start_worker(db, "ghostly", folder / "counts", executor="ghost", delay=5.0)
    client = DurableClient(db)
    try:
        workflow = client.submit_sync(
            "ghostly",
            "durable_fixtures:counter_prompt",
            session_id="ghost-1",
            input="rounds=1 id=ghost-1",
            **COUNTER,
        )
        deadline = time.monotonic() + 60
        while client.workflow(workflow).executor_id != "ghost" or client.status(workflow) != "PENDING":
            assert time.monotonic() < deadline, "the ghost worker never took the run"
            time.sleep(0.1)
        assert app.recover_dead_workers() == []  # alive: its runs stay with it
        ghost.send_signal(signal.SIGKILL)
        ghost.wait()
        assert app.recover_dead_workers() == ["ghost"]
        assert client.status(workflow) == "ENQUEUED"  # back on its queue, for a worker of "ghostly"
    finally:
        ghost.kill()
        ghost.wait()
        client.close()


def test_the_call_log_works_outside_a_workflow(app: DurableApp) -> None:
    """Outside a workflow the step is a plain call: a sync handler that returns a coroutine is awaited."""
    from durable_fixtures import BumpParams, Tally, counter_adapter
    from weakprompt.durable import CallLog
    from weakprompt.session import Session
    from weakprompt.tools import ToolContext, ToolResult

    async def later(total: int) -> ToolResult[Tally]:
        return ToolResult(message="later", value=Tally(total))

    def handler(params: BumpParams, *, context: ToolContext) -> object:
        context.session[Tally].seed((Tally(params.step),))
        return later(params.step)

    log = CallLog([], None)
    session = Session()
    context = ToolContext(
        session=session,
        prompt=None,
        rendered_prompt=None,
        adapter=None,
        deadline=None,
        budget_tracker=None,
        resources=None,
    )
    from durable_fixtures import bump

    result = asyncio.run(log.tool_call(bump, handler, BumpParams(7), context))
    assert isinstance(result, ToolResult) and result.value == Tally(7)
    assert session[Tally].latest() == Tally(7)
    from weakprompt.messages import Message
    from weakprompt.model import CompiledContext, ModelRequest

    durable = log.adapter(counter_adapter())
    request = ModelRequest(context=CompiledContext(messages=(Message(role="user", content="rounds=0"),)))
    assert durable.name == "counter" and durable.complete(request).text == "counted 0"  # not recorded


def test_a_refused_decision_queues_nothing_and_the_corrected_one_runs(app: DurableApp, folder: Path) -> None:
    """A stale token took ``<session>:pause-<seq>``, so the corrected decision got its error back."""
    from weakprompt.runtime import ResumeError, check_decisions_for

    approval = {"prompt": "durable_fixtures:approval_prompt", "adapter": "durable_fixtures:approval_adapter"}
    paused = app.run_sync(session_id="stale-1", input="tidy", **approval)
    assert paused.paused is not None
    pending = paused.paused.pending[0]
    client = DurableClient(str(folder / "store.db"))
    store = Store.open(str(folder / "store.db"))
    try:
        with pytest.raises(ResumeError, match="token for call 'call-del-0' does not match"):
            client.decide("local", paused, [Approve(pending.call_id, "stale-token")], **approval)
        with pytest.raises(ResumeError, match="no decision for pending call"):
            client.decide("local", paused, [], **approval)
        with pytest.raises(ResumeError, match="decided_by holds a lone surrogate"):
            ok = [Approve(pending.call_id, pending.token)]
            client.decide("local", paused, ok, decided_by="\ud800", **approval)
        assert DBOS.list_workflows(workflow_id_prefix="stale-1:") == []  # nothing was queued
        edited = Approve(pending.call_id, pending.token, arguments={"step": "seven"})
        assert check_decisions_for(store, "stale-1", [edited]) == paused.paused  # arguments: the worker's
        refused = client.decide("local", paused, [edited], **approval)
        with pytest.raises(ResumeError, match="edited arguments for call 'call-del-0' are invalid"):
            client.result_sync(refused, timeout=60)
        decided = client.decide("local", paused, [Approve(pending.call_id, pending.token)], **approval)
        assert decided != refused  # the corrected decision is a run of its own
        assert decided.startswith("stale-1:pause-1:")
        assert client.result_sync(decided, timeout=60).text == "all tidy"
        with pytest.raises(ResumeError, match=r"pause 1 of session 'stale-1' is not waiting .*1, resumed"):
            client.decide("local", paused, [Approve(pending.call_id, pending.token)], **approval)
        nobody = PausedRun(session_id="nobody-1", seq=1, head=None, pending=())
        with pytest.raises(ResumeError, match="'nobody-1' has no paused run"):
            client.decide("local", nobody, [], **approval)
    finally:
        store.close()
        client.close()
    deletes = [who for who, _, _ in notes(folder / "counts", "deletes") if who == "stale-1"]
    assert deletes == ["stale-1"]


def test_a_continuation_that_finds_its_pause_decided_runs_nothing(app: DurableApp, folder: Path) -> None:
    """Two continuations queued for one pause: the one that runs second is refused, its error stored."""
    from dbos import SetWorkflowID

    from weakprompt.durable import EvaluationJob, evaluation_workflow
    from weakprompt.runtime import ResumeError
    from weakprompt.runtime.approval import decisions_to_json

    approval = {"prompt": "durable_fixtures:approval_prompt", "adapter": "durable_fixtures:approval_adapter"}
    paused = app.run_sync(session_id="race-1", input="tidy", **approval)
    assert paused.paused is not None
    pending = paused.paused.pending[0]
    late = EvaluationJob(
        session_id="race-1",
        decisions=decisions_to_json([Approve(pending.call_id, pending.token)]),
        pause_seq=1,
        **approval,
    )
    client = DurableClient(str(folder / "store.db"))
    try:  # both were checked while the pause waited; the first one ran
        first = client.decide("local", paused, [Approve(pending.call_id, pending.token)], **approval)
        assert client.result_sync(first, timeout=60).text == "all tidy"
    finally:
        client.close()
    calls = len(notes(folder / "counts", "model"))
    with SetWorkflowID("race-1:pause-1:late"):
        handle = DBOS.start_workflow(evaluation_workflow, late.to_json())
    with pytest.raises(ResumeError, match="decided before this continuation started"):
        handle.get_result()
    assert len(notes(folder / "counts", "model")) == calls  # the late one called no model
    assert [who for who, _, _ in notes(folder / "counts", "deletes") if who == "race-1"] == ["race-1"]


def test_a_pause_has_one_continuation_queued_at_a_time(app: DurableApp, folder: Path) -> None:
    """While one continuation waits on its queue, another is refused at once; once it ends, one can follow."""
    from weakprompt.runtime import ResumeError

    approval = {"prompt": "durable_fixtures:approval_prompt", "adapter": "durable_fixtures:approval_adapter"}
    paused = app.run_sync(session_id="held-1", input="tidy", **approval)
    assert paused.paused is not None
    approve = [Approve(paused.paused.pending[0].call_id, paused.paused.pending[0].token)]
    client = DurableClient(str(folder / "store.db"))
    try:
        held = client.decide("nobody-listens", paused, approve, **approval)  # stays ENQUEUED
        with pytest.raises(ResumeError, match=f"already has a continuation queued or running .*{held}"):
            client.decide("nobody-listens", paused, approve, **approval)
        DBOS.cancel_workflow(held)  # it ends: the pause may be decided again
        decided = client.decide("local", paused, approve, **approval)
        assert decided != held and client.result_sync(decided, timeout=60).text == "all tidy"
    finally:
        client.close()
