"""Stable handles for stored outputs.

A handle names one output *within one session*: the same bytes stored twice
in a session get the same handle, so the model never juggles duplicates,
while the same bytes in another session get a different one, so a handle
copied across sessions finds nothing. Handles are UUIDs (version 5) derived
from the session id and the payload's sha256.
"""

from __future__ import annotations

import uuid

from ...store.output_payload import payload_hash

__all__ = ["HANDLE_NAMESPACE", "handle_for", "payload_hash"]

HANDLE_NAMESPACE = uuid.UUID("6d1f4a52-3c8e-5b7a-9e0d-2f4b8c1a7e93")


def handle_for(session_id: str, stored_hash: str) -> str:
    """The handle of the payload ``stored_hash`` in ``session_id``."""
    return str(uuid.uuid5(HANDLE_NAMESPACE, f"{session_id}\n{stored_hash}"))
