"""Tool results with images and documents: from the handler to the model and the transcript."""

from __future__ import annotations

from pathlib import Path

import pytest

from weakprompt import Agent, ScriptedAdapter, Session, Store, ToolResult, run_sync, tool
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.messages import Message
from weakprompt.parts import DocumentPart, ImagePart, TextPart
from weakprompt.runtime.results import SizePolicy, ToolOutputSettings
from weakprompt.runtime.results.pipeline import PARTS_LEFT_OUT
from weakprompt.transcript import PendingToolResult, Transcript

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32
SHOT = ImagePart(media_type="image/png", data=PNG, name="screen.png")


@tool
def screenshot() -> ImagePart:
    """A picture of the screen."""
    return SHOT


@tool
def capture(pages: int) -> ToolResult[int]:
    """The screen and a report."""
    report = DocumentPart(media_type="application/pdf", data=b"%PDF" * pages, name="report.pdf")
    return ToolResult.ok(pages, message="captured", parts=[SHOT, report])


@tool
def broken() -> ToolResult[None]:
    """Returns something that is not a part."""
    return ToolResult(message="x", parts=("not a part",))  # type: ignore[arg-type]


def _tool_message(adapter: ScriptedAdapter) -> Message:
    return next(m for m in adapter.requests[1].context.messages if m.role == "tool")


def _agent(adapter: ScriptedAdapter, store: Store, **options: object) -> Agent[None]:
    return Agent(
        adapter,
        instructions="Look.",
        tools=[screenshot, capture, broken],
        store=store,
        **options,  # type: ignore[arg-type]
    )


def test_a_tool_returning_an_image_shows_it_to_the_model_and_stores_it(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    adapter = ScriptedAdapter([tool_call_turn(tool_call("screenshot", {}, id="c1")), "a login form"])
    _agent(adapter, store).run_sync("What is on screen?", session="s")
    assert _tool_message(adapter).parts == (SHOT,)
    stored = Transcript(store, "s").find_tool_results("screenshot")[0]
    assert stored.content.parts == (SHOT,)


def test_a_tool_result_carries_parts_after_its_text(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    adapter = ScriptedAdapter([tool_call_turn(tool_call("capture", {"pages": 2}, id="c1")), "done"])
    _agent(adapter, store).run_sync("go", session="s")
    message = _tool_message(adapter)
    assert message.parts[:2] == (TextPart("2"), SHOT)  # the value is the text, as always
    assert message.parts[2] == DocumentPart(media_type="application/pdf", data=b"%PDF%PDF", name="report.pdf")


def test_parts_over_the_size_policy_are_left_out_with_a_placeholder(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")
    adapter = ScriptedAdapter([tool_call_turn(tool_call("capture", {"pages": 1000}, id="c1")), "done"])
    settings = ToolOutputSettings(policy=SizePolicy(max_part_bytes=1024))
    _agent(adapter, store, tool_outputs=settings).run_sync("go", session="s")
    message = _tool_message(adapter)
    assert message.parts[:2] == (TextPart("1000"), SHOT)  # 40 bytes: fits
    assert "document report.pdf (application/pdf, 4000 bytes) left out" in message.content
    assert not any(isinstance(part, DocumentPart) for part in message.parts)
    commit = Transcript(store, "s").find_tool_results("capture")[0]
    assert commit.metadata[PARTS_LEFT_OUT] == [
        {
            "kind": "document",
            "media_type": "application/pdf",
            "size": 4000,
            "digest": commit.metadata[PARTS_LEFT_OUT][0]["digest"],
        }  # type: ignore[index]
    ]
    assert SizePolicy().max_part_bytes == 5 * 1024 * 1024


def test_a_result_hook_rewrites_the_text_and_keeps_the_image(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "t.db")

    def shorten(pending: PendingToolResult) -> None:
        pending.edit_result("short")

    transcript = Transcript(store, "s")
    transcript.on("tool_result", shorten)
    adapter = ScriptedAdapter([tool_call_turn(tool_call("capture", {"pages": 1}, id="c1")), "done"])
    prompt = _agent(adapter, store).prompt
    run_sync(prompt, adapter=adapter, session=Session(session_id="s"), transcript=transcript)
    message = _tool_message(adapter)
    assert message.parts[0] == TextPart("short") and message.parts[1] == SHOT


def test_a_result_whose_parts_are_not_parts_is_a_failed_call(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([tool_call_turn(tool_call("broken", {}, id="c1")), "done"])
    _agent(adapter, Store.open(tmp_path / "t.db")).run_sync("go")
    message = _tool_message(adapter)
    assert message.is_error and "parts[0] is str, not an ImagePart or DocumentPart" in message.content


@pytest.mark.parametrize(("sizes", "fitting"), [([], 0), ([10, 10], 2), ([2000], 0), ([500, 600, 1], 1)])
def test_size_policy_counts_parts_by_bytes_in_order(sizes: list[int], fitting: int) -> None:
    assert SizePolicy(max_part_bytes=1024).fitting_parts(sizes) == fitting


@tool
def either(pdf: bool) -> ImagePart | DocumentPart:
    """A picture or a document: a result type made of parts needs no JSON schema."""
    return DocumentPart(media_type="application/pdf", data=b"%PDF") if pdf else SHOT


def test_a_tool_returning_an_image_or_a_document_is_accepted_and_shows_it(tmp_path: Path) -> None:
    adapter = ScriptedAdapter([tool_call_turn(tool_call("either", {"pdf": True}, id="c1")), "done"])
    Agent(adapter, instructions="x", tools=[either]).run_sync("go")
    assert _tool_message(adapter).parts == (DocumentPart(media_type="application/pdf", data=b"%PDF"),)
