"""Usage per turn as an inline SVG bar chart: no script, no external asset."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import attrs

__all__ = ["UsagePoint", "usage_chart"]


@attrs.frozen
class UsagePoint:
    turn: int
    input_tokens: int
    output_tokens: int
    href: str = ""


_WIDTH = 900
_HEIGHT = 160
_PAD = 28


def usage_chart(points: Sequence[UsagePoint]) -> str:
    """Stacked bars (input below, output above), one per turn; each bar links to its turn."""
    if not points:
        return '<p class="muted">no model turns</p>'
    top = max((p.input_tokens + p.output_tokens for p in points), default=0) or 1
    step = (_WIDTH - _PAD) / len(points)
    bar = max(step * 0.8, 0.5)
    usable = _HEIGHT - _PAD
    parts = [
        f'<svg class="usage-chart" viewBox="0 0 {_WIDTH} {_HEIGHT}" width="100%" role="img" '
        f'aria-label="tokens per turn">',
        f'<text x="2" y="12" class="axis">{top:,} tokens</text>',
        f'<line x1="{_PAD}" y1="{usable}" x2="{_WIDTH}" y2="{usable}" class="axis-line"/>',
    ]
    for index, point in enumerate(points):
        x = _PAD + index * step
        high_in = usable * point.input_tokens / top
        high_out = usable * point.output_tokens / top
        title = escape(f"turn {point.turn}: {point.input_tokens:,} in, {point.output_tokens:,} out")
        shapes = (
            f'<rect class="in" x="{x:.1f}" y="{usable - high_in:.1f}" width="{bar:.1f}" '
            f'height="{high_in:.1f}"/>'
            f'<rect class="out" x="{x:.1f}" y="{usable - high_in - high_out:.1f}" width="{bar:.1f}" '
            f'height="{high_out:.1f}"/>'
        )
        group = f"<g><title>{title}</title>{shapes}</g>"
        if point.href:
            group = f'<a href="{escape(point.href)}">{group}</a>'
        parts.append(group)
    parts.append(f'<text x="{_PAD}" y="{_HEIGHT - 8}" class="axis">turn 1</text>')
    parts.append(
        f'<text x="{_WIDTH - 4}" y="{_HEIGHT - 8}" class="axis" text-anchor="end">'
        f"turn {points[-1].turn}</text>"
    )
    parts.append("</svg>")
    return "".join(parts)
