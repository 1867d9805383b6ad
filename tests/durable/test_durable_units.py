"""The pieces of weakprompt.durable that need no worker: jobs, references, configuration, in-process runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("dbos")

from weakprompt.durable import DurableJobError, EvaluationJob, Served, load_reference, system_database_url
from weakprompt.errors import ConfigurationError

FIXTURES = Served(modules=["durable_fixtures"])

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
    assert _job("durable_fixtures:counter_prompt", rounds=2).load_prompt(FIXTURES).template.key == "counter"
    assert _job("durable_fixtures:counter_prompt").load_adapter(FIXTURES).name == "counter"
    assert (
        _job("durable_fixtures:counter_prompt", "durable_fixtures:COUNTER_ADAPTER")
        .load_adapter(FIXTURES)
        .name
        == "counter"
    )
    with pytest.raises(DurableJobError, match="failed with params"):
        _job("durable_fixtures:counter_prompt", wrong=1).load_prompt(FIXTURES)
    with pytest.raises(DurableJobError, match="broken on purpose"):
        _job("durable_fixtures:broken_prompt").load_prompt(FIXTURES)
    with pytest.raises(DurableJobError, match="not a Prompt"):
        _job("durable_fixtures:Tally", total=1).load_prompt(FIXTURES)
    assert _job("durable_fixtures:COUNTER_PROMPT").load_prompt(FIXTURES).template.key == "counter"
    with pytest.raises(DurableJobError, match="names a Prompt, which takes no params"):
        _job("durable_fixtures:COUNTER_PROMPT", rounds=1).load_prompt(FIXTURES)
    with pytest.raises(DurableJobError, match="neither a Prompt nor a factory"):
        _job("durable_fixtures:NOT_A_FACTORY").load_prompt(FIXTURES)
    with pytest.raises(DurableJobError, match=r"adapter factory .* failed"):
        _job("durable_fixtures:counter_prompt", "durable_fixtures:Tally").load_adapter(FIXTURES)
    with pytest.raises(DurableJobError, match="not a ProviderAdapter"):
        _job("durable_fixtures:counter_prompt", "durable_fixtures:counter_prompt").load_adapter(FIXTURES)


def test_the_system_database_sits_beside_or_inside_the_store(tmp_path: Path) -> None:
    assert system_database_url(str(tmp_path / "a.db")).endswith("a.db.dbos")
    assert system_database_url("postgresql+psycopg://u:p@h/db") == "postgresql://u:p@h/db"
    with pytest.raises(ConfigurationError, match="SQLite file or a PostgreSQL URL"):
        system_database_url("sqlite://")


def test_a_workflow_needs_a_store_configured_in_its_process() -> None:
    from weakprompt.durable import _workflow

    _workflow.bind_store(None, None)
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


def test_a_worker_refuses_a_callable_it_does_not_serve_before_importing_it(tmp_path: Path) -> None:
    """``subprocess:getoutput`` in a job ran on every worker; now it is refused unimported."""
    sys.modules.pop("durable_marker", None)
    job = EvaluationJob(
        prompt="durable_marker:marked_prompt",
        adapter="durable_fixtures:counter_adapter",
        session_id="s",
    )
    with pytest.raises(DurableJobError, match=r"'durable_marker:marked_prompt' is not served .* nothing"):
        job.load(FIXTURES)
    assert "durable_marker" not in sys.modules
    shell = EvaluationJob(
        prompt="durable_fixtures:counter_prompt",
        adapter="subprocess:getoutput",
        session_id="s",
        params={"cmd": f"touch {tmp_path / 'pwned'}"},
    )
    with pytest.raises(DurableJobError, match="adapter reference 'subprocess:getoutput' is not served"):
        shell.load(FIXTURES)
    assert not (tmp_path / "pwned").exists()
    with pytest.raises(DurableJobError, match=r"it serves nothing: declare"):
        Served().check("durable_fixtures:counter_prompt", "prompt")


@pytest.mark.parametrize(
    ("reference", "names"),
    [
        ("durable_fixturesx:f", "is not served"),
        ("durable:f", "is not served"),
        ("durable_fixtures", "is not served"),
        ("durable_fixtures:os.system", "reaches into module 'os'"),
        ("durable_fixtures:tool_call", "defined in 'weakprompt.adapters.testing', outside the served"),
        ("durable_fixtures:FunctionAdapter", "outside the served modules"),
        ("durable_fixtures:_reply", "'_reply' is not a public name"),
        ("durable_fixtures:Tally.__init__.__globals__", "'__init__' is not a public name"),
    ],
)
def test_a_served_module_serves_only_its_own_public_names(reference: str, names: str) -> None:
    with pytest.raises(DurableJobError, match=names):
        FIXTURES.resolve(reference, "prompt")


def test_named_objects_are_served_without_an_import() -> None:
    made: list[str] = []

    def factory() -> str:
        made.append("x")
        return "x"

    served = Served({"support.agent": factory})
    assert served.resolve("support.agent", "prompt") is factory
    with pytest.raises(DurableJobError, match=r"not served by this worker .*the names support\.agent"):
        served.resolve("support.agent:other", "prompt")
    both = Served({"b": 1, "a": 2}, ["durable_fixtures"])
    assert both.describe() == "modules under durable_fixtures; the names a, b"
    assert both.resolve("durable_fixtures:counter_prompt", "prompt") is not None
    with pytest.raises(ConfigurationError, match=r"'support\.\.x' is not a dotted module name"):
        Served(modules=["support..x"])


_component = st.sampled_from(["a", "b", "ab", "sub", "a_1"])
_dotted = st.lists(_component, min_size=1, max_size=4).map(".".join)


@given(prefix=_dotted, module=_dotted)
def test_a_module_prefix_matches_whole_dotted_components(prefix: str, module: str) -> None:
    expected = module.split(".")[: len(prefix.split("."))] == prefix.split(".")
    assert Served(modules=[prefix]).serves_module(module) is expected
