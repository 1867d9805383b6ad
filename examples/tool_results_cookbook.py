"""Cookbook: keeping tool results small without losing them.

Run: ``.venv/bin/python examples/tool_results_cookbook.py``

Everything here runs offline: the "models" are deterministic
``FunctionAdapter``s, so every number printed is reproducible. Swap in
``OpenAIAdapter``, ``AnthropicAdapter`` or ``LocalAdapter`` for real summaries.

The recipes, from the smallest tool to the most automatic:

1. ``tool_result(edit=...)``: rewrite one committed result by hand; the
   original stays in ``log()``.
2. The query API: ``find_tool_results()``, ``find_tool_calls()`` and
   ``find_tool_turns()`` to see which results cost the most context.
3. A ``tool_result`` hook: ``transcript.on("tool_result", handler)`` sees
   each result before it is committed and may approve, edit, summarize or
   reject it.
4. ``compress_tool_calls()``: summarize results that are already committed,
   one EDIT per result, the final answer untouched.
5. ``configure_tool_summarization()`` inside ``evaluate()``: per-tool
   instructions and a token threshold; the evaluation's own adapter writes
   the summaries and their cost shows up in the evaluation's usage.
6. An output too large for the context: ``evaluate()`` stores it and the
   model sees a handle; it calls ``tool_output(handle, extract, mode)`` and
   gets back only what it asked for (here through read-grep extraction).

Every summary records where it came from: ``summarized_from`` is the hash of
the stored original, and ``transcript.get_blob(hash)`` returns it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from weakprompt import (
    AssistantTurn,
    FunctionAdapter,
    MarkdownSection,
    ModelRequest,
    Prompt,
    PromptTemplate,
    Session,
    Store,
    ToolCall,
    ToolContext,
    ToolResult,
    Transcript,
    Usage,
    evaluate,
    tool,
)
from weakprompt.adapters.testing import tool_call, tool_call_turn
from weakprompt.events import ToolOutputExtracted, ToolResultSummarized
from weakprompt.transcript import TOOL_SUMMARY_SYSTEM_PROMPT, PendingToolResult

# A build log: a couple of hundred routine lines and the two that matter (about 8 KB,
# small enough to stay in context, large enough to be worth summarizing).
BUILD_LOG = "\n".join(
    [f"[{i:04d}] INFO compiled module_{i}.py" for i in range(150)]
    + ["[0150] ERROR tests/test_api.py::test_login failed: expected 200, got 500"]
    + [f"[{i:04d}] INFO linked target_{i}" for i in range(151, 250)]
    + ["[0250] ERROR build failed: 1 test failed"]
)

# A nightly log far over the 12 KB cap for one result: it never enters the context.
NIGHTLY_LOG = "\n".join(
    f"[{i:05d}] INFO worker-{i % 8} finished job {i}"
    if i != 31337
    else f"[{i:05d}] ERROR disk full on /var/db"
    for i in range(40000)
)

GREP_HITS = "src/app/auth.py:88: def login(user, password):\n" + "".join(
    f"docs/changelog.md:{n}: mentions login\n" for n in range(1, 120)
)


def keep_errors(text: str) -> str:
    """The deterministic 'model': keep the lines that say ERROR or define something."""
    payload = text.split("<tool_output>\n", 1)[-1].rsplit("\n</tool_output>", 1)[0]
    lines = payload.splitlines()
    kept = [line for line in lines if "ERROR" in line or " def " in line]
    return "\n".join(kept) + f"\n({len(lines) - len(kept)} routine lines left out)"


def summarizer_reply(request: ModelRequest) -> AssistantTurn:
    return AssistantTurn(
        text=keep_errors(request.context.messages[-1].content),
        usage=Usage(input_tokens=request.context.token_count, output_tokens=30, model_calls=1),
    )


SUMMARIZER = FunctionAdapter(summarizer_reply, name="offline", model="keep-errors")


def show(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 66 - len(title)))


def record_agent_turns(t: Transcript) -> dict[str, str]:
    """What an agent loop would have committed: a question, two tool turns, an answer."""
    t.system("You fix failing builds.")
    t.user("Why did the build fail, and where is login defined?")
    t.assistant("", tool_calls=[ToolCall("c1", "read_log", '{"name": "build"}')])
    log = t.tool_result("c1", "read_log", BUILD_LOG)
    t.assistant("", tool_calls=[ToolCall("c2", "grep", '{"pattern": "login"}')])
    grep = t.tool_result("c2", "grep", GREP_HITS)
    answer = t.assistant("test_login fails with a 500; login is defined in src/app/auth.py:88.")
    return {"log": log.hash, "grep": grep.hash, "answer": answer.hash}


def recipe_edit(t: Transcript, hashes: dict[str, str]) -> None:
    show("1. tool_result(edit=): rewrite one result by hand")
    before = t.compile().token_count
    edit = t.tool_result("c2", "grep", "src/app/auth.py:88: def login(user, password):", edit=hashes["grep"])
    print(f"edit {edit.hash[:12]} replaces {edit.edit_target and edit.edit_target[:12]}")
    print(f"context tokens: {before} -> {t.compile().token_count}")
    print(f"log keeps both versions: {len(t.log())} commits")


def recipe_queries(t: Transcript) -> None:
    show("2. query API: where does the context go?")
    for turn in t.find_tool_turns():
        print(f"turn {turn.call.hash[:12]} tools={list(turn.tool_names)} tokens={turn.total_tokens}")
    print("grep results:", [r.text[:40] for r in t.find_tool_results(name="grep")])
    print("calls to read_log:", len(t.find_tool_calls(name="read_log")))


def recipe_hook(store: Store) -> None:
    show("3. a tool_result hook: decide before anything is committed")
    t = Transcript(store, "cookbook-hook")
    t.hooks.summarizer = SUMMARIZER

    def handler(pending: PendingToolResult) -> None:
        if pending.tool_name == "read_log" and pending.token_count > 500:
            pending.triggered_by = "cookbook:long-logs"
            pending.summarize(instructions="keep every ERROR line verbatim", target_tokens=80)
        elif "password=" in pending.content:
            pending.reject("looks like a credential")
        # deciding nothing approves the (possibly summarized) result

    t.on("tool_result", handler)
    t.user("Check the build.")
    t.assistant("", tool_calls=[ToolCall("c1", "read_log", "{}")])
    commit = t.tool_result("c1", "read_log", BUILD_LOG)
    print("committed:", commit.text.replace("\n", " | "))
    print(f"tokens: {t.token_counter.count(BUILD_LOG)} -> {commit.token_count}")
    original = t.get_blob(str(commit.metadata["summarized_from"]))
    print(f"summarized_from resolves to the {len(original.content.splitlines())}-line original")
    print("triggered_by:", commit.metadata["triggered_by"])


def recipe_compress(t: Transcript, hashes: dict[str, str]) -> None:
    show("4. compress_tool_calls(): shrink what is already committed")
    before = t.compile().token_count
    report = t.compress_tool_calls(name="read_log", instructions="keep ERROR lines", summarizer=SUMMARIZER)
    for item in report.compressed:
        print(f"{item.before.content.name}: {item.before.token_count} -> {item.after.token_count} tokens")
    print(f"context tokens: {before} -> {t.compile().token_count}; summarizer usage {report.usage}")
    print("final answer untouched:", t.compile().messages[-1].content)
    assert t.compile_view().commits[-1].hash == hashes["answer"]


@dataclass(frozen=True)
class LogRequest:
    name: str


@tool(name="read_log", description="Read a log by name: build or nightly.")
def read_log(params: LogRequest, *, context: ToolContext) -> ToolResult[None]:
    return ToolResult(message=NIGHTLY_LOG if params.name == "nightly" else BUILD_LOG)


def log_prompt(task: str) -> Prompt[None]:
    section = MarkdownSection(title="Task", key="task", template=task, tools=[read_log])
    return Prompt(PromptTemplate(ns="examples", key="cookbook", name="log-doctor", sections=[section]))


def agent_and_summarizer(request: ModelRequest) -> AssistantTurn:
    """One adapter for both jobs, as a real model would be: it answers the agent and writes summaries."""
    messages = request.context.messages
    if messages[0].content == TOOL_SUMMARY_SYSTEM_PROMPT:
        return summarizer_reply(request)
    if messages[-1].role == "user":
        return tool_call_turn(tool_call("read_log", {"name": "build"}))
    seen = messages[-1].content
    return AssistantTurn(text=f"The build failed because: {seen.splitlines()[0]}", usage=Usage(model_calls=1))


def recipe_configured(store: Store) -> None:
    show("5. configure_tool_summarization() inside evaluate()")
    session = Session()
    transcript = Transcript(store, "cookbook-eval")
    transcript.configure_tool_summarization(
        instructions={"read_log": "keep every ERROR line verbatim"},
        auto_threshold=300,
        default_instructions="keep paths and line numbers",
    )
    events: list[ToolResultSummarized] = []
    session.bus.subscribe(ToolResultSummarized, events.append)
    prompt = Prompt(
        PromptTemplate(
            ns="examples",
            key="cookbook",
            name="build-doctor",
            sections=[
                MarkdownSection(title="Task", key="task", template="Explain the failure.", tools=[read_log])
            ],
        )
    )
    adapter = FunctionAdapter(agent_and_summarizer, name="offline", model="agent")
    response = evaluate(
        prompt, adapter=adapter, session=session, input="Why did it fail?", transcript=transcript
    )
    print("answer:", response.text)
    for event in events:
        print(
            f"summarized {event.tool_name} ({event.triggered_by}): "
            f"{event.original_tokens} -> {event.summary_tokens} tokens by {event.summarizer}"
        )
    print(f"usage (agent turns + summary): {response.usage}")


HANDLE = re.compile(r'tool_output\(handle = "([^"]+)"')
FINAL_WRAPPER = re.compile(r"<wp-([A-Za-z0-9]+)-FINAL")


def nightly_model(request: ModelRequest) -> AssistantTurn | str:
    """Plays the agent and, when offered read/grep over a stored output, the extraction sub-agent."""
    messages = request.context.messages
    system = messages[0].content if messages and messages[0].role == "system" else ""
    offered = {t.name for t in request.tools}
    last = messages[-1]
    if {"read", "grep"} <= offered and "read_log" not in offered:  # the read-grep extractor
        if last.role == "user":
            handle = re.search(r"handle: (\S+)", system)
            assert handle is not None
            return tool_call_turn(
                tool_call("grep", {"handle": handle.group(1), "pattern": "ERROR", "context": 0})
            )
        wrapper = FINAL_WRAPPER.search(system)
        assert wrapper is not None
        hits = "\n".join(line for line in last.content.splitlines() if "] ERROR" in line)
        return f'<wp-{wrapper.group(1)}-FINAL format="text">\n{hits}\n</wp-{wrapper.group(1)}-FINAL>'
    if last.role == "user":
        return tool_call_turn(tool_call("read_log", {"name": "nightly"}))
    handle = HANDLE.search(last.content)
    if handle is not None:
        arguments = {"handle": handle.group(1), "extract": "every ERROR line, verbatim", "mode": "read-grep"}
        return tool_call_turn(tool_call("tool_output", arguments))
    found = [line for line in last.content.splitlines() if "ERROR" in line]
    return f"The nightly run failed: {found[-1] if found else 'no error found'}"


def recipe_oversized(store: Store) -> None:
    show("6. an oversized output, reached through tool_output")
    session = Session()
    transcript = Transcript(store, "cookbook-nightly")
    extracted: list[ToolOutputExtracted] = []
    session.bus.subscribe(ToolOutputExtracted, extracted.append)
    adapter = FunctionAdapter(nightly_model, name="offline", model="agent", context_window=8192)
    response = evaluate(
        log_prompt("Find what broke the nightly run."),
        adapter=adapter,
        session=session,
        input="What broke last night?",
        transcript=transcript,
    )
    handle_message, reply = (r.text for r in transcript.find_tool_results())
    print("the model saw, instead of the log:", handle_message.splitlines()[0])
    print("tool_output answered:", reply.replace("\n", " | ")[:160])
    for event in extracted:
        print(f"extraction strategy: {event.strategy}, fallback: {event.fallback_reason}")
    print("answer:", response.text)
    largest = max(request.context.token_count for request in adapter.requests)
    print(f"largest request: {largest} tokens; the log alone: {transcript.token_counter.count(NIGHTLY_LOG)}")


def main() -> None:
    with Store.open("sqlite://") as store:
        transcript = Transcript(store, "cookbook")
        hashes = record_agent_turns(transcript)
        recipe_edit(transcript, hashes)
        recipe_queries(transcript)
        recipe_hook(store)
        recipe_compress(transcript, hashes)
        recipe_configured(store)
        recipe_oversized(store)


if __name__ == "__main__":
    main()
