"""Datasets of typed cases, and datasets read back from stored sessions."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evals_support import Forecast, dataset, make_agent
from weakprompt.errors import ConfigurationError
from weakprompt.evals import Case, Dataset, ExpectedOutput, dataset_from_sessions
from weakprompt.store import Store


def test_case_names_must_be_unique_within_a_dataset() -> None:
    with pytest.raises(ConfigurationError, match="two cases are named 'a'"):
        Dataset(name="d", cases=[Case(name="a", input="x"), Case(name="a", input="y")])


@pytest.mark.parametrize("bad", ["", "   ", "x" * 256])
def test_a_case_name_is_non_empty_text_of_at_most_255_characters(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="name must be a non-empty text"):
        Case(name=bad)


def test_a_dataset_compares_expected_outputs_by_default_and_finds_cases_by_name() -> None:
    data = dataset()
    assert data.evaluators == (ExpectedOutput(),)
    assert data.case("Porto").expected == Forecast("Porto", "rainy")
    assert dict(data.case("Porto").metadata) == {"region": "pt"}
    with pytest.raises(KeyError, match="no case 'Madrid'"):
        data.case("Madrid")


def test_case_fields_are_frozen_and_collections_become_tuples() -> None:
    case = Case(name="a", params=[1, 2], metadata={"k": 1})
    assert case.params == (1, 2)
    with pytest.raises(TypeError):
        case.metadata["k"] = 2  # type: ignore[index]


def test_dataset_from_sessions_takes_each_first_input_and_final_answer() -> None:
    with Store.open("sqlite://") as store:
        agent = make_agent()
        for city in ("Lisbon", "Porto"):
            agent.run_sync(city, session=f"s-{city}", store=store)
        typed = dataset_from_sessions(store, ["s-Lisbon", "s-Porto"], name="recorded", output_type=Forecast)
        assert [(c.name, c.input, c.expected) for c in typed.cases] == [
            ("s-Lisbon", "Lisbon", Forecast("Lisbon", "sunny")),
            ("s-Porto", "Porto", Forecast("Porto", "rainy")),
        ]
        assert typed.cases[0].metadata["source_session"] == "s-Lisbon"
        text = dataset_from_sessions(store, ["s-Porto"], name="recorded")
        assert text.cases[0].expected == '{"city": "Porto", "sky": "rainy"}'


def test_dataset_from_sessions_refuses_a_session_without_an_answer() -> None:
    with Store.open("sqlite://") as store:
        with pytest.raises(ConfigurationError, match="session 'nothing' has no user input"):
            dataset_from_sessions(store, ["nothing"], name="d")
        from weakprompt.transcript import Transcript

        Transcript(store, "asked").user("Hello?")
        with pytest.raises(ConfigurationError, match="session 'asked' has no final answer"):
            dataset_from_sessions(store, ["asked"], name="d")


def test_import_weakprompt_does_not_import_the_evals() -> None:
    code = "import sys, weakprompt; weakprompt.Agent; print('weakprompt.evals' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
