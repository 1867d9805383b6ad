"""Typed content: the pieces a message is made of besides plain text.

A message's text stays in ``content`` (every reader of text keeps working);
``parts``, when given, is the message's whole content in order: text, images,
documents and, on assistant messages, reasoning. Tool calls stay in
``tool_calls`` and tool results are ``tool`` messages, so the part types here
are the ones that are not already modelled.

Binary data is held as bytes in memory; the store keeps each distinct payload
once, addressed by :attr:`BinaryPart.digest`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, TypeAlias

import attrs

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "BinaryPart",
    "Content",
    "DocumentPart",
    "ImagePart",
    "Part",
    "ReasoningPart",
    "TextPart",
    "as_parts",
    "text_of",
]


@attrs.frozen
class TextPart:
    """A run of text inside mixed content."""

    text: str
    kind: Literal["text"] = attrs.field(default="text", init=False)


def _read(path: str | Path, media_type: str | None) -> tuple[str, bytes, str]:
    """A file's media type (given or guessed from its name), bytes and name."""
    import mimetypes  # only a part read from a file needs these: `import weakprompt` stays cheap
    from pathlib import Path

    file = Path(path)
    guessed = media_type or mimetypes.guess_type(file.name)[0]
    if guessed is None:
        raise ValueError(f"cannot tell the media type of {str(file)!r}: pass media_type=")
    return guessed, file.read_bytes(), file.name


def _check_source(instance: BinaryPart, _attribute: object, _value: object) -> None:
    if (instance.data is None) == (instance.url is None):
        raise ValueError(f"a {type(instance).__name__} needs exactly one of data= or url=")


@attrs.frozen
class BinaryPart:
    """Bytes (or a URL to them) with a media type: the common shape of images and documents."""

    media_type: str
    data: bytes | None = attrs.field(default=None, validator=_check_source, repr=False)
    url: str | None = None
    name: str | None = None

    @property
    def digest(self) -> str:
        """``sha256:<hex>`` of the bytes (of the URL's text when there are no bytes): the store key."""
        import hashlib  # the digest is needed when a part is stored, not when one is built

        payload = self.data if self.data is not None else (self.url or "").encode()
        return "sha256:" + hashlib.sha256(payload).hexdigest()

    @property
    def size(self) -> int:
        """How many bytes the part carries (0 for a URL)."""
        return len(self.data) if self.data is not None else 0


@attrs.frozen
class ImagePart(BinaryPart):
    """An image, as bytes or a URL (``image/png``, ``image/jpeg``, ...)."""

    kind: Literal["image"] = attrs.field(default="image", init=False)

    @classmethod
    def from_path(cls, path: str | Path, *, media_type: str | None = None) -> ImagePart:
        kind, data, name = _read(path, media_type)
        return cls(media_type=kind, data=data, name=name)


@attrs.frozen
class DocumentPart(BinaryPart):
    """A document (``application/pdf``, ``text/plain``, ...), as bytes or a URL."""

    kind: Literal["document"] = attrs.field(default="document", init=False)

    @classmethod
    def from_path(cls, path: str | Path, *, media_type: str | None = None) -> DocumentPart:
        kind, data, name = _read(path, media_type)
        return cls(media_type=kind, data=data, name=name)


@attrs.frozen
class ReasoningPart:
    """A model's reasoning, kept so it can be sent back to the model that wrote it.

    ``issuer`` is ``"provider:model"``: providers require their own reasoning
    back verbatim during tool use and refuse anyone else's, so adapters replay
    a part only to its issuer. ``signature`` (Anthropic thinking, Gemini
    thought signatures) and ``encrypted`` (Anthropic redacted thinking, OpenAI
    Responses ``encrypted_content``) are opaque provider state.
    """

    text: str = ""
    issuer: str = ""
    signature: str | None = None
    encrypted: str | None = None
    redacted: bool = False
    id: str | None = None
    kind: Literal["reasoning"] = attrs.field(default="reasoning", init=False)


Part: TypeAlias = TextPart | ImagePart | DocumentPart | ReasoningPart
"""One piece of a message's content."""

Content: TypeAlias = str | Sequence[str | Part]
"""What an entry point takes as input: a string, or strings and parts in order."""


def as_parts(content: Content) -> tuple[Part, ...]:
    """The parts of some content: a string is one text part (no part for the empty string)."""
    if isinstance(content, str):
        return (TextPart(content),) if content else ()
    return tuple(TextPart(item) if isinstance(item, str) else item for item in content)


def text_of(parts: Iterable[Part]) -> str:
    """The text of some parts: their text parts joined by blank lines (reasoning is not text)."""
    return "\n\n".join(part.text for part in parts if isinstance(part, TextPart))
