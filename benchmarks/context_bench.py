"""Context sent to the model over a 20-turn session with 1 MB and 10 MB tool outputs.

One deterministic agent (a ``FunctionAdapter``) answers 20 user turns on one
session. On three turns it calls ``fetch_logs``, which returns a log of
1 MB, 10 MB, then the same 1 MB again; each log holds one needle line the
agent must report. On the other turns it calls a small ``status`` tool.

Three ways to feed tool results back, measured in the same run:

- inline: every result in full, forever (``SizePolicy`` cap raised out of
  reach, ``load_tool_results=True``): the baseline;
- weakprompt defaults: oversized results become a handle message; the agent
  calls ``tool_output(mode="read-grep")``, whose sub-agent greps the stored
  output for the needle; earlier turns' results compile as slim references;
- openai-agents ``ToolOutputTrimmer`` (defaults: last 2 user turns kept,
  older outputs over 500 characters cut to a 200-character preview),
  applied to the inline run's requests exactly as its
  ``call_model_input_filter`` would before each model call (the agent's
  decisions do not depend on what the trimmer cuts: the needle is found in
  the turn the output arrives, which the trimmer keeps whole).

Per user turn we count the characters and tokens (weakprompt's byte
estimate, the same counter for all three) of everything sent: message
texts, tool-call arguments and tool schemas, over all model calls of the
turn; for weakprompt the extraction sub-agent's calls are included. We
check the needle is recovered every time, and that the repeated 1 MB
output was stored once.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from weakprompt.adapters.testing import FunctionAdapter, tool_call, tool_call_turn
from weakprompt.events import ToolResultStored
from weakprompt.messages import AssistantTurn, Message
from weakprompt.prompt import MarkdownSection, Prompt, PromptTemplate
from weakprompt.runtime import ModelRequest, evaluate
from weakprompt.runtime.results import SizePolicy, ToolOutputSettings
from weakprompt.runtime.results.extraction import ExtractionConfig
from weakprompt.session import Session
from weakprompt.store import Store
from weakprompt.tokens import DEFAULT_TOKEN_COUNTER
from weakprompt.tools import ToolContext, ToolResult, tool
from weakprompt.transcript import Transcript

TURNS = 20
MB = 1_000_000
# turn -> which log fetch_logs returns on that turn (turn 16 repeats turn 4's output exactly)
LOG_TURNS = {4: "1mb", 10: "10mb", 16: "1mb"}
GOAL_SHARE = 0.02
HANDLE = re.compile(r'tool_output\(handle = "([^"]+)"')
NONCE = re.compile(r"<wp-([A-Za-z0-9]+)-FINAL")


def make_log(size: int, needle: str, seed: int) -> str:
    """About ``size`` bytes of ordinary log lines with one needle line two thirds in."""
    line = "2026-01-01T00:00:{s:02d} INFO worker-{w} request id={i:08d} path=/api/items status=200 ms={ms}\n"
    lines: list[str] = []
    total = 0
    i = 0
    while total < size:
        text = line.format(s=i % 60, w=(i * seed) % 13, i=i, ms=(i * 7 + seed) % 250)
        lines.append(text)
        total += len(text)
        i += 1
    lines[len(lines) * 2 // 3] = f"2026-01-01T00:00:00 ERROR worker-5 {needle} checksum mismatch on shard 7\n"
    return "".join(lines)


@dataclass
class Logs:
    texts: dict[str, str]
    needles: dict[str, str]
    served: list[str] = field(default_factory=list[str])


@dataclass(frozen=True)
class FetchParams:
    which: str = field(metadata={"description": "which log to fetch: 1mb or 10mb"})


@dataclass(frozen=True)
class StatusParams:
    service: str = field(metadata={"description": "service name"})


def build_prompt(logs: Logs) -> Prompt[None]:
    @tool(name="fetch_logs", description="Fetch the recent log of the service.")
    def fetch_logs(params: FetchParams, *, context: ToolContext) -> ToolResult[None]:
        logs.served.append(params.which)
        return ToolResult(message=logs.texts[params.which])

    @tool(name="status", description="Short health status of a service.")
    def status(params: StatusParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message=f"{params.service}: healthy, 3 replicas, p99 41 ms, error rate 0.01%")

    template: PromptTemplate[None] = PromptTemplate(
        ns="bench/context",
        key="ops",
        name="ops agent",
        sections=[
            MarkdownSection(
                title="Operations",
                key="ops",
                template=(
                    "You investigate service incidents. Fetch logs or status as needed and report findings."
                ),
                tools=[fetch_logs, status],
            )
        ],
    )
    return Prompt(template)


@dataclass
class Tally:
    """What was sent to the model, per user turn."""

    chars: list[int] = field(default_factory=list[int])
    tokens: list[int] = field(default_factory=list[int])
    extraction_tokens: list[int] = field(default_factory=list[int])

    def start_turn(self) -> None:
        self.chars.append(0)
        self.tokens.append(0)
        self.extraction_tokens.append(0)

    def add(self, chars: int, tokens: int, *, extraction: bool = False) -> None:
        self.chars[-1] += chars
        self.tokens[-1] += tokens
        if extraction:
            self.extraction_tokens[-1] += tokens


def _pieces(messages: tuple[Message, ...]) -> list[str]:
    texts: list[str] = []
    for message in messages:
        texts.append(message.content)
        for call in message.tool_calls:
            args = call.arguments
            texts.append(call.name)
            texts.append(args if isinstance(args, str) else json.dumps(dict(args)))
    return texts


def _tool_texts(request: ModelRequest) -> list[str]:
    return [json.dumps(t.spec(), separators=(",", ":")) for t in request.tools]


def _size(texts: list[str]) -> tuple[int, int]:
    return sum(len(t) for t in texts), sum(DEFAULT_TOKEN_COUNTER.count(t) for t in texts)


def measure_request(request: ModelRequest) -> tuple[int, int]:
    return _size(_pieces(request.context.messages) + _tool_texts(request))


def trimmed_size(request: ModelRequest, trimmer: Any) -> tuple[int, int]:
    """The same request after openai-agents' ToolOutputTrimmer, in Responses-API input items."""
    from agents.run_config import CallModelData, ModelInputData

    instructions = ""
    items: list[dict[str, Any]] = []
    for message in request.context.messages:
        if message.role == "system":
            instructions += message.content
        elif message.role == "tool":
            items.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": message.content}
            )
        else:
            if message.content or message.role == "user":
                items.append({"role": message.role, "content": message.content})
            for call in message.tool_calls:
                args = call.arguments if isinstance(call.arguments, str) else json.dumps(dict(call.arguments))
                items.append(
                    {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": args}
                )
    data = CallModelData(
        model_data=ModelInputData(input=items, instructions=instructions), agent=None, context=None
    )  # type: ignore[arg-type]
    filtered = trimmer(data)
    texts = [filtered.instructions or ""]
    for item in filtered.input:
        for key in ("content", "output", "name", "arguments"):
            value = item.get(key)
            if isinstance(value, str):
                texts.append(value)
    return _size(texts + _tool_texts(request))


class Agent:
    """The deterministic agent, the read-grep sub-agent, and the per-turn tally."""

    def __init__(self, logs: Logs, *, trimmer: Any | None = None) -> None:
        self.logs = logs
        self.turn = 0
        self.tally = Tally()
        self.trimmed = Tally() if trimmer is not None else None
        self.trimmer = trimmer
        self.answers: dict[int, str] = {}
        self.adapter = FunctionAdapter(self.reply, name="bench", model="scripted", context_window=8192)

    def begin_turn(self, turn: int) -> None:
        self.turn = turn
        self.tally.start_turn()
        if self.trimmed is not None:
            self.trimmed.start_turn()

    def reply(self, request: ModelRequest) -> AssistantTurn | str:
        names = {t.name for t in request.tools}
        chars, tokens = measure_request(request)
        if {"read", "grep"} <= names:
            self.tally.add(chars, tokens, extraction=True)
            return self._sub_agent(request)
        self.tally.add(chars, tokens)
        if self.trimmed is not None:
            self.trimmed.add(*trimmed_size(request, self.trimmer))
        return self._main(request)

    def _main(self, request: ModelRequest) -> AssistantTurn | str:
        last = request.context.messages[-1]
        which = LOG_TURNS.get(self.turn)
        if last.role == "user":
            if which is not None:
                return tool_call_turn(tool_call("fetch_logs", {"which": which}))
            return tool_call_turn(tool_call("status", {"service": f"svc-{self.turn % 4}"}))
        assert last.role == "tool"
        handle = HANDLE.search(last.content)
        if handle is not None:
            extract = "The single ERROR line: copy it exactly, including the NEEDLE identifier."
            arguments = {"handle": handle.group(1), "extract": extract, "mode": "read-grep"}
            return tool_call_turn(tool_call("tool_output", arguments))
        found = next((line for line in last.content.splitlines() if "NEEDLE-" in line), None)
        answer = f"turn {self.turn}: " + (found if found is not None else "all healthy")
        self.answers[self.turn] = answer
        return answer

    def _sub_agent(self, request: ModelRequest) -> AssistantTurn | str:
        system = request.context.messages[0].content
        last = request.context.messages[-1]
        if last.role == "user":
            handle = re.search(r"handle: (\S+)", system)
            assert handle is not None
            return tool_call_turn(
                tool_call("grep", {"handle": handle.group(1), "pattern": "ERROR", "context": 0})
            )
        nonce = NONCE.search(system)
        assert nonce is not None
        hit = next(
            (line for line in last.content.splitlines() if "NEEDLE-" in line), "NO RELEVANT DATA FOUND"
        )
        return f'<wp-{nonce.group(1)}-FINAL format="text">\n{hit}\n</wp-{nonce.group(1)}-FINAL>'


@dataclass
class Run:
    agent: Agent
    seconds: float
    stored_events: list[ToolResultStored]
    payload_bytes_stored: int


def run_session(mode: str, logs: Logs, trimmer: Any | None = None) -> Run:
    """Play the 20 turns with ``mode`` "inline" or "weakprompt"; returns the tallies."""
    agent = Agent(logs, trimmer=trimmer)
    prompt = build_prompt(logs)
    session = Session(session_id=f"bench-{mode}")
    events: list[ToolResultStored] = []
    session.bus.subscribe(ToolResultStored, events.append)
    if mode == "inline":
        settings = ToolOutputSettings(policy=SizePolicy(max_bytes=10**12, use_token_budget=False))
        load: bool = True
    else:
        settings = ToolOutputSettings(extraction_config=ExtractionConfig(grep_isolate=False))
        load = False
    started = time.perf_counter()
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, session.session_id)
        for turn in range(1, TURNS + 1):
            agent.begin_turn(turn)
            evaluate(
                prompt,
                adapter=agent.adapter,
                session=session,
                input=f"Turn {turn}: anything wrong right now?",
                transcript=transcript,
                load_tool_results=load,
                tool_outputs=settings,
            )
        with store.read() as conn:
            from sqlalchemy import func, select

            from weakprompt.store import tables

            stored = conn.execute(
                select(func.coalesce(func.sum(tables.tool_output_blobs.c.size_bytes), 0))
            ).scalar()
    return Run(agent, time.perf_counter() - started, events, int(stored or 0))


def _recovered(agent: Agent, logs: Logs) -> dict[int, bool]:
    return {turn: logs.needles[which] in agent.answers.get(turn, "") for turn, which in LOG_TURNS.items()}


def main(quick: bool) -> dict[str, Any]:
    from importlib import metadata

    try:
        from agents.extensions import ToolOutputTrimmer

        trimmer: Any | None = ToolOutputTrimmer()
        trimmer_version = metadata.version("openai-agents")
    except ImportError as exc:  # pragma: no cover - depends on the bench extra
        trimmer = None
        trimmer_version = f"missing ({exc})"

    needles = {"1mb": "NEEDLE-1MB-7c41e9", "10mb": "NEEDLE-10MB-b20f3d"}
    logs = Logs(
        {"1mb": make_log(MB, needles["1mb"], 3), "10mb": make_log(10 * MB, needles["10mb"], 5)}, needles
    )
    repeats = 1 if quick else 3

    inline_runs = [run_session("inline", logs, trimmer if i == 0 else None) for i in range(repeats)]
    weak_runs = [run_session("weakprompt", logs) for _ in range(repeats)]
    inline, weak = inline_runs[0], weak_runs[0]
    trimmed = inline.agent.trimmed

    rows: list[dict[str, Any]] = []
    for index in range(TURNS):
        turn = index + 1
        row: dict[str, Any] = {
            "turn": turn,
            "tool": f"fetch_logs {LOG_TURNS[turn]}" if turn in LOG_TURNS else "status",
            "inline_chars": inline.agent.tally.chars[index],
            "inline_tokens": inline.agent.tally.tokens[index],
            "weakprompt_chars": weak.agent.tally.chars[index],
            "weakprompt_tokens": weak.agent.tally.tokens[index],
            "weakprompt_extraction_tokens": weak.agent.tally.extraction_tokens[index],
        }
        if trimmed is not None:
            row["trimmer_chars"] = trimmed.chars[index]
            row["trimmer_tokens"] = trimmed.tokens[index]
        rows.append(row)

    total_inline = sum(inline.agent.tally.tokens)
    total_weak = sum(weak.agent.tally.tokens)
    total_trim = sum(trimmed.tokens) if trimmed is not None else None
    share = total_weak / total_inline
    recovered = _recovered(weak.agent, logs)
    inline_recovered = _recovered(inline.agent, logs)
    repeat_events = [e for e in weak.stored_events if e.tool_name == "fetch_logs"]
    offered_bytes = sum(len(logs.texts[w].encode()) for w in LOG_TURNS.values())
    rows.append(
        {
            "turn": "total",
            "tool": "",
            "inline_chars": sum(inline.agent.tally.chars),
            "inline_tokens": total_inline,
            "weakprompt_chars": sum(weak.agent.tally.chars),
            "weakprompt_tokens": total_weak,
            "weakprompt_extraction_tokens": sum(weak.agent.tally.extraction_tokens),
            **(
                {"trimmer_chars": sum(trimmed.chars), "trimmer_tokens": total_trim}
                if trimmed is not None
                else {}
            ),
        }
    )

    def seconds(runs: list[Run]) -> dict[str, float]:
        values = [r.seconds for r in runs]
        spread = (max(values) - min(values)) if len(values) > 1 else 0.0
        return {"median_s": round(statistics.median(values), 3), "spread_s": round(spread, 3)}

    goals = [
        {
            "goal": f"weakprompt sends <= {GOAL_SHARE:.0%} of the inline baseline's tokens",
            "met": share <= GOAL_SHARE,
            "value": f"{share:.3%} ({total_weak:,} of {total_inline:,} tokens)",
        },
        {
            "goal": "needle recovered through tool_output (read-grep) every time",
            "met": all(recovered.values()),
            "value": ", ".join(f"turn {t}: {'yes' if ok else 'NO'}" for t, ok in recovered.items()),
        },
        {
            "goal": "the repeated 1 MB output is stored once (same handle, deduplicated write)",
            "met": len(repeat_events) == 3
            and repeat_events[2].deduplicated
            and repeat_events[0].handle == repeat_events[2].handle
            and weak.payload_bytes_stored < offered_bytes,
            "value": (
                f"payload bytes stored {weak.payload_bytes_stored:,} of {offered_bytes:,} returned; "
                f"deduplicated flags {[e.deduplicated for e in repeat_events]}"
            ),
        },
    ]
    chart_series: dict[str, list[list[float]]] = {
        "inline (baseline)": [[i + 1, t] for i, t in enumerate(inline.agent.tally.tokens)],
        "weakprompt": [[i + 1, t] for i, t in enumerate(weak.agent.tally.tokens)],
    }
    if trimmed is not None:
        chart_series["openai-agents ToolOutputTrimmer"] = [[i + 1, t] for i, t in enumerate(trimmed.tokens)]
    notes = [
        f"Turns {sorted(LOG_TURNS)} call fetch_logs ({', '.join(LOG_TURNS.values())}); "
        "turn 16 returns turn 4's output again. Other turns call a ~80-byte status tool.",
        "Tokens are weakprompt's byte estimate (4 bytes per token) for all three columns; weakprompt "
        "includes its extraction sub-agent's calls (column weakprompt_extraction_tokens).",
        "Trimmer: applied to the inline run's requests as its call_model_input_filter would be; it keeps "
        "the last 2 user turns whole, so each log is sent in full on the turn it arrives and the next one, "
        "then only a 200-character preview remains (the needle is no longer reachable).",
        f"Needle found by the inline baseline (full log in context): {inline_recovered}.",
        f"Session wall time, inline: {seconds(inline_runs)}, weakprompt: {seconds(weak_runs)} "
        f"({repeats} repeat(s)).",
    ]
    if trimmed is not None and total_trim is not None:
        notes.append(f"Trimmer share of inline tokens: {total_trim / total_inline:.2%}.")
    return {
        "title": "Context sent per turn: 20 turns, 1 MB and 10 MB tool outputs",
        "rows": rows,
        "goals": goals,
        "peers": {"openai-agents ToolOutputTrimmer": trimmer_version},
        "notes": notes,
        "charts": [
            {
                "kind": "line",
                "title": "Context tokens sent per turn (log scale)",
                "xlabel": "user turn",
                "ylabel": "tokens sent (all model calls of the turn)",
                "logy": True,
                "series": chart_series,
                "file": "context_tokens_per_turn.png",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one repeat instead of three")
    args = parser.parse_args()
    result = main(args.quick)
    out = Path(__file__).resolve().parent / "results" / "context.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, default=str))
    for goal in result["goals"]:
        print(("MET  " if goal["met"] else "MISS ") + goal["goal"] + ": " + str(goal["value"]))
    print(f"wrote {out}")
