"""Paused runs, the calls they wait on, and the decisions that resume them (``specs/APPROVAL.md``).

A run pauses when a tool call needs a person's approval or a tool defers its
result. The pause lists each waiting call with an approval *token* that
binds a decision to that one call of that one pause: the store's id, the
session, the pause's number, the call id, the tool's schema hash and the
canonical arguments. With an approval key (``WEAKPROMPT_APPROVAL_KEY``) the
token is an HMAC under that key, which is never stored: whoever can edit
the database but does not hold the key cannot make a token for other
arguments. Without a key the token is a plain hash, which catches
mistakes (a decision meant for another call, a stale token) but not
someone who can write to the store.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias, cast

import attrs

from ..canonical import canonical_json, parse_canonical_json
from ..errors import ConfigurationError
from ..events import PendingCall
from ..jsontypes import JSONObject, JSONValue
from ..lazy import lazy_exports
from .pause_errors import PendingKind, ResumeError, ToolCallPending

__all__ = [
    "APPROVAL_KEY_ENV",
    "Approve",
    "Decision",
    "Deny",
    "InlineApprover",
    "PausedRun",
    "PendingCall",
    "PendingKind",
    "ResumeError",
    "Supply",
    "ToolCallPending",
    "approval_key",
    "approval_token",
    "decisions_from_json",
    "decisions_to_json",
    "pending_from_json",
    "pending_to_json",
    "sign_pending",
]


APPROVAL_KEY_ENV = "WEAKPROMPT_APPROVAL_KEY"
"""The environment variable holding the key approval tokens are signed with."""

_MIN_KEY_BYTES = 16


def approval_key() -> bytes | None:
    """The approval key from ``WEAKPROMPT_APPROVAL_KEY`` (its UTF-8 bytes), or ``None``: unkeyed tokens.

    Read when a pause is written and when it is resumed, so both sides must
    see the same key. A key shorter than 16 bytes is refused.
    """
    text = os.environ.get(APPROVAL_KEY_ENV, "")
    if not text:
        return None
    key = text.encode("utf-8", "surrogateescape")
    if len(key) < _MIN_KEY_BYTES:
        raise ConfigurationError(
            f"{APPROVAL_KEY_ENV} is {len(key)} bytes long; an approval key needs at least "
            f"{_MIN_KEY_BYTES} (for instance 64 hex digits from secrets.token_hex(32))"
        )
    return key


def approval_token(
    *,
    store_id: str,
    session_id: str,
    seq: int,
    call_id: str,
    schema_hash: str,
    arguments: JSONObject,
    key: bytes | None,
) -> str:
    """The token a decision must carry: binds it to one store, session, pause, call, tool and arguments.

    HMAC-SHA256 under ``key`` when there is one; a plain SHA-256 otherwise
    (anyone who can read the pause can make that one).
    """
    body = canonical_json(
        {
            "store": store_id,
            "session": session_id,
            "pause": seq,
            "call": call_id,
            "schema": schema_hash,
            "arguments": arguments,
        }
    ).encode("utf-8")
    if key is None:
        return hashlib.sha256(body).hexdigest()
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def sign_pending(
    pending: Sequence[PendingCall], *, store_id: str, session_id: str, seq: int, key: bytes | None
) -> tuple[PendingCall, ...]:
    """``pending`` with each call's token made for this store, session and pause."""
    return tuple(
        attrs.evolve(
            waiting,
            token=approval_token(
                store_id=store_id,
                session_id=session_id,
                seq=seq,
                call_id=waiting.call_id,
                schema_hash=waiting.schema_hash,
                arguments=waiting.arguments,
                key=key,
            ),
        )
        for waiting in pending
    )


@attrs.frozen
class PausedRun:
    """A run stopped for decisions, as stored: continue it with :func:`~.resume.resume_sync`."""

    session_id: str
    seq: int
    """Which pause of the session this is (1 for the first)."""
    head: str | None
    """The transcript head when the run paused."""
    pending: tuple[PendingCall, ...]


@attrs.frozen
class Approve:
    """Run the call; with ``arguments``, run it with those instead (re-validated, recorded as an edit)."""

    call_id: str
    token: str
    arguments: JSONObject | None = None


@attrs.frozen
class Deny:
    """Do not run the call: the model reads a failed result with ``message``, and the run goes on."""

    call_id: str
    token: str
    message: str = "The user did not allow this call."


@attrs.frozen
class Supply:
    """The result of a deferred call (or of an approval call answered by hand), as the model will read it."""

    call_id: str
    token: str
    result: str
    is_error: bool = False


Decision: TypeAlias = Approve | Deny | Supply

InlineApprover: TypeAlias = Callable[[PausedRun], Sequence[Decision] | Awaitable[Sequence[Decision]]]
"""``approve=`` of a run: decides, inline, the calls the run would otherwise pause on.

Which calls wait is the tools' :data:`~weakprompt.tools.ApprovalPolicy`
(``requires_approval=``); an inline approver only answers them, in the run,
instead of a pause and a :func:`~weakprompt.runtime.resume.resume_sync`.
"""


def pending_to_json(pending: Sequence[PendingCall]) -> str:
    return canonical_json([p.to_json() for p in pending])


def pending_from_json(text: str) -> tuple[PendingCall, ...]:
    """Read stored pending calls; a row someone edited into another shape is refused."""
    try:
        data = parse_canonical_json(text)
        if not isinstance(data, list):
            raise TypeError("not a list")
        calls: list[PendingCall] = []
        for item in data:
            entry = cast("JSONObject", item)
            kind = entry["kind"]
            if kind not in ("approval", "deferred"):
                raise ValueError(f"unknown kind {kind!r}")
            arguments = entry["arguments"]
            if not isinstance(arguments, dict):
                raise TypeError("arguments are not an object")
            calls.append(
                PendingCall(
                    call_id=str(entry["call_id"]),
                    tool=str(entry["tool"]),
                    kind=kind,
                    arguments=arguments,
                    schema_hash=str(entry["schema_hash"]),
                    token=str(entry["token"]),
                    note=str(entry.get("note", "")),
                )
            )
    except (ValueError, TypeError, KeyError) as exc:
        raise ResumeError(f"the stored pending calls are damaged: {exc}") from exc
    return tuple(calls)


def _decision_json(decision: Decision) -> JSONObject:
    if isinstance(decision, Approve):
        return {
            "decision": "approve",
            "call_id": decision.call_id,
            "token": decision.token,
            "arguments": decision.arguments,
        }
    if isinstance(decision, Deny):
        return {
            "decision": "deny",
            "call_id": decision.call_id,
            "token": decision.token,
            "message": decision.message,
        }
    return {
        "decision": "supply",
        "call_id": decision.call_id,
        "token": decision.token,
        "result": decision.result,
        "is_error": decision.is_error,
    }


def decisions_to_json(decisions: Sequence[Decision]) -> str:
    return canonical_json([_decision_json(d) for d in decisions])


def decisions_from_json(text: str) -> tuple[Decision, ...]:
    data = parse_canonical_json(text)
    if not isinstance(data, list):
        raise ResumeError("the stored decisions are damaged: not a list")
    decisions: list[Decision] = []
    for item in data:
        entry = cast("dict[str, JSONValue]", item)
        kind, call_id, token = entry.get("decision"), str(entry.get("call_id")), str(entry.get("token"))
        if kind == "approve":
            arguments = entry.get("arguments")
            decisions.append(Approve(call_id, token, arguments if isinstance(arguments, dict) else None))
        elif kind == "deny":
            decisions.append(Deny(call_id, token, str(entry.get("message", ""))))
        elif kind == "supply":
            decisions.append(
                Supply(call_id, token, str(entry.get("result", "")), entry.get("is_error") is True)
            )
        else:
            raise ResumeError(f"the stored decisions are damaged: unknown decision {kind!r}")
    return tuple(decisions)


# ``Approver`` was the inline approver's name; it says too little beside ``tools.ApprovalPolicy``
# (which decides that a call waits), so it warns for one release.
__getattr__ = lazy_exports(__name__, {}, __all__, renamed={"Approver": "InlineApprover"})[0]
