"""A tool that returns an image: a scripted model takes a screenshot, looks at it, answers. Runs offline.

The ``take_screenshot`` tool returns an :class:`~weakprompt.ImagePart` (a
tiny PNG drawn here); the model sees it as an image in the tool's result,
the transcript stores its bytes once (by digest) and ``weakprompt inspect``
shows it as a thumbnail.

Run: ``.venv/bin/python examples/screenshot_agent.py [--db runs.db]``, then
``weakprompt inspect --db runs.db`` to see the image in the session. For a
real model, make ``model`` an ``AnthropicAdapter(...)``, an
``OpenAIAdapter(...)`` or a ``GeminiAdapter(...)``: each sends the image as
its API takes it.
"""

from __future__ import annotations

import argparse
import struct
import tempfile
import zlib
from pathlib import Path

from weakprompt import Agent, FunctionAdapter, ImagePart, ModelRequest, Store, ToolCall, tool
from weakprompt.messages import AssistantTurn
from weakprompt.tokens import image_size
from weakprompt.transcript import Transcript


def draw_png(width: int, height: int) -> bytes:
    """A small PNG: a grey window with a dark title bar (no imaging library needed)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + (b"\x30" if y < height // 5 else b"\xd0") * width for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


@tool
def take_screenshot(window: str) -> ImagePart:
    """A screenshot of one window of the user's screen."""
    return ImagePart(media_type="image/png", data=draw_png(64, 40), name=f"{window}.png")


def scripted_model(request: ModelRequest) -> AssistantTurn | str:
    """Plays the model: asks for a screenshot, then describes the image it was shown."""
    last = request.context.messages[-1]
    if last.role != "tool":
        call = ToolCall(id="call_1", name="take_screenshot", arguments={"window": "login"})
        return AssistantTurn(tool_calls=(call,))
    image = next(part for part in last.parts if isinstance(part, ImagePart))
    width, height = image_size(image.data or b"") or (0, 0)
    shown = f"{width}x{height} {image.media_type}"
    return f"I see a {shown} screenshot of the login window: a title bar over a form."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", help="SQLite file to keep the session in (default: a temporary one)")
    args = parser.parse_args()
    db = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "screenshots.db"
    store = Store.open(db)
    agent = Agent(
        FunctionAdapter(scripted_model),
        instructions="Look at the user's screen when asked about it.",
        tools=[take_screenshot],
        store=store,
    )
    response = agent.run_sync("What is on my login screen?", session="screenshot-demo")
    print(f"answer: {response.text}")
    print("transcript:")
    for commit in Transcript(store, "screenshot-demo").log():
        print(f"  #{commit.seq} {commit.role}: {commit.text[:60]!r}")
        for part in commit.content.parts:
            if isinstance(part, ImagePart):
                facts = f"{part.media_type}, {part.size} bytes, {part.digest[:19]}..."
                print(f"      image part {part.name} ({facts})")
    store.close()
    print(f"see it in the inspector: weakprompt inspect --db {db}")


if __name__ == "__main__":
    main()
