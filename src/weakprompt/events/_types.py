"""The framework's own events: frozen records of what happened, for subscribers.

Events are plain values. They are built once by whoever observed the fact
(the tool dispatcher, the prompt renderer, the evaluation loop) and never
change afterwards, so every subscriber sees the same record.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Literal

import attrs

from ..messages import ToolCall, Usage

if TYPE_CHECKING:
    from ..tools import ToolResult

__all__ = [
    "PendingKind",
    "PromptExecuted",
    "PromptRendered",
    "ToolInvoked",
    "ToolResultStored",
    "new_event_id",
]


PendingKind = Literal["approval", "deferred"]
"""Why a call waits: a person's approval, or a handler that deferred its result."""

_VERSION_MASK = ~(0xF000 << 64) & ~(0xC000 << 48)
_VERSION_4 = (4 << 76) | (0x8000 << 48)


def new_event_id() -> str:
    """A fresh random identifier in uuid4 form; events are told apart by it.

    Built from ``random.getrandbits`` (reseeded in forked children) rather
    than ``uuid.uuid4()``: ids must be unique, not secret, and this runs for
    every tool call.
    """
    from random import getrandbits  # here, on first use: importing the events stays cheap

    h = f"{getrandbits(128) & _VERSION_MASK | _VERSION_4:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@attrs.frozen(kw_only=True)
class ToolInvoked:
    """One tool call finished, successfully or not.

    Published exactly once per call by the tool dispatcher, after any state
    rollback, so subscribers see the session as it stays. ``params`` is
    ``None`` when the arguments could not be parsed; ``arguments`` keeps the
    raw JSON text the model sent, for debugging such failures.
    """

    prompt_name: str
    adapter: str
    name: str
    params: object | None
    result: ToolResult[object]
    call_id: str
    session_id: str | None
    started_at: datetime
    finished_at: datetime
    usage: Usage | None = None
    arguments: str = ""
    event_id: str = attrs.field(factory=new_event_id)

    @property
    def success(self) -> bool:
        """Whether the tool call succeeded (mirrors ``result.success``)."""
        return self.result.success


@attrs.frozen(kw_only=True)
class PromptRendered:
    """A prompt was rendered into the text and tool set a model will see.

    ``tool_names`` and ``tool_hashes`` run in parallel: the content hash of
    each tool's schema, in declaration order. ``section_hashes`` names each
    section in the text, in order, with the hash of its own text (what a
    replay compares).
    """

    prompt_ns: str
    prompt_key: str
    prompt_name: str | None
    text: str
    tool_names: tuple[str, ...]
    tool_hashes: tuple[str, ...]
    session_id: str | None
    created_at: datetime
    section_hashes: tuple[tuple[str, str], ...] = ()
    event_id: str = attrs.field(factory=new_event_id)

    def __attrs_post_init__(self) -> None:
        if len(self.tool_names) != len(self.tool_hashes):
            raise ValueError(
                f"PromptRendered: {len(self.tool_names)} tool names but "
                f"{len(self.tool_hashes)} tool hashes; they must pair up one to one"
            )


@attrs.frozen(kw_only=True)
class PromptExecuted:
    """An evaluation finished with a final answer.

    ``output`` is the parsed structured output when the prompt declares an
    output type, otherwise the final text; ``usage`` adds up every model call.
    """

    prompt_name: str
    adapter: str
    text: str
    output: object
    usage: Usage
    turns: int
    session_id: str | None
    created_at: datetime
    event_id: str = attrs.field(factory=new_event_id)


@attrs.frozen(kw_only=True)
class ToolResultStored:
    """A tool call's result is stored: the one event of its storage (``ToolInvoked`` is its finish).

    In a run it comes once the turn holding the result's commit is stored
    (one transaction: the commit and, when the output went to the output
    store, that output), on the session's bus and in the run's stream
    alike, for every result (``open_sections`` answers too). ``content`` is
    exactly the text the model reads (after any ``tool_result`` hook) and
    ``commit_hash`` the stored commit.

    The stored-output fields are set when the output went to the output
    store: ``handle`` (the same for every call of the session that returned
    the same bytes), ``size_bytes``; ``oversized`` says the model was shown
    the handle message instead of the output; ``deduplicated`` that the
    payload was stored already, so only the small per-call row was written.

    A bare ``ToolOutputStore`` given a bus (no run, no transcript) publishes
    it for each output it stores: no commit then, so ``commit_hash`` is
    ``None``, ``content`` empty and ``turn`` 0.
    """

    session_id: str
    call: ToolCall
    created_at: datetime
    prompt_name: str = ""
    turn: int = 0
    content: str = ""
    is_error: bool = False
    commit_hash: str | None = None
    handle: str | None = None
    size_bytes: int | None = None
    oversized: bool = False
    deduplicated: bool = False
    event_id: str = attrs.field(factory=new_event_id)

    @property
    def tool_call_id(self) -> str:
        """The call's id (``call.id``)."""
        return self.call.id

    @property
    def tool_name(self) -> str:
        """The tool's name (``call.name``)."""
        return self.call.name
