"""Folding the commit chain into the compiled view, incrementally.

The view is one slot per APPEND commit, in order; an EDIT overwrites the
slot of its target. The state remembers the head it was built for, so
bringing it up to a newer head only applies the commits after it.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..errors import TranscriptError
from ..messages import Message
from .records import CommitInfo, CommitOperation

__all__ = ["CompileState"]


@attrs.define
class CompileState:
    """The compiled view as of ``head`` (``seq`` is the head's sequence number)."""

    head: str | None = None
    seq: int = -1
    slots: list[CommitInfo] = attrs.Factory(list[CommitInfo])
    # Parallel to ``slots`` so a compiled context is two C-level list copies.
    messages: list[Message] = attrs.Factory(list[Message])
    hashes: list[str] = attrs.Factory(list[str])
    position_of: dict[str, int] = attrs.Factory(dict[str, int])
    message_tokens: int = 0
    tool_commit: str | None = None
    tool_hashes: tuple[str, ...] = ()

    def continues_from(self, first_new: CommitInfo) -> bool:
        """True when ``first_new`` is the commit right after this state's head."""
        return first_new.seq == self.seq + 1 and first_new.parent == self.head

    def apply(self, commits: Sequence[CommitInfo], links: dict[str, tuple[str, ...]]) -> None:
        """Apply commits (oldest first) that directly follow the current head."""
        for commit in commits:
            if commit.operation is CommitOperation.EDIT:
                target = commit.edit_target
                index = self.position_of.get(target) if target is not None else None
                if index is None:
                    raise TranscriptError(
                        f"commit {commit.hash[:12]} edits {target!r}, which is not earlier in session "
                        f"{commit.session_id!r}: the stored chain is damaged"
                    )
                self.message_tokens += commit.token_count - self.slots[index].token_count
                self.slots[index] = commit
                self.messages[index] = commit.content
                self.hashes[index] = commit.hash
            else:
                index = len(self.slots)
                self.slots.append(commit)
                self.messages.append(commit.content)
                self.hashes.append(commit.hash)
                self.message_tokens += commit.token_count
            self.position_of[commit.hash] = index
            linked = links.get(commit.hash)
            if linked:
                self.tool_commit = commit.hash
                self.tool_hashes = linked
            self.head = commit.hash
            self.seq = commit.seq
