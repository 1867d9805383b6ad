"""Images and documents on each provider's wire: the content blocks a message's parts become.

The wire modules call these only for messages that hold an image or a
document, so a text-only conversation is encoded exactly as before. Each
provider takes a different subset; what one cannot take is sent as a short
placeholder text naming the part (kind, name, media type, size), never
dropped silently and never as base64 text. Reasoning parts are not encoded
here (their replay rule lives with the reasoning encoding).

Tool results: Anthropic and the OpenAI Responses API take images (and
documents) inside a tool result; Chat Completions takes only text in a
``tool`` message, so the images follow in one ``user`` message after the
tool results (:func:`chat_tool_followup`); Gemini takes them as parts of the
same user turn, after the function responses.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import ConfigurationError
from ...jsontypes import JSONObject, JSONValue
from ...messages import Message
from ...parts import DocumentPart, ImagePart, Part, TextPart

if TYPE_CHECKING:
    from google.genai import types

__all__ = [
    "anthropic_content",
    "chat_content",
    "chat_tool_followup",
    "chat_tool_text",
    "gemini_content_parts",
    "gemini_media_parts",
    "has_media",
    "media_of",
    "placeholder",
    "refuse_media",
    "responses_content",
]

Media = ImagePart | DocumentPart

_ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_PDF = "application/pdf"


def media_of(message: Message) -> tuple[Media, ...]:
    """The images and documents of a message, in order."""
    return tuple(part for part in message.parts if isinstance(part, ImagePart | DocumentPart))


def has_media(message: Message) -> bool:
    return any(isinstance(part, ImagePart | DocumentPart) for part in message.parts)


def refuse_media(messages: Sequence[Message], *, adapter: str, model: str) -> None:
    """For a provider that reads text only: an image or document is refused, naming the model."""
    for index, message in enumerate(messages):
        for part in media_of(message):
            raise ConfigurationError(
                f"{adapter} ({model}) cannot read {part.kind}s: message {index} ({message.role}) holds "
                f"{_label(part)}; use a model that takes {part.kind}s, or send text"
            )


def _label(part: Media) -> str:
    named = f" {part.name}" if part.name else ""
    source = f"{part.size} bytes" if part.data is not None else f"at {part.url}"
    return f"{part.kind}{named} ({part.media_type}, {source})"


def placeholder(part: Media, why: str) -> str:
    """The text sent in place of a part a provider cannot take."""
    return f"[{_label(part)}: {why}]"


def data_url(part: Media) -> str:
    """The part's URL, or its bytes as a ``data:`` URL."""
    if part.data is None:
        return part.url or ""
    return f"data:{part.media_type};base64,{_b64(part)}"


def _b64(part: Media) -> str:
    return base64.b64encode(part.data or b"").decode("ascii")


def _text_document(part: Media) -> str | None:
    """A text document's own text (``text/*`` bytes that are UTF-8), else ``None``."""
    if not part.media_type.startswith("text/") or part.data is None:
        return None
    try:
        text = part.data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return f"{part.name or 'document'}:\n{text}"


def _in_order(parts: Sequence[Part]) -> list[TextPart | Media]:
    """Text, images and documents, in order (reasoning is not content here)."""
    return [part for part in parts if isinstance(part, TextPart | ImagePart | DocumentPart)]


# -- OpenAI Chat Completions --------------------------------------------------------------------


def _chat_block(part: TextPart | Media) -> JSONObject:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    if part.media_type == _PDF and part.data is not None:
        return {
            "type": "file",
            "file": {"file_data": data_url(part), "filename": part.name or "document.pdf"},
        }
    text = _text_document(part)
    if text is not None:
        return {"type": "text", "text": text}
    return {"type": "text", "text": placeholder(part, "Chat Completions takes PDF bytes and text only")}


def chat_content(message: Message) -> list[JSONValue]:
    """A user message's content array: text, ``image_url`` (data: or https URL) and ``file`` (PDF) parts."""
    return [
        _chat_block(part) for part in _in_order(message.parts) if not isinstance(part, TextPart) or part.text
    ]


def chat_tool_followup(results: Sequence[Message]) -> JSONObject | None:
    """The user message carrying the images and documents of a run of tool results (``None``: they have none).

    Chat Completions takes only text in a ``tool`` message; its documentation
    has images sent in a user message, so they follow the tool results, each
    introduced by the call it came from.
    """
    content: list[JSONValue] = []
    for result in results:
        media = media_of(result)
        if not media:
            continue
        content.append(
            {
                "type": "text",
                "text": f"Attached by the result of tool call {result.tool_call_id} ({result.name}):",
            }
        )
        content.extend(_chat_block(part) for part in media)
    return {"role": "user", "content": content} if content else None


def chat_tool_text(message: Message) -> str:
    """A tool result's text, noting the media that follow in the next user message."""
    count = len(media_of(message))
    note = f"[{count} attachment(s) follow in the next user message]"
    return f"{message.content}\n\n{note}" if message.content else note


# -- OpenAI Responses -----------------------------------------------------------------------------


def _responses_block(part: TextPart | Media) -> JSONObject:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "input_image", "image_url": data_url(part), "detail": "auto"}
    block: JSONObject = {"type": "input_file"}
    if part.data is not None:
        block["file_data"] = data_url(part)
        block["filename"] = part.name or "document"
    else:
        block["file_url"] = part.url or ""
    return block


def responses_content(message: Message) -> list[JSONValue]:
    """``input_text`` / ``input_image`` / ``input_file`` items: a user message's content or a tool output."""
    return [
        _responses_block(part)
        for part in _in_order(message.parts)
        if not isinstance(part, TextPart) or part.text
    ]


# -- Anthropic --------------------------------------------------------------------------------------


def _anthropic_block(part: TextPart | Media) -> JSONObject:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    source: JSONObject
    if part.data is None:
        source = {"type": "url", "url": part.url or ""}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": _b64(part)}
    if isinstance(part, ImagePart):
        if part.data is not None and part.media_type not in _ANTHROPIC_IMAGES:
            return {
                "type": "text",
                "text": placeholder(part, "Anthropic takes JPEG, PNG, GIF and WebP images"),
            }
        return {"type": "image", "source": source}
    if part.media_type == _PDF:
        block: JSONObject = {"type": "document", "source": source}
    elif (text := _text_document(part)) is not None:
        block = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": text}}
    else:
        return {"type": "text", "text": placeholder(part, "Anthropic takes PDF and plain-text documents")}
    if part.name:
        block["title"] = part.name
    return block


def anthropic_content(message: Message) -> list[JSONObject]:
    """Text, ``image`` and ``document`` blocks (base64 or URL source), for a user turn or a tool result."""
    return [
        _anthropic_block(part)
        for part in _in_order(message.parts)
        if not isinstance(part, TextPart) or part.text
    ]


# -- Gemini ------------------------------------------------------------------------------------------


def _gemini_part(part: TextPart | Media) -> types.Part:
    from google.genai import types

    if isinstance(part, TextPart):
        return types.Part(text=part.text)
    if part.data is not None:
        return types.Part(inline_data=types.Blob(mime_type=part.media_type, data=part.data))
    return types.Part(file_data=types.FileData(file_uri=part.url, mime_type=part.media_type))


def gemini_media_parts(message: Message) -> list[types.Part]:
    """``inline_data`` (bytes) or ``file_data`` (URL) parts for a message's images and documents."""
    return [_gemini_part(part) for part in media_of(message)]


def gemini_content_parts(message: Message) -> list[types.Part]:
    """A user message's text, images and documents as Gemini parts, in order."""
    return [
        _gemini_part(part) for part in _in_order(message.parts) if not isinstance(part, TextPart) or part.text
    ]
