"""Images and documents as a strict user passes them: lists of text and parts, no casts."""

from __future__ import annotations

from pathlib import Path

from weakprompt import (
    Agent,
    DocumentPart,
    ImagePart,
    MarkdownSection,
    Prompt,
    PromptTemplate,
    ScriptedAdapter,
    Session,
    Store,
    TextPart,
)
from weakprompt.parts import Content
from weakprompt.runtime import run_sync
from weakprompt.transcript import Transcript

screenshot = ImagePart(media_type="image/png", data=b"\x89PNG")
report = DocumentPart(media_type="application/pdf", url="https://example.test/report.pdf")
agent = Agent(ScriptedAdapter(["A login form."]), instructions="Describe what you are shown.")

agent.run_sync(["What is on this screen?", screenshot])
agent.run_sync([TextPart("Summarise this."), report, ImagePart.from_path(Path("chart.png"))])
question: Content = ["Compare these:", screenshot, report]
agent.run_sync(question)

section = MarkdownSection(title="T", key="t", template="Look.")
template = PromptTemplate(ns="typing", key="look", sections=[section])
run_sync(Prompt(template), adapter=ScriptedAdapter(["ok"]), session=Session(), input=["Look:", screenshot])

transcript = Transcript(Store.open(":memory:"), "s")
transcript.user(["See:", screenshot])
transcript.tool_result("call-1", "screenshot", ["captured", screenshot])

agent.run_sync([3])  # pyright: ignore[reportArgumentType]
