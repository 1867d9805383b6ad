"""What the only writer of a fresh session's outputs has stored, so that it need not ask again.

An evaluation on the private store it made is the one writer of that
store's outputs: every call id, payload and sequence number there is one it
wrote. Each stored result would otherwise cost three reads (is this call
stored, is this payload stored, what is the next number) before its one
insert. What a transaction writes counts only once that transaction has
committed; a transaction that never confirms its writes (it rolled back)
ends the ledger, and the store asks the database from then on.
"""

from __future__ import annotations

__all__ = ["OutputLedger"]


class OutputLedger:
    """Call ids, payload hashes and the next sequence number of a session with one writer."""

    def __init__(self) -> None:
        self._calls: set[str] = set()
        self._blobs: set[str] = set()
        self._next_seq = 0
        self._pending: list[tuple[str, str]] = []
        self._transaction: object | None = None

    def joins(self, transaction: object) -> bool:
        """Whether writes in ``transaction`` may use the ledger (False: an earlier one never confirmed)."""
        if self._pending and transaction is not self._transaction:
            return False
        self._transaction = transaction
        return True

    def has_call(self, call_id: str) -> bool:
        return call_id in self._calls or any(call == call_id for call, _ in self._pending)

    def has_blob(self, blob_hash: str) -> bool:
        return blob_hash in self._blobs or any(blob == blob_hash for _, blob in self._pending)

    def next_seq(self) -> int:
        return self._next_seq + len(self._pending)

    def add(self, call_id: str, blob_hash: str) -> None:
        """One row written in the current transaction (it counts once :meth:`confirm` is called)."""
        self._pending.append((call_id, blob_hash))

    def confirm(self) -> None:
        """The current transaction committed: its rows are stored."""
        for call_id, blob_hash in self._pending:
            self._calls.add(call_id)
            self._blobs.add(blob_hash)
        self._next_seq += len(self._pending)
        self._pending.clear()
        self._transaction = None
