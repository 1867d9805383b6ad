"""Provider-neutral conversation data: what flows between transcript, loop and adapters.

Adapters translate these to and from their wire formats; nothing above the
adapter layer ever sees a provider's own message shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, TypedDict

import attrs
from typing_extensions import Unpack

from .call_arguments import DecodedArguments, arguments_text, decode_arguments
from .jsontypes import JSONObject, JSONValue
from .parts import Content, Part, ReasoningPart, TextPart, as_parts, text_of
from .safetext import escape_surrogates, plain_text, safe_repr
from .usage import Usage

__all__ = [
    "AssistantTurn",
    "FinishReason",
    "Message",
    "Role",
    "ToolCall",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]


@attrs.frozen
class ToolCall:
    """One tool call requested by the model.

    ``arguments`` is whatever the provider gave: usually the raw JSON text
    (which may be malformed: the dispatcher reports that), sometimes a
    mapping (an object the provider's SDK already parsed). The call decodes
    them at most once (:attr:`decoded_arguments`) and encodes them at most
    once (:meth:`arguments_json`), and keeps both: the dispatcher, the
    tool-result pipeline, the transcript, the output store and the wire
    formats all read them from the call, so no consumer parses the
    arguments again. Neither cached value takes part in equality or ``repr``.
    """

    id: str
    name: str
    arguments: str | Mapping[str, JSONValue] = "{}"
    _decoded: DecodedArguments | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _text: str | None = attrs.field(default=None, init=False, eq=False, repr=False)

    @classmethod
    def parsed(cls, id: str, name: str, text: str) -> ToolCall:
        """A call whose arguments came as JSON text from a provider that hands over objects.

        The text is decoded here, once: a plain JSON object is kept as the
        object (as the provider's whole replies give it), anything else as
        the text, for the dispatcher to report; either way the call already
        holds its :attr:`decoded_arguments`.
        """
        decoded = decode_arguments(text)
        call = cls(id=id, name=name, arguments=decoded if isinstance(decoded, dict) else text)
        object.__setattr__(call, "_decoded", decoded)
        return call

    @property
    def decoded_arguments(self) -> DecodedArguments:
        """The arguments as a plain JSON object, or why they are not one (decoded on first use).

        The rules are :func:`weakprompt.call_arguments.decode_arguments`'s:
        blank text is ``{}``; ``NaN``, duplicate keys, over-long integers,
        lone surrogates and nesting deeper than 100 levels are refused with
        their path. The object is shared by every reader: do not change it.
        """
        decoded = self._decoded
        if decoded is None:
            decoded = decode_arguments(self.arguments)
            object.__setattr__(self, "_decoded", decoded)
        return decoded

    def arguments_json(self) -> str:
        """The arguments as JSON text: a string exactly as given, a mapping as compact JSON.

        The form the transcript counts tokens of, the output store records,
        the ``ToolInvoked`` event carries and OpenAI-style providers send.
        A mapping that is not plain JSON is written as well as it can be;
        this never raises.
        """
        text = self._text
        if text is None:
            raw = self.arguments
            text = raw if type(raw) is str else plain_text(raw)
            if text is None:  # a mapping (or worse): its decode, encoded
                text = arguments_text(raw, self.decoded_arguments)
            object.__setattr__(self, "_text", text)
        return text

    def storable(self) -> ToolCall:
        """This call as a transcript can store it (``self`` when it already is).

        Mapping arguments become their JSON text, keeping the decoded object,
        so recording them costs no second decode; a mapping that is not plain
        JSON becomes its best-effort text, which the dispatcher then refuses
        with the reason. Lone surrogates in the id, the name or the argument
        text become ``\\udXXX`` escapes, which inside a JSON string mean the
        same thing.
        """
        raw = self.arguments
        text = plain_text(raw)
        decoded: DecodedArguments | None = None
        if text is not None:
            arguments = escape_surrogates(text)
        else:
            arguments = self.arguments_json()
            decoded = self.decoded_arguments
        call_id, name = _storable_text(self.id), _storable_text(self.name)
        if arguments is raw and call_id is self.id and name is self.name:
            return self
        stored = ToolCall(id=call_id, name=name, arguments=arguments)
        if isinstance(decoded, dict):  # the text is this object's encoding: decoding it gives it back
            object.__setattr__(stored, "_decoded", decoded)
        return stored


def _storable_text(value: object) -> str:
    text = plain_text(value)
    return escape_surrogates(text) if text is not None else escape_surrogates(safe_repr(value))


# The usage of a turn whose author stated none (one shared, immutable value, so
# a test adapter can tell "not stated" from an explicit ``Usage()``).
_UNSTATED_USAGE = Usage()


@attrs.frozen
class AssistantTurn:
    """One model reply, translated out of the provider's format."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = _UNSTATED_USAGE
    finish_reason: FinishReason = "stop"
    metadata: JSONObject = attrs.field(factory=dict[str, JSONValue], eq=False, hash=False)
    """Facts about the reply for the record (which adapter answered, ...); the loop keeps
    them in the assistant commit's metadata. Not part of equality."""
    parts: tuple[Part, ...] = attrs.field(default=(), kw_only=True)
    """The reply's whole content in order when it holds more than text (reasoning, images);
    empty for a text-only reply. ``text`` is always the text of these parts."""

    def __attrs_post_init__(self) -> None:
        if self.parts and text_of(self.parts) != self.text:
            raise ValueError("a reply's text must be the text of its parts")

    @property
    def reasoning(self) -> tuple[ReasoningPart, ...]:
        """The reply's reasoning parts, in order."""
        return tuple(part for part in self.parts if isinstance(part, ReasoningPart))


class _MessageFields(TypedDict, total=False):
    tool_calls: tuple[ToolCall, ...]
    tool_call_id: str | None
    name: str | None
    is_error: bool
    metadata: JSONObject


@attrs.frozen
class Message:
    """One message of the compiled conversation.

    ``tool_call_id``/``name`` are set on tool results; ``is_error`` marks a
    failed tool result (Anthropic sends it as ``is_error``).
    """

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False
    metadata: JSONObject = attrs.field(factory=dict[str, JSONValue], eq=False, hash=False)
    parts: tuple[Part, ...] = attrs.field(default=(), kw_only=True)
    """The whole content in order when the message holds more than text (images,
    documents, reasoning); empty for a text-only message. ``content`` is always
    the text of these parts (:func:`weakprompt.parts.text_of`)."""

    def __attrs_post_init__(self) -> None:
        if self.parts and text_of(self.parts) != self.content:
            raise ValueError("a message's content must be the text of its parts (use Message.of)")

    @classmethod
    def of(cls, role: Role, content: Content, **fields: Unpack[_MessageFields]) -> Message:
        """A message from a string or from parts: ``content`` becomes their text."""
        parts = as_parts(content)
        if all(isinstance(part, TextPart) for part in parts):
            return cls(role=role, content=text_of(parts), **fields)
        return cls(role=role, content=text_of(parts), parts=parts, **fields)
