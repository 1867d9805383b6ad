"""How a run goes on from where it stopped: the plan ``resume`` builds and the loop carries out.

A :class:`Resumption` holds the steps for a stored run's decided (or
interrupted) calls, the reply a crash left unstored, and the
:class:`RunContext` the run had. ``runtime.resume`` builds it from the
store; ``runtime.pausing`` builds one for decisions made inline; the loop
carries it out (``specs/APPROVAL.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import attrs

from ..canonical import canonical_json, parse_canonical_json
from ..jsontypes import JSONObject, JSONValue
from ..messages import AssistantTurn, FinishReason, ToolCall, Usage
from ..transcript.part_codec import parts_from_json, parts_to_json
from .approval import Approve, Decision, Deny, PendingCall, Supply
from .pause_records import ApprovalNote

__all__ = [
    "AnswerStep",
    "Resumption",
    "RunContext",
    "RunStep",
    "interrupted_text",
    "plan_steps",
    "reply_from_json",
    "reply_to_json",
]


@attrs.frozen
class RunContext:
    """What a resumed run needs besides the session: where this run's input began, sections opened.

    ``turns``: the model calls the run made before it stopped (over every
    earlier attempt), so that ``max_turns`` caps the whole run, not each
    resumption of it.
    """

    turn_start: str | None = None
    expanded: tuple[str, ...] = ()
    turns: int = 0

    def to_json(self) -> JSONObject:
        expanded = list[JSONValue](self.expanded)
        return {"turn_start": self.turn_start, "expanded": expanded, "turns": self.turns}

    @classmethod
    def from_json(cls, data: JSONValue) -> RunContext:
        if not isinstance(data, dict):
            return cls()
        start = data.get("turn_start")
        expanded = data.get("expanded")
        keys = tuple(str(k) for k in expanded) if isinstance(expanded, list) else ()
        turns = data.get("turns")  # absent in pauses stored before it was kept
        made = turns if isinstance(turns, int) and not isinstance(turns, bool) and turns > 0 else 0
        return cls(turn_start=start if isinstance(start, str) else None, expanded=keys, turns=made)


@attrs.frozen
class RunStep:
    """Run this call (approved, possibly with edited arguments) through the dispatcher."""

    call: ToolCall
    provenance: JSONObject | None
    """How a person decided it; ``None`` for a call re-run after a crash (its tool is idempotent)."""


@attrs.frozen
class AnswerStep:
    """Answer this call without running it: a denial, a supplied result, an interruption."""

    call: ToolCall
    text: str
    is_error: bool
    provenance: JSONObject


@attrs.frozen
class Resumption:
    """How a resumed run begins: an uncommitted reply to store first (after a crash), then its steps."""

    steps: tuple[RunStep | AnswerStep, ...]
    reply: AssistantTurn | None = None
    context: RunContext = RunContext()
    interrupted: frozenset[str] = frozenset()
    """Calls that may have started before a crash: re-run only if their tool is idempotent."""
    pause: int = 0
    """The stored pause whose decisions these steps carry out (0: none, or decided inline).

    Kept in the journal row of the decided turn, so that after a crash only
    that pause's decisions are replayed, never an older pause's.
    """


def plan_steps(
    pending: Sequence[PendingCall], decisions: Sequence[Decision], decided_by: str | None
) -> tuple[RunStep | AnswerStep, ...]:
    """Steps for already-checked decisions, in the order the calls are pending."""
    by_id = {d.call_id: d for d in decisions}
    steps: list[RunStep | AnswerStep] = []
    for waiting in pending:
        decision = by_id[waiting.call_id]
        original = ToolCall(waiting.call_id, waiting.tool, waiting.arguments)
        if isinstance(decision, Approve):
            if decision.arguments is not None and decision.arguments != waiting.arguments:
                note = ApprovalNote(
                    decision="approved_with_edits",
                    decided_by=decided_by,
                    original_arguments=waiting.arguments,
                    arguments=decision.arguments,
                )
                edited = ToolCall(waiting.call_id, waiting.tool, decision.arguments)
                steps.append(RunStep(edited, note.to_json()))
            else:
                note = ApprovalNote(decision="approved", decided_by=decided_by)
                steps.append(RunStep(original, note.to_json()))
        elif isinstance(decision, Deny):
            text = f"Tool {waiting.tool!r} was not run: the call was denied. {decision.message}".strip()
            note = ApprovalNote(decision="denied", decided_by=decided_by, message=decision.message)
            steps.append(AnswerStep(original, text, True, note.to_json()))
        else:
            assert isinstance(decision, Supply)
            note = ApprovalNote(decision="supplied", decided_by=decided_by)
            steps.append(AnswerStep(original, decision.result, decision.is_error, note.to_json()))
    return tuple(steps)


def interrupted_text(tool: str) -> str:
    return (
        f"Tool {tool!r} was interrupted: the run stopped while this call was running, so it may or may "
        "not have taken effect. It was not run again because the tool is not marked idempotent."
    )


def reply_to_json(reply: AssistantTurn) -> str:
    """A reply not stored yet, for the run journal: whatever its turn will need after a crash.

    Its parts too: a reasoning model's thinking must go back, verbatim, with
    the results of the calls a crashed run is resumed for.
    """
    usage = reply.usage
    parts: JSONObject = {"parts": parts_to_json(reply.parts)} if reply.parts else {}
    return canonical_json(
        {
            **parts,
            "text": reply.text,
            "tool_calls": [
                {"id": c.id, "name": c.name, "arguments": c.arguments_json()} for c in reply.tool_calls
            ],
            "usage": [
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_input_tokens,
                usage.model_calls,
                usage.cache_write_tokens,
                usage.reasoning_tokens,
            ],
            "finish_reason": reply.finish_reason,
        }
    )


def reply_from_json(text: str) -> AssistantTurn:
    data = cast("dict[str, JSONValue]", parse_canonical_json(text))
    calls = cast("list[dict[str, str]]", data["tool_calls"])
    usage = cast("list[int]", data["usage"])
    return AssistantTurn(
        text=str(data["text"]),
        tool_calls=tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in calls),
        usage=Usage(*usage),
        finish_reason=cast("FinishReason", data["finish_reason"]),
        parts=parts_from_json(data["parts"], "the journaled reply's parts") if "parts" in data else (),
    )
