"""Settings of the extraction module, with the defaults the specs document."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypeAlias

import attrs

from ....errors import ConfigurationError
from ....tokens import TokenCounter
from .truncate import MIN_TRUNCATE_BYTES
from .wrapper import NonceFactory, random_nonce

__all__ = [
    "EXTRACTION_MODES",
    "ExtractionConfig",
    "ExtractionMode",
    "StrategyName",
]

ExtractionMode: TypeAlias = Literal["auto", "full-chunked", "read-grep", "truncate"]
StrategyName: TypeAlias = Literal["full-chunked", "read-grep", "truncate"]
EXTRACTION_MODES: tuple[ExtractionMode, ...] = ("auto", "full-chunked", "read-grep", "truncate")


_Validator: TypeAlias = Callable[[object, "attrs.Attribute[int]", int], None]
_FloatValidator: TypeAlias = Callable[[object, "attrs.Attribute[float]", float], None]


def _at_least(least: int) -> _Validator:
    def check(_: object, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ConfigurationError(
                f"ExtractionConfig.{attribute.name} must be an int >= {least}, got {value!r}"
            )

    return check


def _fraction(low: float, high: float) -> _FloatValidator:
    def check(_: object, attribute: attrs.Attribute[float], value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value < high:
            raise ConfigurationError(
                f"ExtractionConfig.{attribute.name} must be a number in [{low}, {high}), got {value!r}"
            )

    return check


def _positive_seconds(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(f"ExtractionConfig.{attribute.name} must be a number > 0, got {value!r}")


@attrs.frozen(kw_only=True)
class ExtractionConfig:
    """How extraction sizes its work and where it draws the lines.

    Model limits:
        ``default_context_window`` is used when the adapter does not report
        one; ``max_output_tokens`` caps every extraction model reply and is
        reserved in each chunk's budget; ``chunk_fill`` is the share of the
        remaining tokens given to document text (the rest absorbs token
        estimate error); ``token_counter`` overrides the adapter's counter.

    full-chunked:
        ``chunk_overlap`` is the share of each chunk repeated in the next;
        ``max_chunks`` is the most map calls one extraction may make (more
        needed means the strategy fails and truncate takes over).

    auto routing:
        full-chunked when the output fits in ``max_chunks_for_full`` chunks,
        or when its lines average more than ``long_line_bytes``; read-grep
        otherwise.

    read-grep:
        ``read_grep_max_turns`` caps the sub-agent's model calls;
        ``read_max_lines`` caps one ``read``; ``grep_max_matches`` and
        ``grep_max_context`` cap one ``grep``; ``grep_timeout_seconds``
        stops a runaway regular expression (``grep_isolate`` runs each search
        in a child process so that limit holds even for one catastrophic
        match; turn it off only for trusted patterns); ``tool_reply_max_bytes`` caps
        each read/grep reply and ``line_max_chars`` each line shown in it.

    truncate:
        ``truncate_max_bytes`` caps the whole text (warning lines included).
    """

    default_context_window: int = attrs.field(default=8192, validator=_at_least(512))
    max_output_tokens: int = attrs.field(default=1024, validator=_at_least(16))
    chunk_fill: float = attrs.field(default=0.9, validator=_fraction(0.1, 1.000001))
    token_counter: TokenCounter | None = attrs.field(default=None, eq=False)
    chunk_overlap: float = attrs.field(default=0.1, validator=_fraction(0.0, 0.5))
    max_chunks: int = attrs.field(default=32, validator=_at_least(1))
    max_chunks_for_full: int = attrs.field(default=1, validator=_at_least(1))
    long_line_bytes: int = attrs.field(default=1000, validator=_at_least(1))
    read_grep_max_turns: int = attrs.field(default=12, validator=_at_least(2))
    read_max_lines: int = attrs.field(default=200, validator=_at_least(1))
    grep_max_matches: int = attrs.field(default=50, validator=_at_least(1))
    grep_max_context: int = attrs.field(default=10, validator=_at_least(0))
    grep_timeout_seconds: float = attrs.field(default=2.0, validator=_positive_seconds)
    grep_isolate: bool = True
    tool_reply_max_bytes: int = attrs.field(default=8192, validator=_at_least(512))
    line_max_chars: int = attrs.field(default=1000, validator=_at_least(40))
    truncate_max_bytes: int = attrs.field(default=8192, validator=_at_least(MIN_TRUNCATE_BYTES))
    nonce_factory: NonceFactory = attrs.field(default=random_nonce, eq=False)
