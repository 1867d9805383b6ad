"""The inspector shows message parts safely: raster thumbnails, documents named, reasoning folded."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from weakprompt.inspector import create_app
from weakprompt.messages import ToolCall
from weakprompt.parts import DocumentPart, ImagePart, ReasoningPart, TextPart
from weakprompt.store import Store, tables
from weakprompt.transcript import Transcript

LOCAL = "http://127.0.0.1"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
SHOT = ImagePart(media_type="image/png", data=PNG, name="<b>shot</b>.png")
DRAWING = ImagePart(media_type="image/svg+xml", data=SVG, name="drawing.svg")
PAGE = DocumentPart(media_type="text/html", data=b"<script>alert(2)</script>", name="page.html")
LINKED = ImagePart(media_type="image/jpeg", url="https://example.test/<cat>.jpg")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "parts.db"
    store = Store.open(path)
    transcript = Transcript(store, "parts")
    transcript.system("Describe pictures.")
    transcript.user(["What is this?", SHOT, DRAWING, PAGE, LINKED])
    thinking = ReasoningPart("<i>looking</i> at the screen", issuer="anthropic:claude", signature="sig")
    call = ToolCall(id="c1", name="screenshot", arguments="{}")
    transcript.assistant("", tool_calls=[call], parts=(thinking,))
    transcript.tool_result("c1", "screenshot", ["captured", SHOT])
    transcript.assistant(
        "A login form.",
        parts=(ReasoningPart("", issuer="anthropic:claude", redacted=True), TextPart("A login form.")),
    )
    store.close()
    return path


@pytest.fixture
def client(db: Path) -> Iterator[TestClient]:
    with TestClient(create_app(str(db)), base_url=LOCAL) as test_client:
        yield test_client


def test_images_are_thumbnails_pointing_at_their_bytes_never_inlined(client: TestClient) -> None:
    page = client.get("/session?id=parts").text
    assert f'<img class="thumb" src="/part/{SHOT.digest}"' in page
    assert "base64" not in page and "data:" not in page
    assert "&lt;b&gt;shot&lt;/b&gt;.png" in page and "<b>shot</b>" not in page
    assert page.count(f'src="/part/{SHOT.digest}"') == 2  # the user's image and the tool's
    assert f'src="/part/{DRAWING.digest}"' not in page  # an SVG is no thumbnail, only a download
    assert f'href="/part/{DRAWING.digest}"' in page and "drawing.svg" in page
    assert "page.html" in page and "<script>alert(2)" not in page
    assert "https://example.test/&lt;cat&gt;.jpg" in page and 'src="https://example.test' not in page


def test_reasoning_is_collapsed_and_escaped(client: TestClient) -> None:
    page = client.get("/session?id=parts").text
    folded = re.findall(r'<details class="part reasoning">(?!\s*<details)', page)
    assert len(folded) == 2 and '<details class="part reasoning" open' not in page
    assert "&lt;i&gt;looking&lt;/i&gt; at the screen" in page and "<i>looking</i>" not in page
    assert "(redacted by the provider)" in page and "anthropic:claude" in page


def test_a_part_is_served_with_its_own_type_only_when_it_is_a_raster_image(client: TestClient) -> None:
    image = client.get(f"/part/{SHOT.digest}")
    assert image.status_code == 200 and image.content == PNG
    assert image.headers["content-type"] == "image/png"
    assert image.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in image.headers["content-security-policy"]
    assert "content-disposition" not in image.headers
    for part in (DRAWING, PAGE):
        served = client.get(f"/part/{part.digest}")
        assert served.status_code == 200 and served.content == part.data
        assert served.headers["content-type"] == "application/octet-stream"
        assert served.headers["content-disposition"].startswith("attachment;")
        assert served.headers["x-content-type-options"] == "nosniff"


def test_an_unknown_malformed_or_damaged_part_is_an_error_page(client: TestClient, db: Path) -> None:
    assert client.get("/part/sha256:" + "0" * 64).status_code == 404
    assert client.get("/part/not-a-digest").status_code == 404
    store = Store.open(db)
    with store.write() as conn:
        conn.execute(
            update(tables.part_blobs).where(tables.part_blobs.c.digest == SHOT.digest).values(data=b"x")
        )
    store.close()
    damaged = client.get(f"/part/{SHOT.digest}")
    assert damaged.status_code == 500 and "do not hash" in damaged.text


def test_the_part_route_keeps_the_host_check(client: TestClient) -> None:
    assert client.get(f"/part/{SHOT.digest}", headers={"Host": "attacker.example"}).status_code == 421


def test_malformed_stored_parts_are_skipped_not_shown() -> None:
    from weakprompt.inspector.parts import PartView, part_views

    stored = {
        "parts": [
            "x",
            {"kind": "text", "text": "shown as the message text"},
            {"kind": "video"},
            {"kind": "image", "media_type": "image/png", "digest": "sha256:../../etc"},
        ]
    }
    assert part_views(stored) == (PartView(kind="image", media_type="image/png"),)
    assert part_views({"parts": "nope"}) == () and not part_views(stored)[0].thumbnail
