"""Binary parts stored once by digest in ``part_blobs``, loaded back when a message is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from weakprompt import Store
from weakprompt.clock import FakeClock
from weakprompt.errors import TranscriptError
from weakprompt.messages import Message
from weakprompt.parts import DocumentPart, ImagePart, TextPart
from weakprompt.store import LATEST_VERSION, MIGRATIONS, tables
from weakprompt.store.migrations import migrate
from weakprompt.transcript import Transcript

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
PDF = b"%PDF-1.4 tiny"


def _rows(store: Store) -> int:
    with store.read() as conn:
        return int(conn.execute(select(func.count()).select_from(tables.part_blobs)).scalar_one())


def test_the_same_image_sent_twice_is_one_stored_row(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    transcript = Transcript(store, "s")
    image = ImagePart(media_type="image/png", data=PNG, name="shot.png")
    transcript.user(["look", image])
    transcript.assistant("a picture")
    transcript.user(["again", image, DocumentPart(media_type="application/pdf", data=PDF)])
    Transcript(store, "other").user([image])
    assert _rows(store) == 2
    with store.read() as conn:
        (content,) = conn.execute(select(tables.blobs.c.content).where(tables.blobs.c.content.like("%look%")))
        row = conn.execute(select(tables.part_blobs).where(tables.part_blobs.c.digest == image.digest)).one()
    assert image.digest in content[0] and "data" not in content[0]  # the blob names the digest only
    assert (row.media_type, row.size_bytes, row.data) == ("image/png", len(PNG), PNG)
    compiled = Transcript(store, "s").compile().messages
    assert compiled[0].parts == (TextPart("look"), image)
    assert compiled[2].parts[1] == image and compiled[2].parts[2].size == len(PDF)  # type: ignore[union-attr]


def test_a_failed_commit_stores_no_part_bytes(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    transcript = Transcript(store, "s")
    image = ImagePart(media_type="image/png", data=PNG)
    with pytest.raises(TranscriptError):
        transcript.user(["look", image], metadata={"bad": object()})  # type: ignore[dict-item]
    assert _rows(store) == 0
    with pytest.raises(RuntimeError), transcript.turn():
        transcript.user(["staged", image])
        raise RuntimeError("the turn fails: nothing of it is stored")
    assert _rows(store) == 0
    with transcript.turn():
        transcript.user(["staged", image])
        assert _rows(store) == 0  # written with the turn's commits, not before
    assert _rows(store) == 1


def test_a_missing_or_altered_part_blob_is_an_error_naming_its_digest(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    image = ImagePart(media_type="image/png", data=PNG)
    Transcript(store, "s").user(["look", image])
    with store.write() as conn:
        conn.execute(update(tables.part_blobs).values(data=b"tampered"))
    with pytest.raises(TranscriptError, match=f"{image.digest} do not hash to that digest"):
        Transcript(store, "s").compile()
    with store.write() as conn:
        conn.execute(tables.part_blobs.delete())
    with pytest.raises(TranscriptError, match=f"no stored bytes for {image.digest}"):
        Transcript(store, "s").log()


def test_queries_edits_and_originals_work_on_messages_with_parts(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    transcript = Transcript(store, "s")
    image = ImagePart(media_type="image/png", data=PNG)
    first = transcript.user(["look", image])
    assert transcript.get(first.hash).content.parts[1] == image
    other = ImagePart(media_type="image/png", data=PNG + b"\x01", name="second.png")
    edited = transcript.user(["look closer", other], edit=first.hash)
    assert Transcript(store, "s").compile().messages[0].parts == (TextPart("look closer"), other)
    assert [c.hash for c in Transcript(store, "s").log()] == [first.hash, edited.hash]
    assert Transcript(store, "s").get(edited.hash).content.parts[1] == other
    transcript.assistant("", tool_calls=[])
    from weakprompt.transcript.originals import load_message_blob, store_message_blob

    kept = Message.of("user", ["original", image])
    assert load_message_blob(store, store_message_blob(store, kept, FakeClock().now())) == kept


def test_a_store_at_the_previous_version_gains_the_part_blobs_table(tmp_path: Path) -> None:
    step = next(m for m in MIGRATIONS if "part_blobs" in m.description)
    store_path = tmp_path / "old.db"
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{store_path}")
    with engine.begin() as conn:
        migrate(conn, FakeClock(), migrations=MIGRATIONS[: MIGRATIONS.index(step)])
    engine.dispose()
    store = Store.open(store_path)
    assert store.schema_version == LATEST_VERSION
    Transcript(store, "s").user(["look", ImagePart(media_type="image/png", data=PNG)])
    assert _rows(store) == 1


def test_a_tool_result_with_an_image_keeps_it_through_a_rewriting_hook(tmp_path: Path) -> None:
    from weakprompt.transcript import PendingToolResult

    store = Store.open(tmp_path / "t.db")
    transcript = Transcript(store, "s")
    image = ImagePart(media_type="image/png", data=PNG)
    plain = transcript.tool_result("c0", "shot", ["captured", image])
    assert plain.content.parts == (TextPart("captured"), image) and plain.text == "captured"

    def shorten(pending: PendingToolResult) -> None:
        pending.edit_result("short")

    transcript.on("tool_result", shorten)
    rewritten = transcript.tool_result("c1", "shot", ["a long caption", image])
    assert rewritten.content.parts == (TextPart("short"), image)
    kept = transcript.tool_result("c2", "shot", "text only")
    assert kept.content.parts == () and kept.text == "short"


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        (b"bytes", "content must be a string or a sequence"),
        (3, "content must be a string or a sequence"),
        (["ok", 3], r"content\[1\] is a int"),
    ],
)
def test_user_content_that_is_not_text_or_parts_is_refused_by_index(
    tmp_path: Path, content: object, complaint: str
) -> None:
    with pytest.raises(TranscriptError, match=complaint):
        Transcript(Store.open(tmp_path / "t.db"), "s").user(content)  # type: ignore[arg-type]


def test_only_the_parts_of_a_payload_name_digests() -> None:
    from weakprompt.transcript.part_codec import payload_digests

    assert payload_digests("not an object") == set()
    assert payload_digests({"parts": "not a list"}) == set()
    assert payload_digests({"parts": [{"kind": "image", "digest": "sha256:ab"}, "x", {"digest": 3}]}) == {
        "sha256:ab"
    }


def test_a_hook_that_approves_a_result_keeps_its_parts_as_they_were(tmp_path: Path) -> None:
    from weakprompt.transcript import PendingToolResult

    transcript = Transcript(Store.open(tmp_path / "t.db"), "s")

    def approve(pending: PendingToolResult) -> None:
        pending.approve()

    transcript.on("tool_result", approve)
    image = ImagePart(media_type="image/png", data=PNG)
    kept = transcript.tool_result("c1", "shot", ["one", image, "two"])
    assert kept.content.parts == (TextPart("one"), image, TextPart("two"))
