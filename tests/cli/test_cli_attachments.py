"""``weakprompt run --image/--file``: files become parts of the user message; bad files are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from weakprompt.cli import cli
from weakprompt.parts import DocumentPart, ImagePart, TextPart
from weakprompt.store import Store
from weakprompt.transcript import Transcript

MODULE = """
from loop_support import arithmetic_prompt
from weakprompt.adapters.testing import ScriptedAdapter

prompt = arithmetic_prompt()


def seen():
    return ScriptedAdapter(["I see it."])
"""

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "attach_module.py"
    path.write_text(MODULE)
    return path


def invoke(module: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["run", f"{module}:prompt", "--adapter", f"{module}:seen", *args])


def test_images_and_files_are_sent_as_parts_after_the_text(module: Path, tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(b"%PDF-1.4")
    (tmp_path / "chart.gif").write_bytes(b"GIF89a")
    db = tmp_path / "run.db"
    result = invoke(
        module,
        "--input",
        "What is this?",
        "--image",
        str(tmp_path / "shot.png"),
        "--file",
        str(tmp_path / "report.pdf"),
        "--file",
        str(tmp_path / "chart.gif"),
        "--db",
        str(db),
        "--session",
        "s",
    )
    assert result.exit_code == 0, result.output
    user = next(c for c in Transcript(Store.open(db), "s").log() if c.role == "user")
    assert user.content.parts == (
        TextPart("What is this?"),
        ImagePart(media_type="image/png", data=PNG, name="shot.png"),
        DocumentPart(media_type="application/pdf", data=b"%PDF-1.4", name="report.pdf"),
        ImagePart(media_type="image/gif", data=b"GIF89a", name="chart.gif"),
    )


def test_an_image_alone_needs_no_text(module: Path, tmp_path: Path) -> None:
    (tmp_path / "shot.webp").write_bytes(b"RIFF")
    db = tmp_path / "run.db"
    result = invoke(module, "--image", str(tmp_path / "shot.webp"), "--db", str(db), "--session", "s")
    assert result.exit_code == 0, result.output
    user = next(c for c in Transcript(Store.open(db), "s").log() if c.role == "user")
    assert user.content.parts == (ImagePart(media_type="image/webp", data=b"RIFF", name="shot.webp"),)


def test_a_missing_unknown_or_unreadable_file_is_a_clear_error(
    module: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = invoke(module, "--image", str(tmp_path / "nope.png"))
    assert missing.exit_code == 2 and "--image" in missing.output and "does not exist" in missing.output
    (tmp_path / "blob.zzunknown").write_bytes(b"?")
    unknown = invoke(module, "--file", str(tmp_path / "blob.zzunknown"))
    assert unknown.exit_code == 2 and "cannot tell the media type" in unknown.output
    (tmp_path / "notes.pdf").write_bytes(b"%PDF")
    not_image = invoke(module, "--image", str(tmp_path / "notes.pdf"))
    assert not_image.exit_code == 2 and "application/pdf, not an image" in not_image.output

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", refuse)
    unreadable = invoke(module, "--file", str(tmp_path / "notes.pdf"))
    assert (
        unreadable.exit_code == 2
        and "cannot read" in unreadable.output
        and "Permission denied" in unreadable.output
    )


def test_transcript_show_lists_images_documents_and_reasoning_escaped(tmp_path: Path) -> None:
    from weakprompt.messages import ToolCall
    from weakprompt.parts import ReasoningPart

    db = tmp_path / "show.db"
    store = Store.open(db)
    transcript = Transcript(store, "s")
    transcript.user(["look", ImagePart(media_type="image/png", data=PNG, name="\x1b[31mred.png")])
    linked = DocumentPart(media_type="application/pdf", url="https://example.test/r.pdf")
    transcript.user(["and", linked])
    thinking = (ReasoningPart("hmm", issuer="anthropic:m"), ReasoningPart(redacted=True))
    transcript.assistant("", tool_calls=[ToolCall(id="c", name="t", arguments="{}")], parts=thinking)
    store.close()
    shown = CliRunner().invoke(cli, ["transcript", "show", "--db", str(db), "--session", "s"])
    assert shown.exit_code == 0, shown.output
    assert "image \\x1b[31mred.png (image/png, 24 bytes, sha256:" in shown.output
    assert "document (application/pdf, https://example.test/r.pdf)" in shown.output
    assert "reasoning from anthropic:m: hmm" in shown.output and "reasoning from ? (redacted)" in shown.output
