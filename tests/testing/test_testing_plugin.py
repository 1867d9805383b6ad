"""The pytest plugin (run in a fresh pytest with pytester) and how the kit imports."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import weakprompt.runtime
import weakprompt.runtime.pausing
import weakprompt.runtime.run_scope
import weakprompt.store
import weakprompt.testing
import weakprompt.testing.pytest_plugin as plugin
import weakprompt.transcript

# pytester restores sys.modules after each inner run. Loading the kit, the store (SQLAlchemy's
# compiled parts do not survive a second import) and the runtime (with its run scope and pausing,
# which load with the first run) here first keeps one copy of every module for all runs.
for _name in weakprompt.testing.__all__:
    getattr(weakprompt.testing, _name)
assert weakprompt.runtime and weakprompt.store and weakprompt.transcript

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ("-p", "weakprompt.testing.pytest_plugin", "-p", "no:randomly")


def test_the_fixtures_work_in_a_users_project(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_user="""
        import pytest
        from weakprompt.adapters.testing import FunctionAdapter, ScriptedAdapter
        from weakprompt.session import Session
        from weakprompt.testing import script
        from weakprompt.tokens import ByteEstimateCounter

        def test_session_and_store(session, store, transcript):
            assert isinstance(session, Session)
            assert transcript.session_id == session.session_id and transcript.store is store
            assert store.url.endswith("weakprompt.db")

        def test_adapters(scripted_adapter, function_adapter):
            counter = ByteEstimateCounter(1)
            scripted = scripted_adapter(script().answer("hi"), token_counter=counter)
            assert isinstance(scripted, ScriptedAdapter) and scripted.remaining == 1
            assert scripted.token_counter is counter
            plain = scripted_adapter(["a", "b"])
            assert plain.remaining == 2 and plain.token_counter is None
            function = function_adapter(lambda request: "x")
            assert isinstance(function, FunctionAdapter)
            assert function_adapter(lambda request: "x", token_counter=counter).token_counter is counter

        SEEN = []

        @pytest.mark.parametrize("run", [1, 2])
        def test_each_test_gets_its_own_session(session, run):
            SEEN.append(session.session_id)
            assert len(set(SEEN)) == len(SEEN) == run
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=4)


def test_a_failing_assertion_helper_reads_well_in_pytest_output(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_fails="""
        from weakprompt.testing import assert_tool_called

        def test_not_called(session):
            assert_tool_called(session, "add_note", times=1)
        """
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*AssertionError: expected 1 call(s) to 'add_note', found 0", "*no tool was called"]
    )


def test_a_fixture_of_the_same_name_in_the_project_wins(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
        import pytest
        from weakprompt.session import Session

        @pytest.fixture
        def session():
            return Session(session_id="mine")
        """
    )
    pytester.makepyfile(
        test_override="""
        def test_override(session, transcript):
            assert session.session_id == "mine" == transcript.session_id
        """
    )
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_the_copyable_example_passes(pytester: pytest.Pytester) -> None:
    source = (ROOT / "examples" / "test_my_tools.py").read_text(encoding="utf-8")
    pytester.makepyfile(test_my_tools=source)

    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=4)


def test_the_plugin_only_adds_fixtures() -> None:
    hooks = [name for name in dir(plugin) if name.startswith("pytest_")]
    fixtures = {"session", "store", "transcript", "scripted_adapter", "function_adapter"}

    assert hooks == []
    assert fixtures <= set(dir(plugin))


def test_the_entry_point_names_the_plugin_module() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    assert project["entry-points"]["pytest11"] == {
        "weakprompt.testing.pytest_plugin": "weakprompt.testing.pytest_plugin"
    }
    # the fixtures need pytest, so the extra brings it
    assert project["optional-dependencies"]["testing"] == ["hypothesis>=6.115", "pytest>=8.3"]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_the_plugin_loads_without_hypothesis_installed() -> None:
    """The entry point loads in every pytest run of a project with weakprompt, extra or not."""
    result = _run(
        "import sys; sys.modules['hypothesis'] = None\n"
        "import weakprompt.testing.pytest_plugin, weakprompt.testing\n"
        "heavy = [m for m in ('sqlalchemy', 'hypothesis', 'weakprompt.store') if sys.modules.get(m)]\n"
        "print(heavy)\n"
        "try:\n    weakprompt.testing.values_for\nexcept ImportError as exc:\n    print('needs', exc.name)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["[]", "needs hypothesis"]


def test_the_kit_works_without_pytest() -> None:
    result = _run(
        "import sys; sys.modules['pytest'] = None\n"
        "from hypothesis import find\n"
        "from weakprompt.testing import values_for, check_tool, prompt_state_machine, assert_tool_called\n"
        "print(find(values_for(int), lambda n: n > 3))\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "4"


def test_names_load_lazily_and_unknown_ones_are_refused() -> None:
    assert set(weakprompt.testing.__all__) <= set(dir(weakprompt.testing))
    assert weakprompt.testing.values_for is weakprompt.testing.values_for
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = weakprompt.testing.nothing_here  # type: ignore[attr-defined]
