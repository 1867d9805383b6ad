"""Canonical JSON and content hashes.

Hashes identify tool schemas and transcript blobs across processes, so the
encoding must not depend on key order or whitespace.

A Python string may hold a lone surrogate (U+D800..U+DFFF): JSON from a
model can spell one (``"\\ud800"``) and decoding gives it back. UTF-8 has no
encoding for it, so the text could not be hashed or stored. Canonical JSON
therefore writes every surrogate as a ``\\uXXXX`` escape, the one spelling
of it that is plain UTF-8, and keeps every other character as it is (text
without surrogates encodes exactly as before). :func:`parse_canonical_json`
reads such text back to the very same strings: unlike a plain JSON decoder,
it does not merge an escaped high and low surrogate into one character,
because canonical JSON never escapes a real character outside the BMP.
"""

from __future__ import annotations

import json
import re

from .jsontypes import JSONLike, JSONValue

__all__ = ["canonical_json", "content_hash", "find_surrogate", "parse_canonical_json"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPED_SURROGATE = "\\ud"  # how every escape canonical_json writes for a surrogate starts
_STRING_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"', re.DOTALL)
_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def find_surrogate(text: str) -> int | None:
    """Index of the first surrogate code point in ``text``, or None (cheap for ASCII text)."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def _escape_surrogates(text: str) -> str:
    if find_surrogate(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


# One encoder for every call: ``json.dumps`` with these options would build a new one each time.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: JSONLike) -> str:
    """Sorted keys, no whitespace, UTF-8 kept as is, surrogates escaped; raises TypeError on non-JSON."""
    text = _ENCODER.encode(value)
    # Outside strings JSON is ASCII, so a surrogate here is inside a string literal.
    return _escape_surrogates(text)


def content_hash(value: JSONLike) -> str:
    """sha256 hex digest of :func:`canonical_json`."""
    import hashlib  # here, on first use: OpenSSL's module costs milliseconds to import

    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def parse_canonical_json(text: str) -> JSONValue:
    """Decode JSON text written by :func:`canonical_json`, every string exactly as it was encoded.

    Raises ``ValueError`` for text that is not JSON, as ``json.loads`` does.
    """
    value: JSONValue = json.loads(text)
    if _ESCAPED_SURROGATE not in text:
        return value
    # Rare: decode every string literal by hand (escaped surrogates stay one code point
    # each) and put them back into the structure json.loads found.
    strings: list[str] = []

    def number(match: re.Match[str]) -> str:
        strings.append(_unescape(match[1]))
        return f'"{len(strings) - 1}"'

    return _restore(json.loads(_STRING_TOKEN.sub(number, text)), strings)


def _unescape(body: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m[1], 16)) if m[1] else _SIMPLE_ESCAPES[m[2]], body)


def _restore(value: JSONValue, strings: list[str]) -> JSONValue:
    if isinstance(value, str):
        return strings[int(value)]
    if isinstance(value, list):
        return [_restore(item, strings) for item in value]
    if isinstance(value, dict):
        return {strings[int(key)]: _restore(item, strings) for key, item in value.items()}
    return value
