"""Durable runs on a queue: 20 evaluations queued, the worker killed half-way, all 20 finished.

    python examples/durable_queue.py            # needs weakprompt[dbos]; offline (a scripted model)

It starts `weakprompt worker` processes on a SQLite store in a temporary
directory, queues 20 runs of a small agent (three tool round trips each),
SIGKILLs the first worker in the middle, starts a second one, and waits:
the second worker sees the first is gone, takes its unfinished runs back
from the queue, and finishes them without calling the model again for the
calls the first one had finished. With PostgreSQL, pass --db URL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from weakprompt import MarkdownSection, Prompt, PromptTemplate, ToolResult, tool
from weakprompt.adapters.testing import FunctionAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.durable import DurableClient
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest

HERE = Path(__file__).resolve().parent
RUNS = 20


@dataclass(frozen=True)
class Step:
    n: int


@tool(name="count", description="Count one step.")
def count(params: Step) -> ToolResult[None]:
    return ToolResult(message=f"step {params.n} done")


def prompt() -> Prompt[None]:
    """The agent the workers import by reference: ``durable_queue:prompt``."""
    return Prompt(
        PromptTemplate(
            ns="examples/durable",
            key="count",
            sections=[
                MarkdownSection(title="Count", key="count", template="Count three steps.", tools=[count])
            ],
        )
    )


async def _reply(request: ModelRequest) -> AssistantTurn:
    await asyncio.sleep(0.1)  # a provider's latency
    done = sum(1 for m in request.context.messages if m.role == "tool")
    if done < 3:
        return tool_call_turn(tool_call("count", {"n": done}, id=f"call-{done}"))
    return text_turn("counted three steps")


def adapter() -> FunctionAdapter:
    """The scripted model the workers import by reference: ``durable_queue:adapter``."""
    return FunctionAdapter(_reply, name="scripted")


def _worker(db: str, name: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from weakprompt.cli import main; main()",
            "worker",
            "--db",
            db,
            "--queue",
            "demo",
            "--concurrency",
            "4",
            "--executor-id",
            name,
            "--path",
            str(HERE),
            "--allow-module",  # the one module whose prompts and adapters it runs
            "durable_queue",
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    print(proc.stderr.readline().strip())  # "weakprompt worker NAME: serving queue 'demo'"
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its log from filling the pipe
    return proc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store (SQLite file or PostgreSQL URL); default: a temporary file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = args.db or os.path.join(folder, "runs.db")
        first = _worker(db, "worker-a")
        client = DurableClient(db)
        try:
            ids = [
                client.submit_sync(
                    "demo",
                    "durable_queue:prompt",
                    adapter="durable_queue:adapter",
                    session_id=f"run-{i:02d}-{os.getpid()}",
                    input="go",
                )
                for i in range(RUNS)
            ]
            print(f"queued {len(ids)} runs")
            done = 0
            while done < 4:  # let it finish a few, and be in the middle of the next ones
                time.sleep(0.1)
                done = sum(client.status(i) == "SUCCESS" for i in ids)
            first.send_signal(signal.SIGKILL)
            first.wait()
            print(f"killed worker-a with {done} of {RUNS} runs finished")
            second = _worker(db, "worker-b")
            try:
                results = [client.result_sync(i, timeout=120) for i in ids]
            finally:
                second.terminate()
                second.wait(30)
            finished = sum(r.text == "counted three steps" for r in results)
            print(f"{finished} of {RUNS} runs finished: {results[0].text!r}")
        finally:
            client.close()


if __name__ == "__main__":
    main()
