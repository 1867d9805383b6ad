"""Each RunSettings field is an agent default, a call's override, or listed here as neither."""

from __future__ import annotations

import attrs

from weakprompt.agent import Agent, AgentDefaults, RunOverrides
from weakprompt.runtime import RunSettings

# RunSettings fields that are not an agent's to keep or a call's to override, and why.
NOT_AN_AGENT_SETTING = {
    "session": "the call's session= argument",
    "input": "the call's first argument",
    "transcript": "runs record in the store's transcript of the session; no agent call takes one",
    "tool_wrapper": "for integrations only (durable), which build their own RunSettings",
    "output_validators": "an Agent field typed by the agent's output type, not a keyword of the TypedDicts",
    "handoff": "a handoff's provenance: the Agent sets it on the target's run (specs/HANDOFFS.md)",
    "history_filter": "a handoff's input filter: the Agent sets it on the target's run",
}
CALL_ONLY = {"adapter", "deadline", "message_history"}


def test_every_run_setting_is_wired_into_the_agent_or_listed_as_not_its() -> None:
    run_fields = {field.name for field in attrs.fields(RunSettings)}
    overrides = set(RunOverrides.__optional_keys__)
    unwired = run_fields - overrides - set(NOT_AN_AGENT_SETTING)
    assert not unwired, (
        f"RunSettings gained {sorted(unwired)}: add each to AgentDefaults (agent/options.py), as an Agent "
        "field and a line of Agent._settings, or to RunOverrides for a call-only one (specs/AGENT.md)"
    )
    assert overrides <= run_fields


def test_agent_defaults_are_exactly_the_agents_setting_fields() -> None:
    defaults = set(AgentDefaults.__optional_keys__)
    typed_by_output = {"output_validators", "handoffs"}  # Agent fields typed by the agent's output type
    fields = {field.name for field in attrs.fields(Agent)} - {"prompt", "adapter", *typed_by_output}
    assert defaults == fields
    assert set(RunOverrides.__optional_keys__) - defaults == CALL_ONLY


def test_each_default_of_the_agent_is_the_runs_default() -> None:
    """An agent built with no settings runs exactly as run() would with none."""
    run_defaults = {field.name: field.default for field in attrs.fields(RunSettings)}
    for field in attrs.fields(Agent):
        if field.name in AgentDefaults.__optional_keys__:
            assert field.default == run_defaults[field.name], field.name
