"""Tool schemas as provenance: hashing, validation and per-turn set changes.

A schema's identity is the sha256 of its canonical JSON (sorted keys,
compact separators), so key order never matters and any change to a name,
description or parameter is a new hash: exactly what breaks a provider's
prompt cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import cast

import attrs

from ..canonical import canonical_json, find_surrogate, parse_canonical_json
from ..errors import TranscriptError
from ..jsontypes import JSONObject, JSONValue
from ..model.tool_shapes import tool_schema_name

__all__ = [
    "PreparedTool",
    "ToolSetChange",
    "diff_tool_sets",
    "hash_tool_schema",
    "hash_tool_set",
    "prepare_tools",
]


def hash_tool_schema(schema: Mapping[str, JSONValue]) -> str:
    """sha256 hex of the schema's canonical JSON; TranscriptError (naming the tool) if it is not JSON."""
    return _digest(_canonical(schema, _label(schema, 0)))


def _label(schema: Mapping[str, JSONValue], index: int) -> str:
    name = tool_schema_name(schema)
    return f"tool {name!r} (#{index})" if name else f"tool #{index}"


def _canonical(schema: Mapping[str, JSONValue], label: str) -> str:
    try:
        return canonical_json(schema)
    except (TypeError, ValueError) as exc:
        raise TranscriptError(f"{label} schema is not JSON-serialisable: {exc}") from exc


def _digest(canonical: str) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def hash_tool_set(tool_hashes: Sequence[str]) -> str:
    """Identity of an ordered tool set: order matters, as it does to providers."""
    return _digest(canonical_json(list(tool_hashes)))


@attrs.frozen
class PreparedTool:
    """A validated schema with its hash, name and canonical text, ready to store."""

    content_hash: str
    name: str
    canonical: str
    schema: JSONObject


def _prepare(schema: object, *, index: int) -> PreparedTool:
    if not isinstance(schema, Mapping):
        raise TranscriptError(f"tool #{index} must be a JSON object (dict), got {type(schema).__name__}")
    mapping: Mapping[str, JSONValue] = schema  # pyright: ignore[reportUnknownVariableType]
    name = tool_schema_name(mapping)
    label = _label(mapping, index)
    if name is None:
        raise TranscriptError(f"{label} has no name: expected 'name' or 'function.name'")
    if find_surrogate(name) is not None:
        # The name is also stored as plain text (for tool_versions), which cannot hold one.
        raise TranscriptError(f"{label} name contains a lone surrogate, which is not valid Unicode text")
    canonical = _canonical(mapping, label)
    # Round-trip so what is kept in memory is exactly what the database returns.
    stored = cast("JSONObject", parse_canonical_json(canonical))
    return PreparedTool(content_hash=_digest(canonical), name=name, canonical=canonical, schema=stored)


def prepare_tools(tools: Sequence[Mapping[str, JSONValue]]) -> tuple[PreparedTool, ...]:
    """Validate and hash a tool list, naming the first bad tool in the error."""
    if isinstance(tools, (str, bytes, Mapping)):
        raise TranscriptError(f"tools must be a list of schemas, got {type(tools).__name__}")
    return tuple(_prepare(t, index=i) for i, t in enumerate(tools))


@attrs.frozen
class ToolSetChange:
    """How one commit's linked tool set differs from the previous linked set.

    The one record of a tool-set change: ``Transcript.tool_set_changes()``
    and the inspector's session page both give it. Names identify tools
    here; ``changed`` lists names whose schema hash differs. ``reordered`` is
    True when the same schemas come in another order (also a prompt-cache
    break for most providers). ``set_hash`` and ``names`` are the commit's
    set (its ``hash_tool_set`` and its tools in offer order).
    """

    commit_hash: str
    previous_commit: str | None
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    reordered: bool = False
    set_hash: str = ""
    names: tuple[str, ...] = ()

    @property
    def first(self) -> bool:
        """The session's first linked set: every tool counts as added."""
        return self.previous_commit is None

    @property
    def breaks_cache(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.reordered)

    @property
    def same_as_before(self) -> bool:
        """Not the first set, and nothing differs from the one before."""
        return not (self.first or self.breaks_cache)


def diff_tool_sets(
    commit_hash: str,
    previous_commit: str | None,
    previous: Sequence[tuple[str, str]],
    current: Sequence[tuple[str, str]],
    *,
    set_hash: str | None = None,
) -> ToolSetChange:
    """Compare two ordered ``(name, content_hash)`` lists.

    ``set_hash`` is the current set's stored hash when the caller has it;
    otherwise it is computed from ``current``.
    """
    before = dict(previous)
    after = dict(current)
    added = tuple(n for n in after if n not in before)
    removed = tuple(n for n in before if n not in after)
    changed = tuple(n for n in after if n in before and before[n] != after[n])
    same_members = not (added or removed or changed)
    reordered = same_members and [h for _, h in previous] != [h for _, h in current]
    return ToolSetChange(
        commit_hash=commit_hash,
        previous_commit=previous_commit,
        added=added,
        removed=removed,
        changed=changed,
        reordered=reordered,
        set_hash=hash_tool_set([h for _, h in current]) if set_hash is None else set_hash,
        names=tuple(n for n, _ in current),
    )
