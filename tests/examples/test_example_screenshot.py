"""The screenshot example: a tool returns an image; the model, the transcript and the inspector see it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from starlette.testclient import TestClient

from weakprompt.inspector import create_app
from weakprompt.parts import ImagePart
from weakprompt.store import Store
from weakprompt.transcript import Transcript

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "screenshot_agent.py"


def test_the_screenshot_example_answers_from_the_image_and_the_inspector_shows_it(tmp_path: Path) -> None:
    db = tmp_path / "shots.db"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "answer: I see a 64x40 image/png screenshot of the login window" in out
    assert "image part login.png (image/png" in out
    assert f"weakprompt inspect --db {db}" in out
    store = Store.open(db)
    (result,) = Transcript(store, "screenshot-demo").find_tool_results("take_screenshot")
    (image,) = result.content.parts
    assert isinstance(image, ImagePart) and image.data is not None and image.data.startswith(b"\x89PNG")
    store.close()
    with TestClient(create_app(str(db)), base_url="http://127.0.0.1") as client:
        page = client.get("/session?id=screenshot-demo").text
        assert f'<img class="thumb" src="/part/{image.digest}"' in page
        served = client.get(f"/part/{image.digest}")
        assert served.headers["content-type"] == "image/png" and served.content == image.data
