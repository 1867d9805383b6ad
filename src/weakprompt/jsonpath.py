"""Places inside a JSON value, written as ``$``-rooted paths: ``$.steps[2]["odd key"]``.

Serde's issues and the dispatcher's refusals of tool-call arguments point
into the model's JSON the same way, so a model learns one notation.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["join_path", "quote", "render_key"]


def quote(text: str) -> str:
    """``text`` in double quotes, with backslashes, quotes and newlines escaped."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render_key(key: object) -> str:
    """One path step for an object key: ``.name`` or ``["odd key"]``."""
    if isinstance(key, str) and key.isidentifier():
        return "." + key
    return "[" + quote(str(key)) + "]"


def join_path(steps: Sequence[str]) -> str:
    """The path of ``steps`` (outermost first) from the root ``$``."""
    return "$" + "".join(steps)
