"""Judging a final answer: parse it as the output type, then ask the run's output validators.

The verdict is reached before the reply is recorded, so a rejected answer
is stored with why it was rejected (:data:`OUTPUT_REJECTED` in its commit's
metadata) and the store can tell a run that ended on one from a run that
finished (``inspector.status``). The loop then gives the model a corrective
turn (:func:`reject_output`) or raises the rejection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Generic, Never, TypeAlias, TypeVar, cast

import attrs

from ..errors import OutputParseError, OutputValidationError
from . import loop_messages
from .loop_events import OutputRejected

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from .evaluation import Evaluation

__all__ = [
    "OUTPUT_CORRECTION",
    "OUTPUT_REJECTED",
    "PARSE",
    "AnyOutputValidator",
    "OutputValidator",
    "Verdict",
    "judge",
    "reject_output",
    "validator_name",
]

T = TypeVar("T")
OutputT = TypeVar("OutputT")

OutputValidator: TypeAlias = Callable[[T], Awaitable[None] | None]
"""A check of the typed final answer: returns (or awaits to) ``None`` to accept it, raises
:class:`~weakprompt.errors.OutputValidationError` with a reason for the model to reject it."""

AnyOutputValidator: TypeAlias = Callable[[Never], Awaitable[None] | None]
"""A validator of some output type, as the run's settings keep it (the prompt fixes the type)."""

OUTPUT_REJECTED = "output_rejected"
"""Metadata key of a rejected final answer's commit: ``{"by": ..., "reason": ...}``."""

OUTPUT_CORRECTION = "output_correction"
"""Metadata key of the corrective user commit after a rejection: ``{"by": ..., "corrects": hash}``."""

PARSE = "parse"
"""``by`` of a rejection for an answer that did not parse as the output type."""


@attrs.frozen
class Verdict(Generic[OutputT]):
    """The typed answer, or why it was rejected and by whom (:data:`PARSE` or a validator's name)."""

    output: OutputT | None = None
    rejection: OutputParseError | OutputValidationError | None = None
    by: str = ""

    def metadata(self) -> JSONObject | None:
        """What the reply's commit records about the rejection (``None`` when accepted)."""
        if self.rejection is None:
            return None
        return {OUTPUT_REJECTED: {"by": self.by, "reason": str(self.rejection)}}


def validator_name(validator: object) -> str:
    """The validator's qualified name, as stored with its rejections."""
    name = getattr(validator, "__qualname__", None) or type(validator).__qualname__
    return str(name)


async def judge(evaluation: Evaluation[OutputT], text: str) -> Verdict[OutputT]:
    """Parse ``text`` as the render's output type, then run each validator in order until one rejects.

    A validator that raises anything but ``OutputValidationError`` ends the
    run with that error (the reply is not stored: a defect, not the model's).
    """
    try:
        output = evaluation.rendered.parse_output(text)
    except OutputParseError as exc:
        return Verdict(rejection=exc, by=PARSE)
    for validator in evaluation.settings.output_validators:
        check = cast("OutputValidator[OutputT]", validator)
        try:
            returned = check(output)
            if isinstance(returned, Awaitable):
                await cast("Awaitable[object]", returned)
        except OutputValidationError as exc:
            return Verdict(rejection=exc, by=validator_name(validator))
    return Verdict(output=output)


def reject_output(
    evaluation: Evaluation[OutputT], text: str, verdict: Verdict[OutputT], *, turns_left: bool
) -> None:
    """Give the model a corrective turn for a rejected answer, or raise the rejection if none is left.

    Parse failures and validators' rejections share ``output_retries``;
    the corrective commit names who rejected and the reply it corrects.
    Runs on the run's store work (it writes the corrective commit).
    """
    error = verdict.rejection
    assert error is not None  # only a rejection is handed here
    retrying = turns_left and evaluation.retries_used < evaluation.settings.output_retries
    session = evaluation.session
    evaluation.publish(
        OutputRejected(
            prompt_name=evaluation.name,
            turn=evaluation.turns,
            text=text,
            errors=str(error),
            retrying=retrying,
            session_id=session.session_id,
            created_at=session.clock.now(),
        )
    )
    if not retrying:
        if evaluation.retries_used:
            error.add_note(f"the model already had {evaluation.retries_used} corrective turn(s)")
        elif not turns_left:
            error.add_note("no model call was left under max_turns for a corrective turn")
        raise error
    evaluation.retries_used += 1
    name, schema = evaluation.rendered.output_name, evaluation.rendered.output_schema
    correction = (
        loop_messages.output_correction(str(error), name, schema)
        if isinstance(error, OutputParseError)
        else loop_messages.output_rejection(error.reason, name)
    )
    provenance: JSONObject = {"by": verdict.by, "corrects": evaluation.head}
    evaluation.head = evaluation.transcript.user(correction, metadata={OUTPUT_CORRECTION: provenance}).hash
    evaluation.written.add(evaluation.head)
