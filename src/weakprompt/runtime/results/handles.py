"""Stable handles for stored outputs.

A handle names one output *within one session*: the same bytes stored twice
in a session get the same handle, so the model never juggles duplicates,
while the same bytes in another session get a different one, so a handle
copied across sessions finds nothing. Handles are UUIDs (version 5) derived
from the session id and the payload's sha256.
"""

from __future__ import annotations

import hashlib
import uuid

from ...store.output_payload import payload_hash

__all__ = ["HANDLE_NAMESPACE", "handle_for", "payload_hash"]

HANDLE_NAMESPACE = uuid.UUID("6d1f4a52-3c8e-5b7a-9e0d-2f4b8c1a7e93")
_NAMESPACE_BYTES = HANDLE_NAMESPACE.bytes
# uuid5 = the first 16 bytes of sha1(namespace + name), with version 5 and the RFC 4122 variant set.
_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_SET = (5 << 76) | (0x8000 << 48)


def handle_for(session_id: str, stored_hash: str) -> str:
    """The handle of the payload ``stored_hash`` in ``session_id``.

    Exactly ``str(uuid.uuid5(HANDLE_NAMESPACE, f"{session_id}\\n{stored_hash}"))``, computed
    without building a ``UUID`` (this runs for every stored result).
    """
    name = f"{session_id}\n{stored_hash}".encode()
    value = int.from_bytes(hashlib.sha1(_NAMESPACE_BYTES + name).digest()[:16]) & _CLEAR | _SET
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
