"""Typed parts: how messages hold them and how the transcript stores them."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weakprompt import Store
from weakprompt.errors import TranscriptError
from weakprompt.messages import AssistantTurn, Message
from weakprompt.parts import DocumentPart, ImagePart, Part, ReasoningPart, TextPart, as_parts, text_of
from weakprompt.transcript import Transcript
from weakprompt.transcript.part_codec import parts_from_json, parts_to_json
from weakprompt.transcript.part_store import part_blobs

_text = st.text(max_size=20)
_optional = st.none() | _text
_binary = st.builds(
    lambda kind, media, data, name: kind(media_type=media, data=data, name=name),
    st.sampled_from([ImagePart, DocumentPart]),
    st.sampled_from(["image/png", "application/pdf"]),
    st.binary(max_size=64),
    _optional,
)
_linked = st.builds(
    lambda kind, url: kind(media_type="image/jpeg", url=url),
    st.sampled_from([ImagePart, DocumentPart]),
    _text,
)
_reasoning = st.builds(
    ReasoningPart,
    text=_text,
    issuer=_text,
    signature=_optional,
    encrypted=_optional,
    redacted=st.booleans(),
    id=_optional,
)
_parts = st.lists(st.builds(TextPart, _text) | _binary | _linked | _reasoning, max_size=6)


@given(_parts)
def test_parts_survive_their_stored_json(parts: list[Part]) -> None:
    blobs = {blob.digest: blob for blob in part_blobs(parts)}
    assert parts_from_json(parts_to_json(parts), "parts", blobs) == tuple(parts)
    assert "data" not in str(parts_to_json(parts))  # bytes are never inline, only their digest


def test_a_message_of_parts_keeps_its_text_in_content() -> None:
    image = ImagePart(media_type="image/png", data=b"\x89PNG")
    message = Message.of("user", ["What is this?", image, "Be brief."])
    assert message.content == "What is this?\n\nBe brief."
    assert message.parts == (TextPart("What is this?"), image, TextPart("Be brief."))
    assert Message.of("user", "plain") == Message("user", "plain")
    assert as_parts("") == ()


def test_content_that_is_not_the_text_of_the_parts_is_refused() -> None:
    with pytest.raises(ValueError, match="text of its parts"):
        Message("user", "other", parts=(TextPart("said"),))
    with pytest.raises(ValueError, match="text of its parts"):
        AssistantTurn(text="x", parts=(ReasoningPart("why"),))


def test_a_binary_part_needs_one_source_and_names_its_digest_and_size(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one of data= or url="):
        ImagePart(media_type="image/png")
    with pytest.raises(ValueError, match="exactly one of data= or url="):
        DocumentPart(media_type="application/pdf", data=b"x", url="https://example.test/a.pdf")
    shot = tmp_path / "shot.png"
    shot.write_bytes(b"pixels")
    image = ImagePart.from_path(shot)
    assert (image.media_type, image.name, image.size) == ("image/png", "shot.png", 6)
    assert image.digest.startswith("sha256:") and image.digest == ImagePart.from_path(shot).digest
    assert ImagePart(media_type="image/png", url="https://example.test/a.png").size == 0
    document = DocumentPart.from_path(shot, media_type="application/octet-stream")
    assert document.media_type == "application/octet-stream"
    with pytest.raises(ValueError, match="media type"):
        DocumentPart.from_path(tmp_path / "no-suffix")


def test_reasoning_is_not_text() -> None:
    turn = AssistantTurn(text="done", parts=(ReasoningPart("think", issuer="a:m"), TextPart("done")))
    assert turn.reasoning == (ReasoningPart("think", issuer="a:m"),)
    assert text_of(turn.parts) == "done"


def test_an_assistant_reply_with_reasoning_is_stored_and_compiled_with_it(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    transcript = Transcript(store, "s")
    transcript.user("hi")
    parts = (ReasoningPart("think", issuer="anthropic:m", signature="sig"), TextPart("ok"))
    transcript.assistant("ok", parts=parts)
    compiled = Transcript(store, "s").compile().messages
    assert compiled[-1].parts == parts
    with pytest.raises(TranscriptError, match="cannot record the assistant message"):
        transcript.assistant("not the text", parts=parts)


@pytest.mark.parametrize(
    ("stored", "complaint"),
    [
        ("nope", "is not a list"),
        (["x"], r"parts\[0\] is not a JSON object"),
        ([{"kind": "video"}], "unknown kind"),
        ([{"kind": "text", "text": 3}], "'text' must be a string"),
        ([{"kind": "image", "media_type": "image/png", "data": "@@"}], "not base64"),
        ([{"kind": "image", "media_type": "image/png"}], "exactly one of"),
        (
            [{"kind": "image", "media_type": "image/png", "digest": "sha256:00"}],
            "no stored bytes for sha256:00",
        ),
    ],
)
def test_malformed_stored_parts_name_what_is_wrong(stored: object, complaint: str) -> None:
    with pytest.raises(TranscriptError, match=complaint):
        parts_from_json(stored, "parts")  # type: ignore[arg-type]
