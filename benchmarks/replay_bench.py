"""Replay: recorded sessions re-run offline, and seeded prompt mutations named by the report.

Two measurements, one process, one run:
- **speed**: 50 sessions of a small shop agent (three sections, two tools, a
  typed answer; 1 to 3 tool turns each, seeded) are recorded in a SQLite
  file against a scripted model that takes 50 ms per call, as a real
  provider takes time. Each is then replayed with the same prompt. The
  replay must call no provider (a counter on the scripted model), every
  request must equal the recorded one byte for byte (the report is
  ``identical``, and the replayed conversation's canonical JSON equals the
  recording's), and the whole replay must take under 5% of the recorded
  runs' wall time. The recording is read from the file; each replayed run
  writes its own session to a private in-memory store (``replay``'s
  default). Measured on 2 CPUs shared by other jobs (load average 5 to 7),
  four runs: replay CPU time 3.0% to 3.9% of the recorded wall time, wall
  time 4.2% to 8.7% (the wall share follows the load). The same machine,
  the same minutes, with the replay writing its run into the file (as
  before): CPU 4.0%, wall 7.4% to 7.9%;
- **naming**: 30 seeded mutations of the prompt (a section's text, a tool's
  description, a tool's schema, a model setting; 8, 8, 7 and 7), each
  replayed over a recorded session: the report must name the changed item
  (the section by path with both hashes, the tool by name with the changed
  field, the setting by name) every time. ``tests/perf/test_replay_bench.py``
  runs the same check as a plain test.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import run_cli

from weakprompt import (
    MarkdownSection,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    ToolResult,
    Transcript,
    evaluate,
    tool,
)
from weakprompt.adapters.testing import ScriptedAdapter, text_turn, tool_call, tool_call_turn
from weakprompt.canonical import canonical_json
from weakprompt.messages import AssistantTurn
from weakprompt.model import ModelRequest, ModelSettings
from weakprompt.replay import ReplayDivergence, replay_sync
from weakprompt.tools import AnyTool
from weakprompt.transcript.records import message_payload

CALL_SECONDS = 0.05
SECTIONS = {
    "shop": "Answer stock questions.",
    "shop/returns": "Returns within 30 days.",
    "style": "Be brief.",
}
DESCRIPTIONS = {"stock": "Units in stock.", "price": "Unit price in cents."}
SETTINGS = {"temperature": 0.2, "seed": 7, "max_output_tokens": 400, "top_p": 0.9}
KINDS = ("section", "description", "schema", "settings")


@dataclass(frozen=True)
class Answer:
    total: int


class SlowModel(ScriptedAdapter):
    """A scripted model that takes ``seconds`` per call, and counts every call made to any instance."""

    calls = 0

    def __init__(self, turns: Sequence[AssistantTurn], seconds: float) -> None:
        super().__init__(turns)
        self._seconds = seconds

    def complete(self, request: ModelRequest) -> AssistantTurn:
        SlowModel.calls += 1
        time.sleep(self._seconds)
        return super().complete(request)

    async def complete_async(self, request: ModelRequest) -> AssistantTurn:
        SlowModel.calls += 1
        await asyncio.sleep(self._seconds)
        return super().complete(request)


def _tool(name: str, description: str, *, wider: bool) -> AnyTool:
    if wider:

        @tool(name=name, description=description)
        def lookup_in(sku: str, warehouse: str = "main") -> ToolResult[int]:
            return ToolResult.ok(len(sku))

        return lookup_in

    @tool(name=name, description=description)
    def lookup(sku: str) -> ToolResult[int]:
        return ToolResult.ok(len(sku))

    return lookup


def shop_prompt(
    *,
    sections: dict[str, str] | None = None,
    descriptions: dict[str, str] | None = None,
    wider: str | None = None,
    settings: dict[str, float | int] | None = None,
) -> Prompt[Answer]:
    """The shop prompt; each argument replaces part of it (a section's text by path, a tool's
    description, the tool given a wider schema, the model settings)."""
    texts = {**SECTIONS, **(sections or {})}
    described = {**DESCRIPTIONS, **(descriptions or {})}
    tools = [_tool(name, described[name], wider=name == wider) for name in ("stock", "price")]
    returns = MarkdownSection(title="Returns", key="returns", template=texts["shop/returns"])
    template = PromptTemplate(
        ns="bench",
        key="shop",
        sections=[
            MarkdownSection(
                title="Shop", key="shop", template=texts["shop"], tools=tools, children=[returns]
            ),
            MarkdownSection(title="Style", key="style", template=texts["style"]),
        ],
        output_type=Answer,
        model_settings=ModelSettings(**{**SETTINGS, **(settings or {})}),  # type: ignore[arg-type]
    )
    return Prompt(template)


def _script(rng: random.Random) -> list[AssistantTurn]:
    turns: list[AssistantTurn] = []
    for turn in range(rng.randint(1, 3)):
        calls = [
            tool_call(
                rng.choice(("stock", "price")), {"sku": rng.choice(("mug", "cup", "plate"))}, id=f"c{turn}{i}"
            )
            for i in range(rng.randint(1, 2))
        ]
        turns.append(tool_call_turn(*calls))
    turns.append(text_turn(f'{{"total": {rng.randint(0, 99)}}}'))
    return turns


def record_sessions(
    store: Store, count: int, *, seconds: float = CALL_SECONDS, seed: int = 34, prefix: str = "s"
) -> float:
    """Record ``count`` sessions (``s0``...) into ``store``; the wall time of the runs, in seconds."""
    rng = random.Random(seed)
    prompt = shop_prompt()
    total = 0.0
    for index in range(count):
        model = SlowModel(_script(rng), seconds)
        start = time.perf_counter()
        evaluate(
            prompt,
            adapter=model,
            session=Session(session_id=f"{prefix}{index}"),
            store=store,
            input=f"How many items for order {index}?",
        )
        total += time.perf_counter() - start
    return total


def _sent(store: Store, session_id: str) -> list[str]:
    return [canonical_json(message_payload(m)) for m in Transcript(store, session_id).compile().messages]


@dataclass(frozen=True)
class Mutation:
    kind: str
    target: str
    """The section path, tool name or setting changed."""
    prompt: Prompt[Answer]


def mutations(count: int = 30, *, seed: int = 34) -> list[Mutation]:
    """``count`` seeded mutations, the four kinds in turn."""
    rng = random.Random(seed)
    made: list[Mutation] = []
    for index in range(count):
        kind = KINDS[index % len(KINDS)]
        word = "".join(rng.choice("abcdefghij") for _ in range(rng.randint(1, 8)))
        if kind == "section":
            path = rng.choice(sorted(SECTIONS))
            made.append(Mutation(kind, path, shop_prompt(sections={path: f"{SECTIONS[path]} {word}"})))
        elif kind == "description":
            name = rng.choice(sorted(DESCRIPTIONS))
            changed = {name: f"{DESCRIPTIONS[name]} ({word})"}
            made.append(Mutation(kind, name, shop_prompt(descriptions=changed)))
        elif kind == "schema":
            name = rng.choice(sorted(DESCRIPTIONS))
            made.append(Mutation(kind, name, shop_prompt(wider=name)))
        else:
            key = rng.choice(sorted(SETTINGS))
            value = {"temperature": 0.5, "seed": 8 + len(word), "max_output_tokens": 500, "top_p": 0.5}[key]
            made.append(Mutation(kind, key, shop_prompt(settings={key: value})))
    return made


def names_it(mutation: Mutation, divergence: ReplayDivergence | None) -> bool:
    """Whether the report names exactly what the mutation changed."""
    if divergence is None:
        return False
    if mutation.kind == "section":
        return (
            divergence.kind == "section"
            and divergence.section_path == mutation.target
            and None is not divergence.recorded_hash != divergence.replayed_hash is not None
        )
    if mutation.kind in ("description", "schema"):
        field = "description" if mutation.kind == "description" else "parameters"
        return (
            divergence.kind == "tool" and divergence.tool_name == mutation.target and field in divergence.diff
        )
    return divergence.kind == "settings" and divergence.setting == mutation.target


def mutation_check(
    store: Store, sessions: Sequence[str], *, count: int = 30, seed: int = 34
) -> list[tuple[Mutation, bool]]:
    """Replay each seeded mutation over one of ``sessions`` (seeded); whether its report named it."""
    rng = random.Random(seed + 1)
    found: list[tuple[Mutation, bool]] = []
    for mutation in mutations(count, seed=seed):
        report = replay_sync(store, rng.choice(list(sessions)), prompt=mutation.prompt)
        found.append((mutation, names_it(mutation, report.divergence)))
    return found


def main(quick: bool) -> dict[str, object]:
    count = 10 if quick else 50
    with tempfile.TemporaryDirectory() as folder, Store.open(Path(folder) / "replay.db") as store:
        record_sessions(store, 1, seconds=0, prefix="warm")  # both paths warmed up first, untimed
        replay_sync(store, "warm0", prompt=shop_prompt())
        calls_before = SlowModel.calls
        recorded_seconds = record_sessions(store, count)
        recorded_calls = SlowModel.calls - calls_before
        sessions = [f"s{index}" for index in range(count)]
        prompt = shop_prompt()
        start, cpu = time.perf_counter(), time.process_time()
        reports = [replay_sync(store, session_id, prompt=prompt) for session_id in sessions]
        replay_seconds, replay_cpu = time.perf_counter() - start, time.process_time() - cpu
        provider_calls = SlowModel.calls - calls_before - recorded_calls
        identical = sum(
            1
            for report in reports
            if report.identical
            and _sent(report.replay_store, report.replay_session_id) == _sent(store, report.session_id)
        )
        checked = mutation_check(store, sessions)
    share = replay_seconds / recorded_seconds
    named = sum(1 for _, ok in checked if ok)
    by_kind = {kind: sum(1 for m, _ in checked if m.kind == kind) for kind in KINDS}
    rows = [
        {
            "case": f"recorded: {count} runs, {recorded_calls} model calls of 50 ms",
            "seconds": round(recorded_seconds, 3),
        },
        {"case": f"replayed: {count} sessions", "seconds": round(replay_seconds, 3), "share": f"{share:.2%}"},
        {
            "case": "replayed: process CPU time",
            "seconds": round(replay_cpu, 3),
            "share": f"{replay_cpu / recorded_seconds:.2%}",
        },
        {"case": "replays identical (report and canonical conversation)", "value": f"{identical}/{count}"},
        {"case": "provider calls during replay", "value": provider_calls},
        {
            "case": f"mutations named ({', '.join(f'{k} {n}' for k, n in by_kind.items())})",
            "value": f"{named}/{len(checked)}",
        },
    ]
    goals = [
        {"goal": "replay makes 0 provider calls", "met": provider_calls == 0, "value": str(provider_calls)},
        {"goal": "every replay byte-identical", "met": identical == count, "value": f"{identical}/{count}"},
        {"goal": "replay under 5% of the recorded wall time", "met": share < 0.05, "value": f"{share:.2%}"},
        {
            "goal": "the report names the changed item in 100% of 30 mutations",
            "met": named == len(checked),
            "value": f"{named}/{len(checked)}",
        },
    ]
    return {
        "title": "Replay: offline re-runs and named divergences",
        "rows": rows,
        "goals": goals,
        "peers": {},
        "notes": [
            f"{count} sessions recorded against a scripted model taking {CALL_SECONDS * 1000:.0f} ms "
            "per call "
            f"({recorded_calls} calls); each replayed with the same prompt, read from the SQLite file, "
            "its own run written to a private in-memory store (replay's default; record=True keeps it "
            "in the file).",
            f"Replay wall time {replay_seconds:.3f} s against {recorded_seconds:.3f} s recorded: {share:.2%} "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs while it ran).",
            "Mutations: a section's text (by path, nested ones included), a tool's description, a tool's "
            "schema (a new optional parameter), one model setting; the report must name that item.",
        ],
        "charts": [],
        "replay_share": round(share, 5),
    }


if __name__ == "__main__":
    run_cli(main, name="replay", description=__doc__, show_notes=True)
