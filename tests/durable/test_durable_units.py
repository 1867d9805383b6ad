"""The pieces of weakprompt.durable that need no worker: jobs, references, configuration, in-process runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("dbos")

from weakprompt.durable import DurableJobError, EvaluationJob, load_reference, system_database_url
from weakprompt.errors import ConfigurationError

sys.path.insert(0, str(Path(__file__).parent))


def test_a_job_reads_back_from_its_json() -> None:
    job = EvaluationJob(
        prompt="m:p",
        adapter="m:a",
        session_id="s",
        params={"n": 2},
        input="hi",
        max_turns=3,
        decisions="[]",
        decided_by="ann",
        pause_seq=2,
    )
    assert EvaluationJob.from_json(job.to_json()) == job


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("nope", "not JSON"),
        ("[1]", "not a JSON object"),
        ('{"prompt": "", "adapter": "a:b", "session_id": "s"}', "'prompt'"),
        ('{"prompt": "a:b", "adapter": "a:b", "session_id": "s", "params": [1]}', "'params'"),
        ('{"prompt": "a:b", "adapter": "a:b", "session_id": "s", "max_turns": 0}', "'max_turns'"),
        ('{"prompt": "a:b", "adapter": "a:b", "session_id": "s", "input": 3}', "'input'"),
        ('{"prompt": "a:b", "adapter": "a:b", "session_id": "s", "pause_seq": true}', "'pause_seq'"),
    ],
)
def test_a_malformed_job_is_refused_naming_the_field(text: str, names: str) -> None:
    with pytest.raises(DurableJobError, match=names):
        EvaluationJob.from_json(text)


@pytest.mark.parametrize(
    ("reference", "names"),
    [
        ("no_colon", "not of the form"),
        ("weakprompt_no_such_module_x:f", "importing module 'weakprompt_no_such_module_x' failed"),
        ("durable_fixtures:missing", "has no attribute 'missing'"),
    ],
)
def test_a_bad_reference_is_refused_naming_it(reference: str, names: str) -> None:
    with pytest.raises(DurableJobError, match=names):
        load_reference(reference, "prompt")


def _job(prompt: str, adapter: str = "durable_fixtures:counter_adapter", **params: int) -> EvaluationJob:
    return EvaluationJob(prompt=prompt, adapter=adapter, session_id="s", params=dict(params))


def test_prompt_and_adapter_references_are_checked() -> None:
    assert _job("durable_fixtures:counter_prompt", rounds=2).load_prompt().template.key == "counter"
    assert _job("durable_fixtures:counter_prompt").load_adapter().name == "counter"
    assert (
        _job("durable_fixtures:counter_prompt", "durable_fixtures:COUNTER_ADAPTER").load_adapter().name
        == "counter"
    )
    with pytest.raises(DurableJobError, match="failed with params"):
        _job("durable_fixtures:counter_prompt", wrong=1).load_prompt()
    with pytest.raises(DurableJobError, match="broken on purpose"):
        _job("durable_fixtures:broken_prompt").load_prompt()
    with pytest.raises(DurableJobError, match="not a Prompt"):
        _job("durable_fixtures:Tally", total=1).load_prompt()
    assert _job("durable_fixtures:COUNTER_PROMPT").load_prompt().template.key == "counter"
    with pytest.raises(DurableJobError, match="names a Prompt, which takes no params"):
        _job("durable_fixtures:COUNTER_PROMPT", rounds=1).load_prompt()
    with pytest.raises(DurableJobError, match="neither a Prompt nor a factory"):
        _job("durable_fixtures:NOT_A_FACTORY").load_prompt()
    with pytest.raises(DurableJobError, match=r"adapter factory .* failed"):
        _job("durable_fixtures:counter_prompt", "durable_fixtures:Tally").load_adapter()
    with pytest.raises(DurableJobError, match="not a ProviderAdapter"):
        _job("durable_fixtures:counter_prompt", "durable_fixtures:counter_prompt").load_adapter()


def test_the_system_database_sits_beside_or_inside_the_store(tmp_path: Path) -> None:
    assert system_database_url(str(tmp_path / "a.db")).endswith("a.db.dbos")
    assert system_database_url("postgresql+psycopg://u:p@h/db") == "postgresql://u:p@h/db"
    with pytest.raises(ConfigurationError, match="SQLite file or a PostgreSQL URL"):
        system_database_url("sqlite://")


def test_a_workflow_needs_a_store_configured_in_its_process() -> None:
    from weakprompt.durable import _workflow

    _workflow.bind_store(None)
    with pytest.raises(DurableJobError, match="no weakprompt store is configured"):
        _workflow._store()  # pyright: ignore[reportPrivateUsage]


def test_arguments_serde_cannot_dump_are_keyed_by_their_repr() -> None:
    from weakprompt.durable import _calls

    class Odd:
        def __repr__(self) -> str:
            return "Odd()"

    key = _calls._arguments_hash(Odd())  # pyright: ignore[reportPrivateUsage]
    assert key == _calls._arguments_hash(Odd())  # pyright: ignore[reportPrivateUsage]
    assert len(key) == 64


def test_a_run_has_begun_once_more_than_its_system_prompt_is_stored(tmp_path: Path) -> None:
    from weakprompt.durable import _workflow
    from weakprompt.store import Store
    from weakprompt.transcript import Transcript

    begun = _workflow._begun  # pyright: ignore[reportPrivateUsage]
    store = Store.open(str(tmp_path / "s.db"))
    try:
        transcript = Transcript(store, "s")
        assert not begun(store, "s", None)  # nothing at all
        transcript.system("Be brief.")
        assert not begun(store, "s", None)  # the crash came between the system prompt and the input
        start = transcript.user("first question").hash
        assert begun(store, "s", None)
        transcript.system("Be briefer.")
        assert not begun(store, "s", start)  # a later run stored only its system prompt
        transcript.user("second question")
        assert begun(store, "s", start)
    finally:
        store.close()
