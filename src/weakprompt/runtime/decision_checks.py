"""Checking decisions against the calls a pause stored: exactly the calls a person saw, each once.

Used by ``resume`` (and ``check_decisions_for``) before anything is
written, and by ``runtime.pausing`` for decisions an ``approve=`` callback
makes inline (``specs/APPROVAL.md``).
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..canonical import canonical_json, content_hash
from ..jsontypes import JSONObject
from ..serde import SerdeError
from .approval import (
    APPROVAL_KEY_ENV,
    Approve,
    Decision,
    Deny,
    PausedRun,
    PendingCall,
    ResumeError,
    Supply,
    sign_pending,
)

if TYPE_CHECKING:
    from ..tools import AnyTool

__all__ = ["check_decisions", "check_stored_tokens", "same_token", "schema_hashes"]


def schema_hashes(tools: Sequence[AnyTool], names: Sequence[str], hashes: Sequence[str]) -> dict[str, str]:
    """Schema hash per tool name: the rendered ones, and the spec hash of any other tool offered."""
    known = dict(zip(names, hashes, strict=True))
    return {t.name: known.get(t.name) or content_hash(t.spec()) for t in tools}


def check_decisions(
    paused: PausedRun,
    decisions: Sequence[Decision],
    tools: Mapping[str, AnyTool] | None,
    hashes: Mapping[str, str] | None,
    *,
    store_id: str,
    key: bytes | None,
) -> None:
    """Refuse (:class:`ResumeError`) decisions that do not match the stored pending calls exactly.

    Each pending call is checked against its own token first (a stored row
    edited by hand fails; with an approval key, even one whose token was
    recomputed), then against the tool as the prompt defines it now (a
    changed tool fails), then the decisions: one per pending call, with its
    token, of a kind that fits, and edited arguments that validate.
    Without the prompt's ``tools`` and ``hashes`` (``None``: a check before
    queueing a resume elsewhere) the checks that need them are left out.
    """
    where = f"pause {paused.seq} of session {paused.session_id!r}"
    by_id: dict[str, PendingCall] = {}
    check_stored_tokens(paused, store_id=store_id, key=key)
    for waiting in paused.pending:
        if tools is not None and hashes is not None:
            _check_tool_unchanged(where, waiting, tools, hashes)
        if waiting.call_id in by_id:
            raise ResumeError(
                f"{where}: two stored calls have the id {waiting.call_id!r}: the row is damaged"
            )
        by_id[waiting.call_id] = waiting
    seen: set[str] = set()
    for decision in decisions:
        if not isinstance(decision, (Approve, Deny, Supply)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ResumeError(f"{where}: {decision!r} is not an Approve, Deny or Supply decision")
        waiting = by_id.get(decision.call_id)
        if waiting is None:
            raise ResumeError(
                f"{where}: no pending call {decision.call_id!r} (pending: {', '.join(by_id) or 'none'})"
            )
        if decision.call_id in seen:
            raise ResumeError(f"{where}: call {decision.call_id!r} is decided twice")
        seen.add(decision.call_id)
        if not same_token(decision.token, waiting.token):
            raise ResumeError(
                f"{where}: the token for call {decision.call_id!r} does not match: it was made for "
                "other arguments, another call, pause, session or store, or another tool definition"
            )
        if isinstance(decision, Approve):
            if waiting.kind == "deferred":
                raise ResumeError(
                    f"{where}: call {decision.call_id!r} is deferred: supply its result (Supply)"
                )
            if decision.arguments is not None and tools is not None:
                _check_arguments(where, waiting, decision.arguments, tools[waiting.tool])
    missing = [call_id for call_id in by_id if call_id not in seen]
    if missing:
        raise ResumeError(f"{where}: no decision for pending call(s) {', '.join(missing)}")


def _check_tool_unchanged(
    where: str, waiting: PendingCall, tools: Mapping[str, AnyTool], hashes: Mapping[str, str]
) -> None:
    if waiting.tool not in tools:
        raise ResumeError(
            f"{where}: the prompt no longer offers tool {waiting.tool!r} (call {waiting.call_id!r})"
        )
    if hashes.get(waiting.tool) != waiting.schema_hash:
        raise ResumeError(
            f"{where}: tool {waiting.tool!r} changed since the pause (schema hash "
            f"{waiting.schema_hash[:12]} was shown for call {waiting.call_id!r}); pause a new run"
        )


def same_token(given: object, expected: str) -> bool:
    """Compare tokens in constant time (any text, even a value that is not text, compares)."""
    text = given if isinstance(given, str) else repr(given)
    return hmac.compare_digest(
        text.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass")
    )


def check_stored_tokens(paused: PausedRun, *, store_id: str, key: bytes | None) -> None:
    """Refuse a pause whose stored calls do not match their own tokens (edited, or another key)."""
    signed = sign_pending(
        paused.pending, store_id=store_id, session_id=paused.session_id, seq=paused.seq, key=key
    )
    for waiting, expected in zip(paused.pending, signed, strict=True):
        if not same_token(expected.token, waiting.token):
            state = "set" if key is not None else "not set"
            raise ResumeError(
                f"pause {paused.seq} of session {paused.session_id!r}: the stored call {waiting.call_id!r} "
                "does not match its token: the row was altered, or the pause was made with another "
                f"approval key ({APPROVAL_KEY_ENV} is {state} here)"
            )


def _check_arguments(where: str, waiting: PendingCall, arguments: JSONObject, tool: AnyTool) -> None:
    try:
        if not isinstance(arguments, dict):  # pyright: ignore[reportUnnecessaryIsInstance]  # caller's value
            raise TypeError("not an object")
        canonical_json(arguments)
        tool.parse_arguments(arguments)
    except SerdeError as exc:
        raise ResumeError(
            f"{where}: the edited arguments for call {waiting.call_id!r} are invalid: {exc}"
        ) from exc
    except (TypeError, ValueError) as exc:
        raise ResumeError(
            f"{where}: the edited arguments for call {waiting.call_id!r} are not a JSON object: {exc}"
        ) from exc
