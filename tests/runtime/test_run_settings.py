"""The run's settings are declared once (``RunSettings``); the internal hooks are not public keywords."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from async_support import tools_prompt
from weakprompt.adapters.testing import ScriptedAdapter, tool_call, tool_call_turn
from weakprompt.errors import ConfigurationError
from weakprompt.runtime import evaluate, resume, resume_async, resume_sync, run, run_sync, stream, stream_sync
from weakprompt.runtime.loop import run_with
from weakprompt.runtime.resume import resume_with
from weakprompt.runtime.run_settings import RunOptions, RunSettings, StreamOptions
from weakprompt.session import Session
from weakprompt.tools import AnyTool, ToolResult, tool


def test_public_entries_take_no_internal_hooks() -> None:
    """``resumption=`` and ``tool_wrapper=`` are for integrations, through ``run_with`` / ``resume_with``."""
    for entry in (evaluate, run, run_sync, resume, resume_async, resume_sync, stream, stream_sync, run_with):
        parameters = inspect.signature(entry).parameters
        assert "resumption" not in parameters and "tool_wrapper" not in parameters, entry.__name__


def test_run_with_takes_only_a_prompt_and_its_settings() -> None:
    """The integration entry has no hook of its own: a resumed run goes through ``run_resumed``."""
    assert list(inspect.signature(run_with).parameters) == ["prompt", "settings"]
    import weakprompt
    import weakprompt.runtime

    # run_with is the integrations' entry (settings built, no hook): weakprompt.runtime has it, the
    # top level does not; the resumed run's entry is internal everywhere
    assert "run_with" not in weakprompt.__all__
    for package in (weakprompt, weakprompt.runtime):
        assert "run_resumed" not in package.__all__


def test_run_and_run_sync_take_the_same_keywords() -> None:
    assert list(inspect.signature(run).parameters) == list(inspect.signature(run_sync).parameters)


def test_every_public_keyword_of_run_is_a_setting() -> None:
    """The public signature and the settings name the same things: nothing is lost on the way down."""
    fields = {field.name for field in RunSettings.__attrs_attrs__}
    assert list(inspect.signature(run).parameters) == ["prompt", "adapter", "session", "options"]
    keywords = {"adapter", "session"} | set(RunOptions.__optional_keys__)  # **options: Unpack[RunOptions]
    assert keywords <= fields
    # for integrations (tool_wrapper) and for the Agent's handed-to runs (specs/HANDOFFS.md)
    assert fields - keywords == {"tool_wrapper", "handoff", "history_filter"}
    assert set(RunOptions.__optional_keys__) - set(StreamOptions.__optional_keys__) == {"on_event"}


@pytest.mark.parametrize(
    ("name", "value", "least"), [("max_turns", 0, 1), ("output_retries", -1, 0), ("max_expansions", True, 0)]
)
def test_settings_refuse_a_bad_limit_before_the_run_starts(name: str, value: object, least: int) -> None:
    with pytest.raises(ConfigurationError, match=f"{name} must be an int >= {least}"):
        RunSettings(adapter=ScriptedAdapter(["x"]), session=Session(), **{name: value})  # type: ignore[arg-type]


def test_run_with_a_tool_wrapper_runs_the_wrapped_tool() -> None:
    seen: list[str] = []

    @tool
    def note(text: str) -> ToolResult[None]:
        """Notes the text."""
        seen.append(text)
        return ToolResult.ok(None, message=text)

    def wrap(offered: AnyTool) -> AnyTool:
        seen.append(f"wrapped {offered.name}")
        return offered

    adapter = ScriptedAdapter([tool_call_turn(tool_call("note", {"text": "a"}, id="c1")), "done"])
    settings = RunSettings(adapter=adapter, session=Session(), tool_wrapper=wrap)
    response = asyncio.run(run_with(tools_prompt([note]), settings))
    assert response.text == "done"
    assert seen[0].startswith("wrapped ") and "a" in seen


def test_resume_with_settings_that_name_no_store_is_refused() -> None:
    settings = RunSettings(adapter=ScriptedAdapter(["x"]), session=Session(session_id="s"))
    with pytest.raises(ConfigurationError, match="name no store"):
        asyncio.run(resume_with("s", (), prompt=tools_prompt([]), settings=settings))


def test_the_run_keywords_are_written_once_and_checked_when_called() -> None:
    """Regression: four entries spelled the same 25 keywords; now one TypedDict types them all."""
    prompt = tools_prompt([])
    adapter = ScriptedAdapter(["ok"])
    misspelt = r"run_sync\(\) got an unexpected keyword argument 'max_turn' \(did you mean 'max_turns'\?\)"
    with pytest.raises(TypeError, match=misspelt):
        run_sync(prompt, adapter=adapter, session=Session(), max_turn=3)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'tool_wrapper'"):  # integrations only
        run_sync(prompt, adapter=adapter, session=Session(), tool_wrapper=lambda tool: tool)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"stream_sync\(\) got an unexpected keyword argument 'zzz'$"):
        stream_sync(prompt, adapter=adapter, session=Session(), zzz=1)  # type: ignore[call-arg]
    assert run_sync(prompt, adapter=adapter, session=Session(), max_turns=2).text == "ok"
