"""Canonical JSON and content hashes.

Hashes identify tool schemas and transcript blobs across processes, so the
encoding must not depend on key order or whitespace.
"""

from __future__ import annotations

import hashlib
import json

from .jsontypes import JSONLike

__all__ = ["canonical_json", "content_hash"]


# One encoder for every call: ``json.dumps`` with these options would build a new one each time.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: JSONLike) -> str:
    """Sorted keys, no whitespace, UTF-8 kept as is; raises TypeError on non-JSON."""
    return _ENCODER.encode(value)


def content_hash(value: JSONLike) -> str:
    """sha256 hex digest of :func:`canonical_json`."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
