"""The prompt-cache event: a request's prefix differs from the previous request's, and why.

Providers cache a prompt by its exact prefix; the first item that differs from
the request before (a section's text, a tool's schema, the model settings, a
message of the conversation) loses the cache for itself and everything after
it. The loop publishes one :class:`CacheBusted` per such request, naming that
item (``specs/CACHING.md``). Appending new turns at the end is not a bust.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import attrs

from ..jsontypes import JSONObject
from ._compaction import CompactionTier
from ._types import new_event_id

__all__ = ["CacheBustCause", "CacheBustKind", "CacheBusted"]

CacheBustKind = Literal["section", "tool", "settings", "message"]
"""What differs first: a system section, an offered tool, the model settings, a conversation message."""

CacheBustCause = Literal[
    "changed", "added", "removed", "moved", "edited", "summarized", "compacted", "replaced", "reshown"
]
"""Why it differs.

- ``changed``: a section's text, a tool's schema or the settings changed in place;
- ``added`` / ``removed`` / ``moved``: a section or tool came, went, or changed its place;
- ``edited`` / ``summarized`` / ``compacted``: a message was replaced by an edit commit (its
  provenance says which: a plain edit, a tool-result summary, ``compress_tool_calls``);
- ``replaced``: another commit now stands at that place in the conversation;
- ``reshown``: the same commit is shown differently (a stored tool result slimmed to a reference).
"""

_CAUSE_WORDS: dict[str, str] = {
    "changed": "changed",
    "added": "was added",
    "removed": "was removed",
    "moved": "moved",
    "edited": "was edited",
    "summarized": "was summarized",
    "compacted": "was compacted",
    "replaced": "was replaced by another message",
    "reshown": "is shown differently",
}


@attrs.frozen(kw_only=True)
class CacheBusted:
    """The request's prefix differs from the previous request's first at ``kind`` ``name``.

    ``name`` is the section's path, the tool's name, ``"model_settings"``, or
    for a message the commit whose place changed (the original an edit
    replaced). ``old_hash`` / ``new_hash`` are the item's hashes before and
    now (16 hex digits; ``None`` for an item that was not there). ``position``
    counts the prefix's items (sections, tools, settings, then messages).
    ``commit`` is the commit shown at that place now (messages only).
    ``previous_session`` is set when the request is a session's first and
    was compared with the last one recorded for the same template.
    ``compaction_tier`` is set when a compaction made for this request is the
    cause: ``name`` and ``commit`` are then the compaction commit's hash.
    """

    prompt_name: str
    kind: CacheBustKind
    cause: CacheBustCause
    name: str
    old_hash: str | None
    new_hash: str | None
    position: int
    session_id: str
    created_at: datetime
    commit: str | None = None
    previous_session: str | None = None
    compaction_tier: CompactionTier | None = None
    event_id: str = attrs.field(factory=new_event_id)

    def describe(self) -> str:
        """One line for a log, a span or a page: what differs first and why."""
        what = {
            "section": f"section {self.name!r}",
            "tool": f"tool {self.name!r}",
            "settings": "the model settings",
            "message": f"message {self.name[:16]}",
        }[self.kind]
        hashes = f" ({self.old_hash or '-'} -> {self.new_hash or '-'})"
        where = f", compared with session {self.previous_session!r}" if self.previous_session else ""
        if self.compaction_tier is not None:
            what = f"the history ({self.compaction_tier} compaction {self.name[:16]})"
        return f"prompt cache busted: {what} {_CAUSE_WORDS[self.cause]}{hashes}{where}"

    def to_json(self) -> JSONObject:
        """The fields a commit keeps of it (``specs/CACHING.md``)."""
        recorded: JSONObject = {
            "kind": self.kind,
            "cause": self.cause,
            "name": self.name,
            "old_hash": self.old_hash,
            "new_hash": self.new_hash,
            "position": self.position,
        }
        if self.commit is not None:
            recorded["commit"] = self.commit
        if self.previous_session is not None:
            recorded["previous_session"] = self.previous_session
        if self.compaction_tier is not None:
            recorded["compaction_tier"] = self.compaction_tier
        return recorded
