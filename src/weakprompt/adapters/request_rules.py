"""Each provider's pairing and ordering rules, checked on a request before it is sent.

A provider answers 400 to a conversation it cannot follow: a tool call
without its result, a result without its call, a thinking block missing
from the tool-use turn it belongs to, roles in an order it refuses. The
wire modules are written so that a compiled transcript never breaks these
rules; these checks make sure, on the exact request an adapter is about to
send, and raise :class:`~weakprompt.errors.InvalidRequestError` naming the
message (or input item) index and the rule, so nothing invalid reaches the
provider. specs/REASONING.md lists the rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, cast

from ..errors import InvalidRequestError

if TYPE_CHECKING:
    from google.genai import types

__all__ = [
    "check_anthropic_messages",
    "check_chat_messages",
    "check_gemini_contents",
    "check_responses_input",
    "continues_tool_use",
    "starts_with_thinking",
]

_THINKING = ("thinking", "redacted_thinking")


def _fail(provider: str, index: int | None, rule: str, problem: str) -> InvalidRequestError:
    where = f"message {index}" if index is not None else "the request"
    return InvalidRequestError(
        f"{provider}: invalid request at {where} ({rule}): {problem}; nothing was sent",
        provider=provider,
        index=index,
        rule=rule,
    )


def _mapping(value: object) -> Mapping[str, object]:
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else {}


def _blocks(message: Mapping[str, object]) -> list[Mapping[str, object]]:
    content = message.get("content")
    if isinstance(content, list):
        return [_mapping(block) for block in cast("list[object]", content)]
    return []


def _duplicates(ids: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    return {i for i in ids if i in seen or seen.add(i)}


# ---------------------------------------------------------------- Anthropic Messages


def starts_with_thinking(message: Mapping[str, object]) -> bool:
    """Whether an assistant message's content begins with a thinking (or redacted thinking) block."""
    blocks = _blocks(message)
    return bool(blocks) and blocks[0].get("type") in _THINKING


def continues_tool_use(messages: Sequence[Mapping[str, object]]) -> bool:
    """Whether the request continues a tool-use turn: it ends with tool results after an assistant message."""
    if len(messages) < 2 or messages[-1].get("role") != "user" or messages[-2].get("role") != "assistant":
        return False
    return any(block.get("type") == "tool_result" for block in _blocks(messages[-1]))


def check_anthropic_messages(
    messages: Sequence[Mapping[str, object]], *, thinking: bool, provider: str = "anthropic"
) -> None:
    """The Messages API's rules.

    ``roles``: user and assistant alternate. ``tool-result-first``: a user message puts its tool results
    before anything else. ``tool-pairing``: every ``tool_use`` has exactly
    one ``tool_result`` in the very next message, and every ``tool_result``
    answers a ``tool_use`` of the message just before. ``thinking-first``:
    with thinking on, a request that continues a tool-use turn starts that
    turn's assistant message with its thinking block.
    """
    previous_calls: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        expected = ("assistant" if messages[index - 1].get("role") == "user" else "user") if index else role
        if role not in ("user", "assistant") or role != expected:
            raise _fail(provider, index, "roles", f"a {role!r} message where a {expected!r} one must come")
        blocks = _blocks(message)
        results = [str(block.get("tool_use_id")) for block in blocks if block.get("type") == "tool_result"]
        kinds = [block.get("type") for block in blocks]
        if results and kinds[: len(results)] != ["tool_result"] * len(results):
            raise _fail(
                provider, index, "tool-result-first", "tool_result blocks must come before other blocks"
            )
        if role == "user":
            _check_pairs(provider, index, previous_calls, results)
            previous_calls = []
        else:
            previous_calls = [str(block.get("id")) for block in blocks if block.get("type") == "tool_use"]
            twice = _duplicates(previous_calls)
            if twice:
                raise _fail(provider, index, "tool-pairing", f"tool_use id(s) {sorted(twice)} used twice")
    if previous_calls:
        raise _fail(
            provider,
            len(messages) - 1,
            "tool-pairing",
            f"tool_use {previous_calls} has no tool_result after it",
        )
    if thinking and continues_tool_use(messages) and not starts_with_thinking(messages[-2]):
        raise _fail(
            provider,
            len(messages) - 2,
            "thinking-first",
            "with thinking on, the assistant message of a tool-use turn must start with its thinking block",
        )


def _check_pairs(provider: str, index: int, calls: list[str], results: list[str]) -> None:
    missing = [call for call in calls if results.count(call) == 0]
    if missing:
        raise _fail(provider, index, "tool-pairing", f"no tool_result for tool_use {missing}")
    extra = sorted({result for result in results if result not in calls or results.count(result) > 1})
    if extra:
        raise _fail(
            provider, index, "tool-pairing", f"tool_result {extra} answers no tool_use just before, or twice"
        )


# ---------------------------------------------------------------- OpenAI Chat Completions


def check_chat_messages(messages: Sequence[Mapping[str, object]], *, provider: str = "openai") -> None:
    """Chat Completions' rules.

    ``tool-pairing``: the messages right after an assistant message with
    ``tool_calls`` are one ``tool`` message per call (any order), and a
    ``tool`` message appears nowhere else.
    """
    waiting: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in waiting:
                raise _fail(
                    provider, index, "tool-pairing", f"tool result {call_id!r} answers no open tool call"
                )
            waiting.remove(call_id)
            continue
        if waiting:
            raise _fail(provider, index, "tool-pairing", f"tool call(s) {waiting} have no result before this")
        if role == "assistant":
            calls = message.get("tool_calls")
            waiting = [str(_mapping(call).get("id")) for call in cast("list[object]", calls or [])]
            twice = _duplicates(waiting)
            if twice:
                raise _fail(provider, index, "tool-pairing", f"tool call id(s) {sorted(twice)} used twice")
    if waiting:
        raise _fail(provider, len(messages) - 1, "tool-pairing", f"tool call(s) {waiting} have no result")


# ---------------------------------------------------------------- OpenAI Responses


def check_responses_input(items: Sequence[Mapping[str, object]], *, provider: str = "openai") -> None:
    """The Responses API's rules, on the input items.

    ``tool-pairing``: every ``function_call`` has exactly one
    ``function_call_output`` after it, and every output a call before it.
    ``reasoning-follows``: a ``reasoning`` item is followed by another
    reasoning item, or by the output it led to (an assistant message or a
    ``function_call``).
    """
    open_calls: list[str] = []
    answered: set[str] = set()
    for index, item in enumerate(items):
        kind = item.get("type")
        if kind == "function_call":
            call_id = str(item.get("call_id"))
            if call_id in open_calls or call_id in answered:
                raise _fail(provider, index, "tool-pairing", f"function_call {call_id!r} used twice")
            open_calls.append(call_id)
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in open_calls:
                raise _fail(
                    provider, index, "tool-pairing", f"function_call_output {call_id!r} answers no call"
                )
            open_calls.remove(call_id)
            answered.add(call_id)
        elif kind == "reasoning":
            following = _mapping(items[index + 1] if index + 1 < len(items) else None)
            led_to = following.get("type") in ("reasoning", "function_call") or (
                following.get("type") == "message" and following.get("role") == "assistant"
            )
            if not led_to:
                raise _fail(
                    provider,
                    index,
                    "reasoning-follows",
                    "a reasoning item must be followed by what it led to",
                )
    if open_calls:
        raise _fail(provider, len(items) - 1, "tool-pairing", f"function_call(s) {open_calls} have no output")


# ---------------------------------------------------------------- Gemini


def check_gemini_contents(contents: Sequence[types.Content], *, provider: str = "gemini") -> None:
    """Gemini's rules, on the contents.

    ``roles``: user and model alternate. ``tool-pairing``: a model content with function calls is
    followed by a user content holding exactly one function response per
    call (by id when the call has one, else by name), and function responses
    appear nowhere else.
    """
    calls: list[tuple[str | None, str | None]] = []
    for index, content in enumerate(contents):
        expected = ("model" if contents[index - 1].role == "user" else "user") if index else content.role
        if content.role not in ("user", "model") or content.role != expected:
            raise _fail(
                provider, index, "roles", f"a {content.role!r} content where a {expected!r} one must come"
            )
        parts = content.parts or []
        responses = [(p.function_response.id, p.function_response.name) for p in parts if p.function_response]
        if content.role == "user":
            _check_gemini_pairs(provider, index, calls, responses)
            calls = []
        else:
            calls = [(p.function_call.id, p.function_call.name) for p in parts if p.function_call]
    if calls:
        raise _fail(provider, len(contents) - 1, "tool-pairing", f"function call(s) {calls} have no response")


def _check_gemini_pairs(
    provider: str,
    index: int,
    calls: list[tuple[str | None, str | None]],
    responses: list[tuple[str | None, str | None]],
) -> None:
    left = list(calls)
    for call_id, name in responses:
        match = next((c for c in left if (c[0] == call_id if call_id else c[1] == name)), None)
        if match is None:
            shown = call_id or name
            raise _fail(
                provider, index, "tool-pairing", f"function response {shown!r} answers no call just before"
            )
        left.remove(match)
    if left:
        raise _fail(provider, index, "tool-pairing", f"function call(s) {left} have no response")
