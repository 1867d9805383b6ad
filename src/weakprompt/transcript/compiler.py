"""Folding the commit chain into the compiled view, incrementally.

The view is one slot per APPEND commit, in order; an EDIT overwrites the
slot of its target. The state remembers the head it was built for, so
bringing it up to a newer head only applies the commits after it.

A turn folds its staged commits in as it goes; if they are then stored
elsewhere in the chain (another writer appended first) or not at all, the
state goes back to where the turn started (:meth:`CompileState.mark` /
:meth:`CompileState.rollback`) and reads on from there, instead of
rebuilding the whole view.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from ..errors import TranscriptError
from ..messages import Message
from .compaction import COMPACTION_KEY
from .records import CommitInfo, CommitOperation

__all__ = ["CompileState"]


@attrs.define
class _Mark:
    """What :meth:`CompileState.rollback` needs to undo the commits applied since the mark."""

    head: str | None
    seq: int
    length: int
    message_tokens: int
    tool_commit: str | None
    tool_hashes: tuple[str, ...]
    compactions: int
    # The first value overwritten at each slot that existed at the mark.
    overwritten: dict[int, tuple[CommitInfo, Message, str]] = attrs.Factory(
        dict[int, tuple[CommitInfo, Message, str]]
    )
    added: list[str] = attrs.Factory(list[str])  # keys added to position_of


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
    # The APPEND commit of each slot: what an edit of it (or an edit of that edit) still answers to.
    origins: list[str] = attrs.Factory(list[str])
    message_tokens: int = 0
    tool_commit: str | None = None
    tool_hashes: tuple[str, ...] = ()
    compactions: int = 0  # compaction commits applied (the view shows them only when there are some)
    _mark: _Mark | None = attrs.field(default=None, init=False, repr=False, eq=False)

    def mark(self) -> None:
        """Remember this point; :meth:`rollback` returns to it, :meth:`release` forgets it."""
        self._mark = _Mark(
            head=self.head,
            seq=self.seq,
            length=len(self.slots),
            message_tokens=self.message_tokens,
            tool_commit=self.tool_commit,
            tool_hashes=self.tool_hashes,
            compactions=self.compactions,
        )

    def release(self) -> None:
        self._mark = None

    def rollback(self) -> None:
        """Undo every commit applied since :meth:`mark` (no-op without a mark)."""
        mark, self._mark = self._mark, None
        if mark is None:
            return
        del self.slots[mark.length :], self.messages[mark.length :], self.hashes[mark.length :]
        del self.origins[mark.length :]
        for index, (slot, message, commit_hash) in mark.overwritten.items():
            self.slots[index], self.messages[index], self.hashes[index] = slot, message, commit_hash
        for key in mark.added:
            del self.position_of[key]
        self.head, self.seq, self.message_tokens = mark.head, mark.seq, mark.message_tokens
        self.tool_commit, self.tool_hashes = mark.tool_commit, mark.tool_hashes
        self.compactions = mark.compactions

    def continues_from(self, first_new: CommitInfo) -> bool:
        """True when ``first_new`` is the commit right after this state's head."""
        return first_new.seq == self.seq + 1 and first_new.parent == self.head

    def apply(self, commits: Sequence[CommitInfo], links: dict[str, tuple[str, ...]]) -> None:
        """Apply commits (oldest first) that directly follow the current head."""
        mark = self._mark
        for commit in commits:
            if commit.operation is CommitOperation.EDIT:
                target = commit.edit_target
                index = self.position_of.get(target) if target is not None else None
                if index is None:
                    raise TranscriptError(
                        f"commit {commit.hash[:12]} edits {target!r}, which is not earlier in session "
                        f"{commit.session_id!r}: the stored chain is damaged"
                    )
                if mark is not None and index < mark.length and index not in mark.overwritten:
                    mark.overwritten[index] = (self.slots[index], self.messages[index], self.hashes[index])
                self.message_tokens += commit.token_count - self.slots[index].token_count
                self.slots[index] = commit
                self.messages[index] = commit.content
                self.hashes[index] = commit.hash
            else:
                index = len(self.slots)
                self.slots.append(commit)
                self.messages.append(commit.content)
                self.hashes.append(commit.hash)
                self.origins.append(commit.hash)
                self.message_tokens += commit.token_count
            self.position_of[commit.hash] = index
            if COMPACTION_KEY in commit.metadata:
                self.compactions += 1
            if mark is not None:
                mark.added.append(commit.hash)
            linked = links.get(commit.hash)
            if linked:
                self.tool_commit = commit.hash
                self.tool_hashes = linked
            self.head = commit.hash
            self.seq = commit.seq
