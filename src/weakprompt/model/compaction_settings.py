"""When a run compacts its context: the settings, a model-contract value the loop is handed.

They live beside the model contract (not with the compaction code in the
transcript) so a run's settings can check them without loading the transcript.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from .adapter import ProviderAdapter

__all__ = ["CompactionSettings"]


def _check_fraction(_settings: object, attribute: attrs.Attribute[float], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
        raise ConfigurationError(
            f"CompactionSettings: {attribute.name} must be a number in (0, 1], got {value!r}"
        )


def _check_count(least: int) -> Callable[[object, attrs.Attribute[int], int], None]:
    def check(_settings: object, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:  # pyright: ignore[reportUnnecessaryIsInstance]  # a caller's value
            raise ConfigurationError(
                f"CompactionSettings: {attribute.name} must be an int >= {least}, got {value!r}"
            )

    return check


@attrs.frozen(kw_only=True)
class CompactionSettings:
    """When and how far a run compacts its context (``RunOptions(compaction=...)``).

    Compaction starts when the request's estimate passes ``threshold`` of
    the window and goes down to ``target`` of it, so the boundary moves in
    steps and the cached prefix survives the turns between. The last
    ``keep_recent_turns`` units are never compacted. ``summarizer`` writes
    the summaries (default: the run's own adapter; ``summarize=False``
    skips to the drop tier); ``reserve_output`` is counted for the reply
    when the request sets no ``max_output_tokens``; ``context_window``
    overrides the adapter's.
    """

    threshold: float = attrs.field(default=0.8, validator=_check_fraction)
    target: float = attrs.field(default=0.5, validator=_check_fraction)
    keep_recent_turns: int = attrs.field(default=4, validator=_check_count(1))
    reserve_output: int = attrs.field(default=1024, validator=_check_count(0))
    summary_tokens: int = attrs.field(default=512, validator=_check_count(16))
    summarize: bool = True
    summarizer: ProviderAdapter | None = None
    context_window: int | None = attrs.field(
        default=None, validator=attrs.validators.optional(_check_count(64))
    )

    def __attrs_post_init__(self) -> None:
        if self.target > self.threshold:
            raise ConfigurationError(
                f"CompactionSettings: target ({self.target}) must not be above threshold ({self.threshold})"
            )
