"""The full-chunked strategy: one model call per chunk (map), one more to merge them (reduce).

Chunk size follows the extraction model: its context window, minus the
tokens reserved for its answer, minus the prompt's own tokens, converted to
bytes with the output's measured bytes-per-token ratio. Every call must
answer inside its own nonce'd wrapper; a reply without one fails the strategy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from ....errors import AdapterError
from ....messages import Message
from ....model import CompiledContext, ModelRequest
from ....tokens import TokenCounter
from .chunking import MIN_CHUNK_BYTES, Span, chunk_spans
from .config import ExtractionConfig
from .failure import StrategyFailed, reply_preview
from .prompts import map_messages, reduce_messages, shorten
from .source import DocumentStats, ExtractionSource, decode_text
from .wrapper import FinalWrapper

if TYPE_CHECKING:
    from ....model import ProviderAdapter

__all__ = ["MIN_CHUNK_TOKENS", "ChunkPlan", "plan_chunks", "run_full_chunked"]

MIN_CHUNK_TOKENS = 64
"""Below this many tokens of room for text, chunking is pointless: the strategy fails."""

MESSAGE_OVERHEAD_TOKENS = 8
"""Tokens a chat template adds around each message (role markers and separators)."""

_PLANNING_PART = 10**6  # part numbers this wide make the sizing prompt as long as any real one


@attrs.frozen
class ChunkPlan:
    """How the output will be cut: the spans and the byte limit they were cut with."""

    spans: tuple[Span, ...]
    max_chunk_bytes: int
    context_window: int
    prompt_tokens: int


def _tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    return sum(counter.count(message.content) + MESSAGE_OVERHEAD_TOKENS for message in messages)


def _context(messages: Sequence[Message], counter: TokenCounter) -> CompiledContext:
    return CompiledContext(messages=tuple(messages), token_count=_tokens(messages, counter))


def plan_chunks(
    source: ExtractionSource,
    stats: DocumentStats,
    query: str,
    *,
    context_window: int | None,
    counter: TokenCounter,
    config: ExtractionConfig,
) -> ChunkPlan:
    """Size and place the chunks; raises :class:`StrategyFailed` when no useful chunk fits."""
    window = context_window if context_window is not None else config.default_context_window
    probe = FinalWrapper(config.nonce_factory())
    prompt = map_messages(
        source,
        stats,
        query,
        probe,
        index=_PLANNING_PART,
        total=_PLANNING_PART,
        overlap=config.chunk_overlap,
        chunk_text="",
    )
    prompt_tokens = _tokens(prompt, counter)
    room = window - config.max_output_tokens - prompt_tokens
    if room < MIN_CHUNK_TOKENS:
        raise StrategyFailed(
            f"the extraction model's context window ({window} tokens) leaves {room} tokens for text "
            f"after the prompt ({prompt_tokens}) and the answer ({config.max_output_tokens}); "
            f"at least {MIN_CHUNK_TOKENS} are needed"
        )
    bytes_per_token = stats.size_bytes / stats.tokens if stats.tokens else 4.0
    max_chunk_bytes = max(MIN_CHUNK_BYTES, math.floor(room * config.chunk_fill * bytes_per_token))
    spans = chunk_spans(source.data, max_chunk_bytes, config.chunk_overlap)
    return ChunkPlan(
        spans=spans, max_chunk_bytes=max_chunk_bytes, context_window=window, prompt_tokens=prompt_tokens
    )


def _ask(
    adapter: ProviderAdapter,
    messages: Sequence[Message],
    wrapper: FinalWrapper,
    *,
    counter: TokenCounter,
    config: ExtractionConfig,
    what: str,
) -> str:
    request = ModelRequest(context=_context(messages, counter), max_output_tokens=config.max_output_tokens)
    try:
        reply = adapter.complete(request)
    except AdapterError as exc:
        raise StrategyFailed(f"the model call for {what} failed: {type(exc).__name__}: {exc}") from exc
    answer = wrapper.parse(reply.text)
    if answer is None:
        raise StrategyFailed(
            f"the answer for {what} had no {wrapper.opening} wrapper ({reply_preview(reply.text)})"
        )
    return answer


def _fit_answers(answers: Sequence[str], room_tokens: int, counter: TokenCounter) -> list[str]:
    """Shorten the longest per-chunk answers so all of them fit the reduce call."""
    share = max(1, room_tokens // max(1, len(answers)))
    fitted: list[str] = []
    for answer in answers:
        tokens = counter.count(answer)
        fitted.append(shorten(answer, max(80, len(answer) * share // tokens)) if tokens > share else answer)
    return fitted


def run_full_chunked(
    adapter: ProviderAdapter,
    source: ExtractionSource,
    stats: DocumentStats,
    query: str,
    *,
    counter: TokenCounter,
    config: ExtractionConfig,
) -> str:
    """Map every chunk, then reduce when there was more than one; returns the wrapped answer."""
    plan = plan_chunks(
        source, stats, query, context_window=adapter.context_window, counter=counter, config=config
    )
    total = len(plan.spans)
    if total > config.max_chunks:
        raise StrategyFailed(
            f"the output needs {total} chunks of at most {plan.max_chunk_bytes} bytes for this model, "
            f"more than max_chunks={config.max_chunks}"
        )
    answers: list[str] = []
    for index, (start, end) in enumerate(plan.spans, start=1):
        wrapper = FinalWrapper(config.nonce_factory())
        messages = map_messages(
            source,
            stats,
            query,
            wrapper,
            index=index,
            total=total,
            overlap=config.chunk_overlap,
            chunk_text=decode_text(source.data[start:end]),
        )
        what = "the output" if total == 1 else f"part {index} of {total}"
        answers.append(_ask(adapter, messages, wrapper, counter=counter, config=config, what=what))
    if total == 1:
        return answers[0]
    wrapper = FinalWrapper(config.nonce_factory())
    room = (
        plan.context_window
        - config.max_output_tokens
        - _tokens(reduce_messages(source, stats, query, wrapper, [""] * total), counter)
    )
    fitted = _fit_answers(answers, room, counter)
    messages = reduce_messages(source, stats, query, wrapper, fitted)
    return _ask(adapter, messages, wrapper, counter=counter, config=config, what="the merge of all parts")
