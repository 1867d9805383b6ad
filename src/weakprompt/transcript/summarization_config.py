"""Declarative summarization of tool results: a ready-made ``tool_result`` hook.

Rules, in order, for each result the hook sees:

1. a failed tool call is committed as it is (unless ``summarize_errors``),
   since the model needs the exact error to correct its call, and so is a
   result the output pipeline already shaped (see :mod:`.shaped`);
2. a tool with its own entry in ``instructions`` is always summarized with
   that text;
3. any other result over ``auto_threshold`` tokens is summarized with
   ``default_instructions`` (general guidance when that is None);
4. everything else is committed unchanged.

It is sugar over ``transcript.on("tool_result", ...)``: registering
another handler replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

import attrs

from ..errors import ConfigurationError
from .pending import PendingToolResult
from .shaped import shaped_by_output_pipeline

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from .transcript import Transcript

__all__ = ["ToolSummarizationConfig", "ToolSummarizationHook", "configure_tool_summarization"]

TRIGGER_INSTRUCTIONS = "tool_summarization:instructions"
TRIGGER_THRESHOLD = "tool_summarization:auto_threshold"


def _freeze_instructions(value: Mapping[str, str] | None) -> Mapping[str, str]:
    if value is None:
        return MappingProxyType({})
    if not isinstance(value, Mapping):
        raise ConfigurationError(f"instructions must map tool names to text, got {type(value).__name__}")
    checked: dict[str, str] = {}
    for tool, text in value.items():
        if not isinstance(tool, str) or not tool:
            raise ConfigurationError(f"instructions: tool names must be non-empty strings, got {tool!r}")
        if not isinstance(text, str) or not text.strip():
            raise ConfigurationError(f"instructions[{tool!r}] must be non-empty text, got {text!r}")
        checked[tool] = text
    return MappingProxyType(checked)


def _optional_count(name: str, value: int | None, least: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigurationError(f"{name} must be an int >= {least} or None, got {value!r}")


@attrs.frozen
class ToolSummarizationConfig:
    """Which tool results to summarize, and with what guidance.

    ``auto_threshold`` is a token count: results with more tokens are
    summarized. ``default_instructions`` guide those threshold summaries
    and therefore need ``auto_threshold``. ``target_tokens`` is passed to
    every summary as a length goal.
    """

    instructions: Mapping[str, str] = attrs.field(factory=dict[str, str], converter=_freeze_instructions)
    auto_threshold: int | None = None
    default_instructions: str | None = None
    target_tokens: int | None = None
    summarize_errors: bool = False

    def __attrs_post_init__(self) -> None:
        _optional_count("auto_threshold", self.auto_threshold, 0)
        _optional_count("target_tokens", self.target_tokens, 1)
        if self.default_instructions is not None:
            if not isinstance(self.default_instructions, str) or not self.default_instructions.strip():
                raise ConfigurationError(
                    f"default_instructions must be non-empty text or None, got {self.default_instructions!r}"
                )
            if self.auto_threshold is None:
                raise ConfigurationError(
                    "default_instructions only guide results over auto_threshold; set auto_threshold "
                    "(0 summarizes every non-empty result of tools without their own instructions)"
                )
        if not isinstance(self.summarize_errors, bool):
            raise ConfigurationError(f"summarize_errors must be a bool, got {self.summarize_errors!r}")

    def instructions_for(self, tool_name: str, token_count: int) -> tuple[str, str | None] | None:
        """``(trigger, instructions)`` when a result of this size from this tool is summarized."""
        own = self.instructions.get(tool_name)
        if own is not None:
            return TRIGGER_INSTRUCTIONS, own
        if self.auto_threshold is not None and token_count > self.auto_threshold:
            return TRIGGER_THRESHOLD, self.default_instructions
        return None


class ToolSummarizationHook:
    """The ``tool_result`` handler that applies a :class:`ToolSummarizationConfig`."""

    def __init__(self, config: ToolSummarizationConfig, summarizer: ProviderAdapter | None = None) -> None:
        self._config = config
        self._summarizer = summarizer

    @property
    def config(self) -> ToolSummarizationConfig:
        return self._config

    @property
    def summarizer(self) -> ProviderAdapter | None:
        """This hook's own summarizer; None uses the transcript's (or the evaluation's)."""
        return self._summarizer

    def __call__(self, pending: PendingToolResult) -> None:
        keep = (pending.is_error and not self._config.summarize_errors) or (
            shaped_by_output_pipeline(pending.tool_name, pending.metadata) is not None
        )
        if keep:
            pending.approve()
            return
        rule = self._config.instructions_for(pending.tool_name, pending.token_count)
        if rule is not None:
            pending.triggered_by, instructions = rule
            pending.summarize(
                instructions=instructions,
                target_tokens=self._config.target_tokens,
                summarizer=self._summarizer,
            )
        pending.approve()

    def __repr__(self) -> str:
        return f"ToolSummarizationHook({self._config!r})"


def configure_tool_summarization(
    transcript: Transcript,
    instructions: Mapping[str, str] | None = None,
    auto_threshold: int | None = None,
    default_instructions: str | None = None,
    summarizer: ProviderAdapter | None = None,
    *,
    target_tokens: int | None = None,
    summarize_errors: bool = False,
) -> ToolSummarizationConfig:
    """Summarize tool results automatically, per tool and/or above a token threshold.

    Installs a :class:`ToolSummarizationHook` as the transcript's
    ``tool_result`` handler (replacing any other) and returns its config.
    ``summarizer`` defaults to ``transcript.hooks.summarizer``, then to
    the running evaluation's adapter.
    """
    config = ToolSummarizationConfig(
        instructions=instructions or {},
        auto_threshold=auto_threshold,
        default_instructions=default_instructions,
        target_tokens=target_tokens,
        summarize_errors=summarize_errors,
    )
    if summarizer is not None and not callable(getattr(summarizer, "complete", None)):
        raise ConfigurationError(f"summarizer must be a ProviderAdapter, got {summarizer!r}")
    transcript.on("tool_result", ToolSummarizationHook(config, summarizer))
    return config
