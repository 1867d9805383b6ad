"""The top level holds what a first agent and a first approval need, and no internal machinery."""

from __future__ import annotations

import pytest

import weakprompt
from weakprompt import runtime


def test_a_first_agent_and_a_first_approval_need_only_top_level_names() -> None:
    # a paused run resumes through its agent (Agent.resume / resume_sync)
    for name in ("Agent", "Approve", "Deny", "Supply", "PausedRun", "ResumeError", "paused_run"):
        assert name in weakprompt.__all__, name
    assert weakprompt.Approve is runtime.Approve and weakprompt.PausedRun is runtime.PausedRun


def test_the_dispatcher_at_the_top_level_warns_and_is_the_runtimes() -> None:
    assert "ToolDispatcher" not in weakprompt.__all__ and "ToolDispatcher" not in dir(weakprompt)
    with pytest.warns(DeprecationWarning, match=r"use weakprompt\.runtime\.ToolDispatcher"):
        dispatcher = weakprompt.ToolDispatcher  # type: ignore[attr-defined]
    assert dispatcher is runtime.ToolDispatcher


def test_the_runtime_root_has_the_entries_an_integration_builds_settings_for() -> None:
    entries = ("RunSettings", "run_with", "run_with_sync", "resume_with", "resume_with_sync", "stream_with")
    for name in (*entries, "stream_sync_with"):
        assert name in runtime.__all__, name
