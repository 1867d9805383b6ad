"""Commits as the transcript sees them, and how they are encoded and hashed.

A commit hash covers what the commit *says* and where it sits: the session,
the parent commit, the operation and edit target, the content blob, the
commit message and the metadata. It does not cover the linked tools (tools
are provenance next to the chain, never part of it), the token count (it
depends on the counter in use) or the time.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING

import attrs

from ..canonical import canonical_json, content_hash, find_surrogate
from ..errors import TranscriptError
from ..jsontypes import JSONLike, JSONObject, JSONValue
from ..messages import Message, Role, ToolCall, Usage
from ..parts import DocumentPart, ImagePart, Part
from ..tokens import TokenCounter, anthropic_image_tokens, image_size, openai_image_tokens
from .part_codec import PartBlobs, parts_from_json, parts_to_json

if TYPE_CHECKING:
    from ..store.commit_rows import CommitRow

__all__ = [
    "HASH_FORMAT_VERSION",
    "CommitInfo",
    "CommitOperation",
    "commit_hash",
    "commit_info",
    "label_text",
    "message_from_payload",
    "message_payload",
    "message_tokens",
    "metadata_text",
    "usage_metadata",
]

HASH_FORMAT_VERSION = 1
"""Bumped if the hashed fields ever change, so old and new hashes never collide."""

_SURROGATES = re.compile("[\ud800-\udfff]")

_ROLES: dict[str, Role] = {"system": "system", "user": "user", "assistant": "assistant", "tool": "tool"}


class CommitOperation(enum.StrEnum):
    """APPEND adds a message at the end; EDIT replaces an earlier one in the compiled view."""

    APPEND = "APPEND"
    EDIT = "EDIT"


@attrs.frozen
class CommitInfo:
    """One stored commit: its content as a :class:`Message` plus provenance.

    ``text`` is the commit's text (``content.content``); ``message`` is the
    commit message, as in version control (``None`` when none was given),
    never the chat message, which is ``content``. ``edit_target`` of an EDIT
    is always the APPEND commit whose position it takes (an edit of an edit
    is recorded against the original). ``content.metadata`` is the commit's
    metadata.
    """

    hash: str
    session_id: str
    seq: int
    parent: str | None
    operation: CommitOperation
    edit_target: str | None
    content: Message
    message: str | None
    metadata: JSONObject
    token_count: int
    created_at: datetime
    blob_hash: str

    @property
    def role(self) -> Role:
        return self.content.role

    @property
    def text(self) -> str:
        """The commit's text: what the message says (``content.content``)."""
        return self.content.content

    @property
    def usage(self) -> Usage | None:
        """Provider-reported usage recorded on an assistant commit, if any."""
        raw = self.metadata.get("usage")
        if not isinstance(raw, dict):
            return None
        fields = attrs.fields_dict(Usage).keys()
        values = {k: v for k, v in raw.items() if k in fields and isinstance(v, int)}
        return Usage(**values)


def _json_text(value: JSONLike, what: str) -> str:
    try:
        return canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise TranscriptError(f"{what} is not JSON-serialisable: {exc}") from exc


def message_payload(message: Message) -> JSONObject:
    """The blob content of a message: every field that is sent, nothing else."""
    if message.role not in _ROLES:
        raise TranscriptError(f"unknown message role {message.role!r}")
    if not isinstance(message.content, str):
        raise TranscriptError(f"message content must be a string, got {type(message.content).__name__}")
    payload: JSONObject = {"role": message.role, "content": message.content}
    if message.tool_calls:
        calls: list[JSONValue] = []
        for call in message.tool_calls:
            arguments: JSONValue
            if isinstance(call.arguments, str):
                arguments = call.arguments
            else:
                arguments = dict(call.arguments)
                _json_text(arguments, f"the arguments of tool call {call.id!r} ({call.name})")
            calls.append({"id": call.id, "name": call.name, "arguments": arguments})
        payload["tool_calls"] = calls
    if message.tool_call_id is not None:
        payload["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        payload["name"] = message.name
    if message.is_error:
        payload["is_error"] = True
    if message.parts:
        payload["parts"] = parts_to_json(message.parts)
    return payload


def _str_or_none(value: JSONValue | None) -> str | None:
    return value if isinstance(value, str) else None


def message_from_payload(
    payload: JSONValue,
    metadata: JSONObject,
    *,
    tool_calls: tuple[ToolCall, ...] | None = None,
    blobs: PartBlobs | None = None,
) -> Message:
    """The message a stored payload holds; ``blobs``: the bytes of its parts by digest.

    ``tool_calls``, when given, are the calls the payload was built from
    and equal to what it holds (their fields are plain text): they are used
    as they are, so the decoded and encoded arguments they carry are kept.
    """
    if not isinstance(payload, dict):
        raise TranscriptError(f"stored message is not a JSON object: {payload!r}")
    raw_role = payload.get("role")
    role = _ROLES.get(raw_role) if isinstance(raw_role, str) else None
    if role is None:
        raise TranscriptError(f"stored message has an unknown role: {raw_role!r}")
    calls: list[ToolCall] = []
    raw_calls = payload.get("tool_calls") if tool_calls is None else None
    if isinstance(raw_calls, list):
        for raw in raw_calls:
            if isinstance(raw, dict):
                arguments = raw.get("arguments", "{}")
                calls.append(
                    ToolCall(
                        id=str(raw.get("id", "")),
                        name=str(raw.get("name", "")),
                        arguments=arguments if isinstance(arguments, (str, dict)) else "{}",
                    )
                )
    content = payload.get("content", "")
    raw_parts = payload.get("parts")
    return Message(
        role=role,
        content=content if isinstance(content, str) else "",
        parts=() if raw_parts is None else parts_from_json(raw_parts, "stored message parts", blobs or {}),
        tool_calls=tuple(calls) if tool_calls is None else tool_calls,
        tool_call_id=_str_or_none(payload.get("tool_call_id")),
        name=_str_or_none(payload.get("name")),
        is_error=payload.get("is_error") is True,
        metadata=metadata,
    )


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens of what is sent: the text, each tool call's name and arguments, and its images.

    An image of known pixel size counts by the larger of OpenAI's and
    Anthropic's documented rules, so a budget check never undercounts it;
    a text document counts as its text; anything else (a URL, a PDF) counts
    0 here and in the usage the provider reports.
    """
    total = counter.count(_countable(message.content))
    for call in message.tool_calls:
        total += counter.count(_countable(call.name)) + counter.count(_countable(call.arguments_json()))
    for part in message.parts:
        total += _part_tokens(part, counter)
    return total


def _part_tokens(part: Part, counter: TokenCounter) -> int:
    if not isinstance(part, ImagePart | DocumentPart) or part.data is None:
        return 0
    if isinstance(part, DocumentPart):
        if not part.media_type.startswith("text/"):
            return 0
        return counter.count(_countable(part.data.decode("utf-8", "replace")))
    size = image_size(part.data)
    if size is None:
        return 0
    return max(openai_image_tokens(*size), anthropic_image_tokens(*size))


def _countable(text: str) -> str:
    """``text`` with each lone surrogate as U+FFFD: a tokenizer may refuse one, and a count needs none."""
    if find_surrogate(text) is None:
        return text
    return _SURROGATES.sub("\ufffd", text)


def label_text(text: str) -> str:
    """``text`` made fit for a commit message, which is stored as plain text.

    For messages the transcript builds from a tool name, which the model
    chose: NUL is dropped and a lone surrogate is spelled as its escape
    (``\\ud800``), where a message given by the caller would be refused.
    """
    text = text.replace("\x00", "")
    if find_surrogate(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def metadata_text(metadata: Mapping[str, JSONValue]) -> str:
    """Canonical JSON of commit metadata, or a TranscriptError saying what is wrong."""
    return _json_text(dict(metadata), "commit metadata")


def commit_hash(
    *,
    session_id: str,
    parent: str | None,
    operation: CommitOperation,
    edit_target: str | None,
    blob_hash: str,
    message: str | None,
    metadata: JSONObject,
) -> str:
    return content_hash(
        {
            "v": HASH_FORMAT_VERSION,
            "session": session_id,
            "parent": parent,
            "operation": operation.value,
            "edit_target": edit_target,
            "content": blob_hash,
            "message": message,
            "metadata": metadata,
        }
    )


def usage_metadata(usage: Usage) -> JSONObject:
    """The usage as commit metadata; the counts most providers never report are written when set."""
    recorded: JSONObject = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_input_tokens": usage.cached_input_tokens,
        "model_calls": usage.model_calls,
    }
    if usage.cache_write_tokens:
        recorded["cache_write_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        recorded["reasoning_tokens"] = usage.reasoning_tokens
    return recorded


def commit_info(
    row: CommitRow, *, tool_calls: tuple[ToolCall, ...] | None = None, blobs: PartBlobs | None = None
) -> CommitInfo:
    """Decode a stored row; the message carries the commit metadata.

    ``tool_calls``: the calls the row was written from, if they are what a
    reader decodes (see :func:`message_from_payload`). ``blobs``: the bytes
    of the message's parts (see :func:`load_part_blobs`).
    """
    return CommitInfo(
        hash=row.hash,
        session_id=row.session_id,
        seq=row.seq,
        parent=row.parent_hash,
        operation=CommitOperation(row.operation),
        edit_target=row.edit_target,
        content=message_from_payload(row.content, row.metadata, tool_calls=tool_calls, blobs=blobs),
        message=row.message,
        metadata=row.metadata,
        token_count=row.token_count,
        created_at=row.created_at,
        blob_hash=row.blob_hash,
    )
