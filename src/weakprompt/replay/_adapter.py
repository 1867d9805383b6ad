"""The adapter of a replay: it answers with the recorded replies, after checking each request."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from ..canonical import canonical_json, content_hash
from ..messages import AssistantTurn, Message, Usage
from ..model import ModelEvent, ModelRequest, turn_events
from ..transcript import hash_tool_schema
from ..transcript.records import message_payload
from ._divergence import ReplayDivergence, section_at, short_diff

if TYPE_CHECKING:
    from ..jsontypes import JSONObject, JSONValue
    from ..prompt import RenderedPrompt
    from ..tokens import TokenCounter

__all__ = ["RecordedTurn", "ReplayAdapter"]


@attrs.frozen
class RecordedTurn:
    """One recorded model call: what was sent (messages, tool schemas) and the reply that came back."""

    messages: tuple[Message, ...]
    tools: tuple[JSONObject, ...]
    reply: Message
    usage: Usage = attrs.field(factory=lambda: Usage(model_calls=1))
    settings: JSONObject = attrs.field(factory=dict[str, "JSONValue"])
    """The model settings the call was made with, as recorded on its commit (empty: none recorded)."""
    sections: JSONObject | None = None
    """``{section path: text hash}`` of the system message sent (None: a session recorded before
    sections were kept; then the output schema is not known either)."""
    output_schema: str | None = None
    """The content hash of the output schema the call was made with (None: none, or not recorded)."""


def _sent(message: Message) -> str:
    """The bytes of a message that reach a provider: its blob content as canonical JSON."""
    return canonical_json(message_payload(message))


def _field_diff(recorded: JSONObject, replayed: JSONObject) -> str:
    """Which top-level fields of two tool schemas differ, each as a short diff."""
    parts: list[str] = []
    for key in sorted(set(recorded) | set(replayed)):
        before, after = recorded.get(key), replayed.get(key)
        if before != after:
            parts.append(f"{key}:\n{short_diff(canonical_json(before), canonical_json(after))}")
    return "\n".join(parts)


class ReplayAdapter:
    """A :class:`~weakprompt.model.ProviderAdapter` that serves a session's recorded replies, in order.

    Before answering it compares the request with the recorded one: the
    messages (each message's sent fields, as canonical JSON), then the tools
    offered (names, then each schema's hash), the output schema's hash and
    the model settings. The first difference raises
    :class:`ReplayDivergence`; the run stops there. ``sections`` gives the
    ``(path, text hash)`` of each section as rendered now, to name the
    section a system-text difference is in against the recorded hashes;
    ``render`` gives the prompt as rendered now, for a recording without
    them (the section is then found by its heading). It never calls a provider.
    """

    def __init__(
        self,
        turns: Sequence[RecordedTurn],
        *,
        render: Callable[[], RenderedPrompt[object]] | None = None,
        sections: Callable[[], Sequence[tuple[str, str]]] | None = None,
        name: str = "replay",
        model: str = "replay",
    ) -> None:
        self._turns = tuple(turns)
        self._render = render
        self._sections = sections
        self._name = name
        self._model = model
        self._served = 0
        self._lock = threading.Lock()
        # Each message's sent bytes and each schema's hash, worked out once: a call's messages are
        # the last call's and a few more, and the same tools are offered call after call.
        self._sent: dict[int, tuple[object, str]] = {}

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    @property
    def context_window(self) -> int | None:
        return None

    @property
    def token_counter(self) -> TokenCounter | None:
        return None

    @property
    def served(self) -> int:
        """How many recorded replies have been served."""
        return self._served

    @property
    def recorded(self) -> int:
        """How many replies the recording holds."""
        return len(self._turns)

    def complete(self, request: ModelRequest) -> AssistantTurn:
        with self._lock:
            turn = self._served + 1
            if turn > len(self._turns):
                raise self._extra_call(turn, request)
            recorded = self._turns[turn - 1]
            self._check(turn, recorded, request)
            self._served = turn
        reply = recorded.reply
        return AssistantTurn(
            text=reply.content,
            tool_calls=reply.tool_calls,
            usage=recorded.usage,
            finish_reason="tool_calls" if reply.tool_calls else "stop",
        )

    async def complete_async(self, request: ModelRequest) -> AssistantTurn:
        return self.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        for event in turn_events(self.complete(request)):
            yield event

    def _extra_call(self, turn: int, request: ModelRequest) -> ReplayDivergence:
        last = self._turns[-1].reply if self._turns else None
        if last is not None and not last.tool_calls and request.output_schema is not None:
            asked = request.context.messages[-1].content if request.context.messages else ""
            return ReplayDivergence(
                turn=turn,
                kind="output",
                summary=(
                    f"the recorded final answer was refused by the output type "
                    f"{request.output_name or 'of the prompt'}; the run asked the model again"
                ),
                diff=short_diff(last.content, asked),
            )
        return ReplayDivergence(
            turn=turn,
            kind="turns",
            summary=f"the run made model call {turn}; the recording has {len(self._turns)}",
        )

    def _check(self, turn: int, recorded: RecordedTurn, request: ModelRequest) -> None:
        sent = request.context.messages
        for index in range(max(len(sent), len(recorded.messages))):
            before = recorded.messages[index] if index < len(recorded.messages) else None
            after = sent[index] if index < len(sent) else None
            if before is not None and after is not None and self._bytes(before) == self._bytes(after):
                continue
            raise self._message_divergence(turn, index, before, after, recorded.sections)
        self._check_tools(turn, recorded.tools, request)
        _check_output(turn, recorded, request)
        _check_settings(turn, recorded.settings, request)

    def _bytes(self, message: Message) -> str:
        kept = self._sent.get(id(message))
        if kept is not None and kept[0] is message:
            return kept[1]
        text = _sent(message)
        self._sent[id(message)] = (message, text)  # the message is kept, so its id is not reused
        return text

    def _hash(self, schema: JSONObject) -> str:
        kept = self._sent.get(id(schema))
        if kept is not None and kept[0] is schema:
            return kept[1]
        digest = hash_tool_schema(schema)
        self._sent[id(schema)] = (schema, digest)
        return digest

    def _message_divergence(
        self,
        turn: int,
        index: int,
        before: Message | None,
        after: Message | None,
        recorded_sections: JSONObject | None,
    ) -> ReplayDivergence:
        if before is None or after is None:
            present = after if before is None else before
            assert present is not None
            where = "the replayed request has" if before is None else "the replayed request lacks"
            return ReplayDivergence(
                turn=turn,
                kind="message",
                summary=f"{where} message {index} ({present.role})",
                message_index=index,
                role=present.role,
                diff=short_diff(present.content, "")
                if before is not None
                else short_diff("", present.content),
            )
        if before.role == after.role == "system" and recorded_sections is not None and self._sections:
            changed = _changed_section(recorded_sections, self._sections())
            if changed is not None:
                path, old, new = changed
                what = (
                    "is new: it is not in"
                    if old is None
                    else "is gone from"
                    if new is None
                    else "differs from its text in"
                )
                return ReplayDivergence(
                    turn=turn,
                    kind="section",
                    summary=f"the text of section {path!r} {what} the recorded system message",
                    section_path=path,
                    section_hash=new,
                    recorded_hash=old,
                    replayed_hash=new,
                    message_index=index,
                    role="system",
                    diff=short_diff(before.content, after.content),
                )
        if before.role == after.role == "system" and self._render is not None:
            found = section_at(self._render(), before.content, after.content)
            if found is not None:
                path, digest = found
                return ReplayDivergence(
                    turn=turn,
                    kind="section",
                    summary=f"the text of section {path!r} differs from the recorded system message",
                    section_path=path,
                    section_hash=digest,
                    message_index=index,
                    role="system",
                    diff=short_diff(before.content, after.content),
                )
        if before.content != after.content or before.role != after.role:
            diff = short_diff(before.content, after.content)
        else:
            diff = short_diff(_sent(before), _sent(after))
        return ReplayDivergence(
            turn=turn,
            kind="message",
            summary=f"message {index} ({after.role}) differs from the recorded one",
            message_index=index,
            role=after.role,
            diff=diff,
        )

    def _check_tools(self, turn: int, recorded: tuple[JSONObject, ...], request: ModelRequest) -> None:
        offered = tuple(tool.spec() for tool in request.tools)
        before_names = [str(schema.get("name")) for schema in recorded]
        after_names = [str(schema.get("name")) for schema in offered]
        if before_names != after_names:
            gone = [name for name in before_names if name not in after_names]
            new = [name for name in after_names if name not in before_names]
            detail = "; ".join(
                part
                for part in (
                    f"no longer offered: {', '.join(gone)}" if gone else "",
                    f"newly offered: {', '.join(new)}" if new else "",
                    "" if gone or new else "the same tools in another order",
                )
                if part
            )
            raise ReplayDivergence(
                turn=turn,
                kind="tools",
                summary=f"the tools offered differ ({detail})",
                tool_name=(gone or new or [None])[0],
                diff=short_diff(", ".join(before_names), ", ".join(after_names)),
            )
        for before, after in zip(recorded, offered, strict=True):
            old, new_hash = self._hash(before), self._hash(after)
            if old != new_hash:
                name = str(after.get("name"))
                raise ReplayDivergence(
                    turn=turn,
                    kind="tool",
                    summary=f"the schema of tool {name!r} differs from the recorded one",
                    tool_name=name,
                    recorded_hash=old,
                    replayed_hash=new_hash,
                    diff=_field_diff(before, after),
                )


def _changed_section(
    recorded: JSONObject, now: Sequence[tuple[str, str]]
) -> tuple[str, str | None, str | None] | None:
    """The first section whose text hash differs: ``(path, recorded hash, hash now)`` (None: not there).

    Sections rendered now are taken in their order, then the recorded ones no longer rendered.
    """
    for path, digest in now:
        old = recorded.get(path)
        if old != digest:
            return path, old if isinstance(old, str) else None, digest
    present = {path for path, _ in now}
    for path, old in recorded.items():
        if path not in present:
            return path, old if isinstance(old, str) else None, None
    return None


def _check_output(turn: int, recorded: RecordedTurn, request: ModelRequest) -> None:
    """The output schema's hash must be the recorded one (when the recording kept it)."""
    if recorded.sections is None:  # recorded before the output schema's hash was kept
        return
    schema = request.output_schema
    now = None if schema is None else content_hash(schema)
    if now != recorded.output_schema:
        name = request.output_name or "of the prompt"
        raise ReplayDivergence(
            turn=turn,
            kind="output",
            summary=(
                f"the output schema {name} differs from the recorded one"
                if now is not None and recorded.output_schema is not None
                else f"the recorded call {'had no' if now is not None else 'had an'} output schema; "
                f"the replayed one {'has' if now is not None else 'has none'}"
            ),
            recorded_hash=recorded.output_schema,
            replayed_hash=now,
        )


def _check_settings(turn: int, recorded: JSONObject, request: ModelRequest) -> None:
    """Each model setting the replayed request sets must have the recorded value.

    The recording holds the settings used, the recorded adapter's defaults
    merged in; those defaults are not known apart, so a setting only the
    recording has is not a difference.
    """
    for key, value in request.settings.to_json().items():
        if key not in recorded or recorded[key] != value:
            was = canonical_json(recorded[key]) if key in recorded else "not set"
            raise ReplayDivergence(
                turn=turn,
                kind="settings",
                summary=f"model setting {key!r} is {canonical_json(value)}; the recording used {was}",
                setting=key,
            )
