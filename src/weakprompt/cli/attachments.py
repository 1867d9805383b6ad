"""``--image`` and ``--file``: files read into parts of the user's message for ``weakprompt run``."""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from pathlib import Path

import click

from ..parts import DocumentPart, ImagePart, TextPart

__all__ = ["input_content"]

_EXTRA_TYPES = {".webp": "image/webp", ".md": "text/markdown"}
"""Suffixes some platforms' ``mimetypes`` tables lack."""


def _media_type(path: Path, option: str) -> str:
    guessed = mimetypes.guess_type(path.name)[0] or _EXTRA_TYPES.get(path.suffix.lower())
    if guessed is None:
        raise click.BadParameter(
            f"cannot tell the media type of {str(path)!r} from its name; give it a known suffix "
            "(.png, .jpg, .pdf, .txt, ...)",
            param_hint=option,
        )
    return guessed


def _read(path: Path, option: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {str(path)!r}: {exc.strerror or exc}", param_hint=option
        ) from exc


def input_content(
    text: str | None, images: Sequence[str], files: Sequence[str]
) -> str | list[TextPart | ImagePart | DocumentPart] | None:
    """The run's input: the text alone, or the text followed by each image and then each file."""
    if not images and not files:
        return text
    content: list[TextPart | ImagePart | DocumentPart] = [TextPart(text)] if text else []
    for given in images:
        path = Path(given)
        media_type = _media_type(path, "--image")
        if not media_type.startswith("image/"):
            raise click.BadParameter(
                f"{str(path)!r} is {media_type}, not an image; pass it with --file", param_hint="--image"
            )
        content.append(ImagePart(media_type=media_type, data=_read(path, "--image"), name=path.name))
    for given in files:
        path = Path(given)
        media_type = _media_type(path, "--file")
        data = _read(path, "--file")
        if media_type.startswith("image/"):
            content.append(ImagePart(media_type=media_type, data=data, name=path.name))
        else:
            content.append(DocumentPart(media_type=media_type, data=data, name=path.name))
    return content
