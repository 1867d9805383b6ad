"""Lazy tool results: old results compile as slim references unless asked for.

When the tool-output store keeps a result, the transcript commit of that
result records a :class:`StoredOutputRef` (the stored-output record's
commit view, declared with the record in ``store.output_record``) in its
metadata (under
:data:`STORED_OUTPUT_KEY`). :class:`LazyToolResults`, a compile transform,
then shows results from *earlier* user turns as a short reference (call
id, tool, summary, preview) instead of their full text, unless they are
loaded; results of the current turn always stay inline. A reference is only
used when it is shorter than what it replaces, so lazy loading never makes
the context larger. Stored data is never changed: this is a view.

The turn boundary is the last user message, or an explicit commit
(``turn_start``), which the evaluation loop passes so that its own
corrective user messages do not split one evaluation into two turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import attrs

from ..errors import TranscriptError
from ..jsontypes import JSONObject
from ..messages import Message
from ..output_record import StoredOutputRef
from .options import CompileOptions, CompileView

__all__ = [
    "LOADED_RESULT_KEY",
    "SLIM_REFERENCE_KEY",
    "STORED_OUTPUT_KEY",
    "LazyToolResults",
    "LoadToolResults",
    "StoredOutputRef",
    "loaded_note_text",
    "normalize_load",
    "slim_reference_text",
    "with_lazy_loading",
]

STORED_OUTPUT_KEY = "stored_output"
"""Commit metadata key of a tool result kept in the tool-output store."""

LOADED_RESULT_KEY = "loaded_tool_result"
"""Commit metadata key of a ``get_tool_result`` reply: ``{"tool_call_id": <the call it loaded>}``."""

SLIM_REFERENCE_KEY = "slim_reference"
"""``Message.metadata`` key on compiled messages that stand in for a result not loaded."""

LoadToolResults: TypeAlias = bool | Sequence[str]
"""``True``: every result inline; ``False``: earlier turns' results slim; ids: only those inline."""


def slim_reference_text(ref: StoredOutputRef) -> str:
    """The stand-in for a stored result that is not loaded into the context."""
    return (
        f"[Result of tool call {ref.tool_call_id} ({ref.tool_name}) from an earlier turn: "
        "kept in storage, not loaded here]\n"
        f"Summary: {ref.summary}\n"
        f"Preview:\n{ref.preview}\n"
        f'For the full result call get_tool_result(tool_call_id = "{ref.tool_call_id}").'
    )


def loaded_note_text(tool_call_id: str) -> str:
    """The stand-in for an earlier ``get_tool_result`` reply (loaded results are not kept in context)."""
    return (
        f"[The full result of tool call {tool_call_id} was shown here in an earlier turn. "
        f'Call get_tool_result(tool_call_id = "{tool_call_id}") again if you need it.]'
    )


def normalize_load(load: LoadToolResults) -> bool | frozenset[str]:
    """Check a ``load_tool_results`` value; raises :class:`TranscriptError` naming what is wrong."""
    if isinstance(load, bool):
        return load
    if isinstance(load, str) or not isinstance(load, Sequence):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TranscriptError(
            f"load_tool_results must be True, False or a list of tool_call_ids, got {load!r}"
        )
    ids = tuple(load)
    bad = [item for item in ids if not isinstance(item, str) or not item]  # pyright: ignore[reportUnnecessaryIsInstance]
    if bad:
        raise TranscriptError(f"load_tool_results: tool_call_ids must be non-empty strings, got {bad[0]!r}")
    return frozenset(ids)


def _loaded_of(metadata: JSONObject) -> str | None:
    raw = metadata.get(LOADED_RESULT_KEY)
    if isinstance(raw, dict):
        target = raw.get("tool_call_id")
        if isinstance(target, str) and target:
            return target
    return None


@attrs.frozen
class LazyToolResults:
    """The compile transform behind ``compile(load_tool_results=...)``.

    ``load`` is ``True`` (change nothing), ``False`` (slim every stored
    result before the current turn) or a set of tool_call_ids to keep
    inline. ``turn_start`` is the commit where the current turn begins
    (default: the last user message).
    """

    load: bool | frozenset[str]
    turn_start: str | None = None

    def __call__(self, view: CompileView) -> CompileView:
        if self.load is True:
            return view
        start = self._turn_start(view)
        if start == 0:
            return view
        keep = self.load if isinstance(self.load, frozenset) else frozenset[str]()
        messages = list(view.context.messages)
        changed = False
        for index in range(start):
            message = messages[index]
            if message.role != "tool" or message.tool_call_id in keep:
                continue
            replacement = self._stand_in(message, view.commits[index].metadata, keep)
            if replacement is not None and len(replacement.content) < len(message.content):
                messages[index] = replacement
                changed = True
        return view.with_messages(messages) if changed else view

    def _turn_start(self, view: CompileView) -> int:
        commits = view.commits
        if self.turn_start is not None:
            for index, commit in enumerate(commits):
                if self.turn_start in (commit.hash, commit.edit_target):
                    return index
        for index in range(len(commits) - 1, -1, -1):
            if commits[index].role == "user":
                return index
        return 0

    @staticmethod
    def _stand_in(message: Message, metadata: JSONObject, keep: frozenset[str]) -> Message | None:
        ref = StoredOutputRef.from_json(metadata.get(STORED_OUTPUT_KEY))
        if ref is not None:
            if ref.tool_call_id in keep:
                return None
            text = slim_reference_text(ref)
            marker = ref.tool_call_id
        else:
            loaded = _loaded_of(metadata)
            if loaded is None or loaded in keep:
                return None
            text = loaded_note_text(loaded)
            marker = loaded
        return Message(
            "tool",
            text,
            tool_call_id=message.tool_call_id,
            name=message.name,
            is_error=message.is_error,
            metadata={SLIM_REFERENCE_KEY: marker},
        )


def with_lazy_loading(options: CompileOptions | None, load: LoadToolResults) -> CompileOptions | None:
    """``options`` with the lazy-loading transform first (unchanged when ``load`` is ``True``)."""
    normalized = normalize_load(load)
    if normalized is True:
        return options
    if options is None:
        return CompileOptions(transforms=(LazyToolResults(normalized),))
    return attrs.evolve(options, transforms=(LazyToolResults(normalized), *options.transforms))
