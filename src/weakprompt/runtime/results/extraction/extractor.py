"""The extraction entry point: route, run a strategy, fall back to truncate when it fails."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import attrs

from ....clock import SYSTEM_CLOCK, Clock
from ....errors import BudgetExceededError, DeadlineExceededError
from ....jsontypes import JSONObject
from ....messages import Usage
from ....tokens import DEFAULT_TOKEN_COUNTER, TokenCounter
from ...redaction import default_redact
from .config import EXTRACTION_MODES, ExtractionConfig, ExtractionMode, StrategyName
from .failure import StrategyFailed
from .full_chunked import plan_chunks, run_full_chunked
from .metering import MeteredAdapter
from .read_grep import RunSubAgent, run_read_grep
from .routing import choose_strategy
from .source import DocumentStats, ExtractionSource, decode_text, document_stats
from .truncate import truncate_text

if TYPE_CHECKING:
    from ....budget import BudgetTracker
    from ....deadlines import Deadline
    from ....model import ProviderAdapter

__all__ = ["EXTRACTION_KEY", "ExtractionResult", "Extractor"]

EXTRACTION_KEY = "extraction"
"""Commit metadata key of a ``tool_output`` reply: how its extraction went."""

logger = logging.getLogger(__name__)

_MAX_REASON_CHARS = 500


@attrs.frozen
class ExtractionResult:
    """What one extraction produced.

    ``text`` is the answer (or the truncated output); ``strategy_used`` is
    the strategy that produced it, ``truncate`` after a fallback, in which
    case ``fallback_reason`` says which strategy failed and why. ``usage``
    adds up every model call the extraction made, failed attempts included.
    """

    text: str
    strategy_used: StrategyName
    fallback_reason: str | None
    usage: Usage
    model_calls: int

    def commit_metadata(self) -> JSONObject:
        """What the ``tool_output`` reply's commit keeps of this extraction (under ``"extraction"``).

        The reply text names the strategy but not why a fallback happened;
        kept on the commit, both can be read back later (the inspector shows them).
        """
        return {
            EXTRACTION_KEY: {
                "strategy": self.strategy_used,
                "fallback_reason": self.fallback_reason,
                "model_calls": self.model_calls,
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
            }
        }


def _reason(strategy: str, detail: str) -> str:
    text = f"{strategy} failed: {detail}"
    return text if len(text) <= _MAX_REASON_CHARS else text[: _MAX_REASON_CHARS - 3] + "..."


class Extractor:
    """Answers questions about one stored output with an extraction model.

    ``adapter`` is the extraction model (often the evaluation's own);
    its ``context_window`` and ``token_counter`` size the chunks. Limits of
    the surrounding evaluation are honoured: a passed deadline or an
    exhausted budget raises instead of falling back, because the evaluation
    has to stop anyway. ``run_agent`` runs the read-grep sub-agent (pass
    :func:`weakprompt.runtime.evaluate`; the evaluation loop passes itself):
    without it, read-grep fails over to truncate and says so.
    """

    def __init__(
        self,
        adapter: ProviderAdapter,
        *,
        config: ExtractionConfig | None = None,
        clock: Clock | None = None,
        run_agent: RunSubAgent | None = None,
    ) -> None:
        self.adapter = adapter
        self.config = config if config is not None else ExtractionConfig()
        self.clock = clock if clock is not None else SYSTEM_CLOCK
        self.run_agent = run_agent

    @property
    def token_counter(self) -> TokenCounter:
        """The configured counter, else the adapter's exact one, else the byte estimate."""
        if self.config.token_counter is not None:
            return self.config.token_counter
        return self.adapter.token_counter or DEFAULT_TOKEN_COUNTER

    def stats(self, source: ExtractionSource) -> DocumentStats:
        return document_stats(source.data, self.token_counter)

    def route(self, source: ExtractionSource, query: str, stats: DocumentStats | None = None) -> StrategyName:
        """The strategy ``auto`` picks for ``source`` (no model call)."""
        stats = stats if stats is not None else self.stats(source)
        try:
            plan = plan_chunks(
                source,
                stats,
                query,
                context_window=self.adapter.context_window,
                counter=self.token_counter,
                config=self.config,
            )
            chunks: int | None = len(plan.spans)
        except StrategyFailed:
            chunks = None
        return choose_strategy(stats, chunks, self.config)

    def extract(
        self,
        source: ExtractionSource,
        query: str,
        mode: ExtractionMode = "auto",
        *,
        deadline: Deadline | None = None,
        budget_tracker: BudgetTracker | None = None,
    ) -> ExtractionResult:
        """Extract what ``query`` asks for from ``source``.

        Raises ``ValueError`` for an empty query or an unknown mode (the
        ``tool_output`` tool checks both first and replies instead), and
        ``DeadlineExceededError`` / ``BudgetExceededError`` when a limit of
        the evaluation is reached. Any other failure of the chosen strategy
        ends in the truncate fallback, with the reason on the result.
        """
        if not query.strip():
            raise ValueError("extract: the query is empty; say what to extract")
        if mode not in EXTRACTION_MODES:
            raise ValueError(f"extract: mode must be one of {', '.join(EXTRACTION_MODES)}, got {mode!r}")
        query = query.strip()
        config = self.config
        if mode == "truncate":
            text = truncate_text(source.data, config.truncate_max_bytes)
            return ExtractionResult(text, "truncate", None, Usage(), 0)
        counter = self.token_counter
        text = decode_text(source.data)
        stats = document_stats(source.data, counter, text=text)
        strategy: StrategyName = mode if mode != "auto" else self.route(source, query, stats)
        metered = MeteredAdapter(self.adapter, budget_tracker=budget_tracker, deadline=deadline)
        try:
            if strategy == "full-chunked":
                answer = run_full_chunked(metered, source, stats, query, counter=counter, config=config)
            elif self.run_agent is None:
                raise StrategyFailed(
                    "no sub-agent runner: build the Extractor with run_agent=weakprompt.runtime.evaluate"
                )
            else:
                answer = run_read_grep(
                    metered,
                    source,
                    text,
                    stats,
                    query,
                    config=config,
                    clock=self.clock,
                    deadline=deadline,
                    run_agent=self.run_agent,
                )
        except (DeadlineExceededError, BudgetExceededError):
            raise
        except StrategyFailed as failure:
            reason = _reason(strategy, failure.reason)
        except Exception as exc:  # any other breakdown of the strategy: fall back, but say so in the log
            logger.warning("extraction strategy %s raised; falling back to truncate", strategy, exc_info=exc)
            reason = _reason(strategy, default_redact(exc))
        else:
            usage = metered.usage
            return ExtractionResult(answer, strategy, None, usage, usage.model_calls)
        logger.info("extraction for handle %s fell back to truncate: %s", source.handle, reason)
        preface = f"NOTE: {reason}. Below is a plain cut of the output, not an answer to the request."
        text = truncate_text(source.data, config.truncate_max_bytes, preface=preface)
        usage = metered.usage
        return ExtractionResult(text, "truncate", reason, usage, usage.model_calls)
