"""Tool names a provider accepts, made from whatever an MCP server calls its tools.

weakprompt tool names are ``[a-z0-9_-]{1,64}`` (the subset every provider
takes). An MCP name may hold capitals, dots, spaces or be longer; it is
mapped here, and the original name is what the server is called with.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["tool_name"]

_REFUSED = re.compile(r"[^a-z0-9_-]+")
_LIMIT = 64


def tool_name(prefix: str, server_name: str, taken: set[str]) -> str:
    """A provider-safe, unique name for ``prefix + server_name`` (added to ``taken``).

    Runs of other characters become ``_`` and capitals are lowered. A name
    that had to change, was too long or collides gets a short digest of the
    original appended, so two different server names never share a name.
    """
    wanted = prefix + server_name
    name = _REFUSED.sub("_", wanted.lower()) or "_"
    if name != wanted or len(name) > _LIMIT or name in taken:
        digest = hashlib.sha256(wanted.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[: _LIMIT - 9]}_{digest}"
        while name in taken:  # a digest collision within one server: vanishingly rare
            digest = hashlib.sha256(digest.encode()).hexdigest()[:8]
            name = f"{name[: _LIMIT - 9]}_{digest}"
    taken.add(name)
    return name
