"""Test kit for weakprompt users: strategies, contract checks, state machines, scripted models.

Needs hypothesis (``pip install weakprompt[testing]``); pytest only for the
fixtures in :mod:`weakprompt.testing.pytest_plugin`. Names load lazily, so
importing this package (as the pytest plugin does) costs nothing until a
name is used. See ``specs/TESTING.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_LAZY: dict[str, str] = {
    "json_for": "._generate",
    "arguments_for": "._values",
    "params_for": "._values",
    "values_for": "._values",
    "InvalidArguments": "._invalid",
    "InvalidKind": "._invalid",
    "invalid_arguments_for": "._invalid",
    "tool_calls_for": "._calls",
    "check_tool": "._contract",
    "state_of": "._contract",
    "CallRecord": "._machine",
    "MachineConfig": "._machine",
    "PromptStateMachine": "._machine",
    "prompt_state_machine": "._machine",
    "Script": "._script",
    "script": "._script",
    "scripts_for": "._script",
    "ExpectedMessage": "._assertions",
    "assert_tool_called": "._assertions",
    "assert_transcript": "._assertions",
}

__all__ = [
    "CallRecord",
    "ExpectedMessage",
    "InvalidArguments",
    "InvalidKind",
    "MachineConfig",
    "PromptStateMachine",
    "Script",
    "arguments_for",
    "assert_tool_called",
    "assert_transcript",
    "check_tool",
    "invalid_arguments_for",
    "json_for",
    "params_for",
    "prompt_state_machine",
    "script",
    "scripts_for",
    "state_of",
    "tool_calls_for",
    "values_for",
]

if TYPE_CHECKING:
    from ._assertions import ExpectedMessage, assert_tool_called, assert_transcript
    from ._calls import tool_calls_for
    from ._contract import check_tool, state_of
    from ._generate import json_for
    from ._invalid import InvalidArguments, InvalidKind, invalid_arguments_for
    from ._machine import CallRecord, MachineConfig, PromptStateMachine, prompt_state_machine
    from ._script import Script, script, scripts_for
    from ._values import arguments_for, params_for, values_for


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, __all__)
