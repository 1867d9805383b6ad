"""Usage per turn as an inline SVG bar chart: no script, no external asset.

The chart has at most :data:`MAX_BARS` bars, whatever the session's
length: past that, each bar sums a run of consecutive turns (and links to
the first of them), so a session of thousands of turns does not make a
page of megabytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import attrs

__all__ = ["MAX_BARS", "UsagePoint", "usage_chart"]


@attrs.frozen
class UsagePoint:
    turn: int
    input_tokens: int
    output_tokens: int
    href: str = ""
    cached_input_tokens: int = 0
    """Input tokens the provider read from its prompt cache (a part of ``input_tokens``)."""


MAX_BARS = 200
"""The most bars a chart draws."""

_WIDTH = 900
_HEIGHT = 160
_PAD = 28


@attrs.frozen
class _Bar:
    first: int
    last: int
    input_tokens: int
    output_tokens: int
    href: str
    cached_input_tokens: int = 0

    @property
    def label(self) -> str:
        turns = f"turn {self.first}" if self.first == self.last else f"turns {self.first} to {self.last}"
        cached = ""
        if self.cached_input_tokens and self.input_tokens:
            cached = f" ({min(self.cached_input_tokens, self.input_tokens) / self.input_tokens:.0%} cached)"
        return f"{turns}: {self.input_tokens:,} in{cached}, {self.output_tokens:,} out"


def _bars(points: Sequence[UsagePoint], limit: int) -> list[_Bar]:
    """One bar per point, or per run of ``ceil(len / limit)`` consecutive points when there are more."""
    size = max(1, -(-len(points) // limit))
    bars: list[_Bar] = []
    for start in range(0, len(points), size):
        run = points[start : start + size]
        bars.append(
            _Bar(
                run[0].turn,
                run[-1].turn,
                sum(p.input_tokens for p in run),
                sum(p.output_tokens for p in run),
                run[0].href,
                sum(p.cached_input_tokens for p in run),
            )
        )
    return bars


def usage_chart(points: Sequence[UsagePoint], *, max_bars: int = MAX_BARS) -> str:
    """Stacked bars (input below, output above), one per turn (or run of turns); each links to its turn."""
    if not points:
        return '<p class="muted">no model turns</p>'
    bars = _bars(points, max(1, max_bars))
    top = max((b.input_tokens + b.output_tokens for b in bars), default=0) or 1
    step = (_WIDTH - _PAD) / len(bars)
    width = max(step * 0.8, 0.5)
    usable = _HEIGHT - _PAD
    grouped = len(bars) < len(points)
    caption = f"{top:,} tokens" + (
        f" (each bar: {bars[0].last - bars[0].first + 1} turns)" if grouped else ""
    )
    parts = [
        f'<svg class="usage-chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="100%" role="img" '
        f'aria-label="tokens per turn">',
        f'<text x="2" y="12" class="axis">{escape(caption)}</text>',
        f'<line x1="{_PAD}" y1="{usable}" x2="{_WIDTH}" y2="{usable}" class="axis-line"/>',
    ]
    for index, bar in enumerate(bars):
        x = _PAD + index * step
        high_in = usable * bar.input_tokens / top
        high_out = usable * bar.output_tokens / top
        shapes = (
            f'<rect class="in" x="{x:.1f}" y="{usable - high_in:.1f}" width="{width:.1f}" '
            f'height="{high_in:.1f}"/>'
            f'<rect class="out" x="{x:.1f}" y="{usable - high_in - high_out:.1f}" width="{width:.1f}" '
            f'height="{high_out:.1f}"/>'
        )
        group = f"<g><title>{escape(bar.label)}</title>{shapes}</g>"
        if bar.href:
            group = f'<a href="{escape(bar.href)}">{group}</a>'
        parts.append(group)
    parts.append(f'<text x="{_PAD}" y="{_HEIGHT - 8}" class="axis">turn {points[0].turn}</text>')
    parts.append(
        f'<text x="{_WIDTH - 4}" y="{_HEIGHT - 8}" class="axis" text-anchor="end">'
        f"turn {points[-1].turn}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
