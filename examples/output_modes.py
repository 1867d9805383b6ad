"""One prompt with a structured answer, on the local model and on a local OpenAI-compatible server.

Run: ``.venv/bin/python examples/output_modes.py [--base-url URL]``.

Both adapters run the same prompt (a ``Capital`` dataclass as the output
type) in ``auto`` output mode:

- ``LocalAdapter()`` runs SmolLM2-135M in process; its native mode is a
  grammar built from the output schema, so the answer is valid JSON of the
  right shape;
- ``OpenAIAdapter(base_url=...)`` talks to ``llama_cpp.server`` serving the
  same model file (started here on a free local port unless ``--base-url``
  names one already running). That server refuses the ``json_schema``
  response format, so ``auto`` falls back to ``json_object`` (JSON mode plus
  the schema in the instructions) once; the second question on the same
  adapter goes straight to ``json_object``.

Exit status 0 when every run worked: an answer parsed into ``Capital``, or,
since a 135M model may fill the fields wrongly, a clearly marked warning
after the one corrective turn. Anything else (the server not starting, an
adapter error) exits with status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from weakprompt import (
    Agent,
    LocalAdapter,
    MarkdownSection,
    OpenAIAdapter,
    OutputParseError,
    PromptTemplate,
    WeakpromptError,
)
from weakprompt.adapters import default_model_path
from weakprompt.model import ProviderAdapter


@dataclass(frozen=True)
class Capital:
    country: str
    city: str


TEMPLATE = PromptTemplate(
    ns="examples",
    key="capital",
    sections=[
        MarkdownSection(
            title="Task",
            key="task",
            template="Answer with the country and its capital city.",
        )
    ],
    output_type=Capital,
    output_mode="auto",
)

QUESTIONS = ("What is the capital of France?", "What is the capital of Italy?")


async def ask(adapter: ProviderAdapter, question: str) -> bool:
    """One question; False when the run failed for a reason other than the model's answer."""
    try:
        response = await Agent(adapter, template=TEMPLATE, max_output_tokens=48).run(question)
    except OutputParseError as exc:
        print(
            f"  {question} -> WARNING: the model's answer did not fit Capital after a corrective turn: {exc}"
        )
        return True
    except WeakpromptError as exc:
        print(f"  {question} -> FAILED: {type(exc).__name__}: {exc}")
        return False
    print(f"  {question} -> {response.output} ({response.turns} model call(s))")
    return True


async def ask_all(adapter: ProviderAdapter) -> bool:
    results = [await ask(adapter, question) for question in QUESTIONS]
    return all(results)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def llama_server() -> Iterator[str]:
    """``python -m llama_cpp.server`` on the bundled model, on a free local port; yields its base URL."""
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path())]
    command += ["--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"llama_cpp.server did not start on {base_url}") from None
                time.sleep(0.3)
        yield base_url
    finally:
        server.terminate()
        server.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible server already running (default: start one)")
    args = parser.parse_args(argv)

    print("local model (LocalAdapter, auto -> native: a grammar from the schema)")
    ok = asyncio.run(ask_all(LocalAdapter(progress=False)))

    with llama_server() if args.base_url is None else _given(args.base_url) as base_url:
        server = OpenAIAdapter(
            "smollm2", base_url=base_url, strict_tools=False, max_tokens_field="max_tokens", temperature=0.0
        )
        print(f"OpenAI-compatible server at {base_url} (OpenAIAdapter, auto)")
        ok = asyncio.run(ask_all(server)) and ok
        print(f"  the server's adapter now asks in {server.output_modes.auto_mode!r} mode")
    return 0 if ok else 1


@contextmanager
def _given(base_url: str) -> Iterator[str]:
    yield base_url


if __name__ == "__main__":
    sys.exit(main())
