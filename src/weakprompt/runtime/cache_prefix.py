"""The cache-bust detector: each request's prefix fingerprint, and what differs first from the last one.

A provider's prompt cache holds a request's prefix; the next request reuses it
only up to the first byte that differs. The fingerprint names that prefix by
what weakprompt knows of its structure, never by wire bytes (so it holds
whatever layout an adapter sends): the system sections by path and text hash
(sections declared ``volatility="turn"`` left out: they are sent after the
stable prefix), the offered tools by name and schema hash in offer order, the
model settings' hash, then each conversation message by its commit and a
digest of how it is shown. See ``specs/CACHING.md``.

The loop makes one call per request (:meth:`PrefixWatch.observe`, where the
request is built); the reply's commit keeps the fingerprint (metadata
``cache_prefix``) and the bust (``cache_bust``), so a resumed run and a new
session of the same template compare with what was sent before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import attrs

from ..canonical import content_hash, parse_canonical_json
from ..errors import TranscriptError
from ..events import CacheBusted
from ..jsontypes import JSONObject, JSONValue
from ..messages import Message

if TYPE_CHECKING:
    from sqlalchemy import Connection, Select

    from ..clock import Clock
    from ..events import CacheBustCause, CacheBustKind, CompactionTier
    from ..model import ModelRequest
    from ..model_settings import ModelSettings
    from ..prompt import RenderedPrompt
    from ..tools import AnyTool
    from ..transcript import CommitInfo, Transcript

__all__ = [
    "CACHE_BUST_KEY",
    "CACHE_PREFIX_KEY",
    "Difference",
    "Fingerprint",
    "PrefixWatch",
    "first_difference",
    "fingerprint",
    "latest_fingerprint",
    "template_version",
]

CACHE_PREFIX_KEY = "cache_prefix"
"""Assistant commit metadata: the fingerprint of the request the reply answered."""
CACHE_BUST_KEY = "cache_bust"
"""Assistant commit metadata: what busted the cache for that request (:meth:`CacheBusted.to_json`)."""

T = TypeVar("T")

_SHORT = 16  # hex digits kept of each hash: enough to tell items apart, small in every commit

Pair = tuple[str, str]


def _short(value: str) -> str:
    return value[:_SHORT]


@attrs.frozen
class Fingerprint:
    """What a request's prefix is made of, in order; ``messages`` pairs are (commit, shown digest)."""

    template: str
    sections: tuple[Pair, ...]
    tools: tuple[Pair, ...]
    settings: str
    messages: tuple[Pair, ...]

    def to_json(self) -> JSONObject:
        return {
            "template": self.template,
            "sections": [list[JSONValue](pair) for pair in self.sections],
            "tools": [list[JSONValue](pair) for pair in self.tools],
            "settings": self.settings,
            "messages": [f"{commit}.{shown}" for commit, shown in self.messages],
        }

    @classmethod
    def from_json(cls, value: JSONValue | None) -> Fingerprint | None:
        """The fingerprint a commit recorded, or ``None`` when there is none or it cannot be read."""
        if not isinstance(value, dict):
            return None
        template, settings = value.get("template"), value.get("settings")
        sections, tools = _pairs(value.get("sections")), _pairs(value.get("tools"))
        messages = _messages(value.get("messages"))
        if not isinstance(template, str) or not isinstance(settings, str):
            return None
        if sections is None or tools is None or messages is None:
            return None
        return cls(template, sections, tools, settings, messages)


def _pairs(value: JSONValue | None) -> tuple[Pair, ...] | None:
    if not isinstance(value, list):
        return None
    pairs: list[Pair] = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2):
            return None
        name, digest = item
        if not (isinstance(name, str) and isinstance(digest, str)):
            return None
        pairs.append((name, digest))
    return tuple(pairs)


def _messages(value: JSONValue | None) -> tuple[Pair, ...] | None:
    if not isinstance(value, list):
        return None
    pairs: list[Pair] = []
    for item in value:
        if not isinstance(item, str) or item.count(".") != 1:
            return None
        commit, shown = item.split(".")
        pairs.append((commit, shown))
    return tuple(pairs)


def template_version(rendered: RenderedPrompt[T]) -> str:
    """Which template a prefix belongs to: its namespace, key and section paths (not their text)."""
    return _short(content_hash([rendered.ns, rendered.key, [s.path_text for s in rendered.sections]]))


class _Digests:
    """Each message's shown digest, computed once per (commit, message object)."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[Message, str]] = {}
        self._tools: dict[str, tuple[AnyTool, str]] = {}

    def tool(self, tool: AnyTool) -> str:
        """The schema hash of a tool the prompt does not declare (the output pipeline's own)."""
        known = self._tools.get(tool.name)
        if known is not None and known[0] is tool:
            return known[1]
        digest = content_hash(tool.spec())
        self._tools[tool.name] = (tool, digest)
        return digest

    def shown(self, commit: str, message: Message) -> str:
        known = self._known.get(commit)
        if known is not None and known[0] is message:
            return known[1]
        calls: list[JSONValue] = [[c.id, c.name, c.arguments_json()] for c in message.tool_calls]
        shape: JSONValue = [message.role, message.content, message.tool_call_id, message.is_error, calls]
        digest = content_hash(shape)[:8]
        self._known[commit] = (message, digest)
        return digest


def fingerprint(
    rendered: RenderedPrompt[T],
    request: ModelRequest,
    settings: ModelSettings,
    *,
    digests: _Digests | None = None,
) -> Fingerprint:
    """The prefix fingerprint of ``request``, built from ``rendered`` (the prompt the request came from)."""
    digests = digests if digests is not None else _Digests()
    sections = tuple((s.path_text, _short(s.text_hash)) for s in rendered.sections if s.volatility != "turn")
    hashes = dict(zip(rendered.tool_names, rendered.tool_hashes, strict=True))
    tools = tuple((tool.name, _short(hashes.get(tool.name) or digests.tool(tool))) for tool in request.tools)
    context = request.context
    messages = tuple(
        (_short(commit), digests.shown(commit, message))
        for message, commit in zip(context.messages, context.commit_hashes, strict=False)
        if message.role != "system"  # the system text is named by its sections, not its bytes
    )
    return Fingerprint(
        template=template_version(rendered),
        sections=sections,
        tools=tools,
        settings=_short(content_hash(settings.to_json())),
        messages=messages,
    )


@attrs.frozen
class Difference:
    """The first item two fingerprints disagree on (``commit``: the full hash shown there now)."""

    kind: CacheBustKind
    cause: CacheBustCause
    name: str
    old_hash: str | None
    new_hash: str | None
    position: int
    commit: str | None = None
    tier: CompactionTier | None = None
    """Set when a compaction made for this request is the cause (``commit`` is then its commit)."""


def _named_difference(
    kind: CacheBustKind, old: Sequence[Pair], new: Sequence[Pair], offset: int
) -> Difference | None:
    """Where two named lists (sections, tools) first differ: in place, by an addition, removal or move."""
    old_names = {name for name, _ in old}
    new_names = {name for name, _ in new}
    for index in range(max(len(old), len(new))):
        was = old[index] if index < len(old) else None
        now = new[index] if index < len(new) else None
        if was == now:
            continue
        position = offset + index
        if was is not None and now is not None and was[0] == now[0]:
            return Difference(kind, "changed", now[0], was[1], now[1], position)
        if now is not None and now[0] not in old_names:
            return Difference(kind, "added", now[0], None, now[1], position)
        if was is not None and was[0] not in new_names:
            return Difference(kind, "removed", was[0], was[1], None, position)
        assert now is not None  # both lists hold the same names here, so neither ran out first
        return Difference(kind, "moved", now[0], dict(old)[now[0]], now[1], position)
    return None


CommitLookup = Callable[[int], "CommitInfo | None"]
"""The commit shown at a message index now (``None``: not known)."""


def first_difference(
    old: Fingerprint, new: Fingerprint, lookup: CommitLookup | None = None, *, messages: bool = True
) -> Difference | None:
    """The first item of ``old`` that ``new`` does not repeat, or ``None`` (``new`` extends ``old``).

    Messages past the end of ``old`` are new turns, never a difference; with
    ``messages=False`` (another session) only sections, tools and settings count.
    """
    found = _named_difference("section", old.sections, new.sections, 0)
    if found is not None:
        return found
    offset = len(new.sections)
    found = _named_difference("tool", old.tools, new.tools, offset)
    if found is not None:
        return found
    offset += len(new.tools)
    if old.settings != new.settings:
        return Difference("settings", "changed", "model_settings", old.settings, new.settings, offset)
    if not messages:
        return None
    offset += 1
    for index, (was, now) in enumerate(zip(old.messages, new.messages, strict=False)):
        if was == now:
            continue
        if was[0] == now[0]:
            return Difference("message", "reshown", now[0], was[1], now[1], offset + index)
        info = lookup(index) if lookup is not None else None
        return _message_difference(was, now, info, offset + index)
    return None


def _message_difference(was: Pair, now: Pair, info: CommitInfo | None, position: int) -> Difference:
    """A message whose commit changed: its provenance names an edit, a summary or a compaction."""
    if info is None or info.operation != "EDIT" or info.edit_target is None:
        name = info.hash if info is not None else now[0]
        return Difference(
            "message", "replaced", name, was[0], now[0], position, None if info is None else info.hash
        )
    from ..transcript import compress, provenance  # loaded when a message busts the cache, not before

    metadata = info.metadata
    cause: CacheBustCause = "edited"
    if metadata.get(provenance.TRIGGERED_BY) == compress.TRIGGER_COMPRESS:
        cause = "compacted"
    elif provenance.SUMMARIZED_FROM in metadata:
        cause = "summarized"
    return Difference("message", cause, info.edit_target, was[0], now[0], position, info.hash)


class PrefixWatch:
    """One run's detector: the last request's fingerprint, and the bust of the request being sent.

    The loop calls :meth:`observe` as it builds each request and :meth:`sent`
    when the reply's commit is staged; a request built but never sent (a
    turn opened ahead and dropped) changes nothing.
    """

    def __init__(self, *, look_in_store: bool) -> None:
        self.previous: Fingerprint | None = None
        self.pending: Fingerprint | None = None
        self.busted: CacheBusted | None = None
        """What the request being sent busted (set by :meth:`observe`), for the event and the trace."""
        self._digests = _Digests()
        self._look_in_store = look_in_store
        """Whether the first request may read the store (not for a private store made for one run)."""
        self._first = True
        self._compactions: list[tuple[CompactionTier, str, frozenset[str]]] = []

    def compacted(self, tier: CompactionTier, commit: str, covered: Sequence[str]) -> None:
        """The window keeper compacted the history for the request being built: a likely cause."""
        self._compactions.append((tier, commit, frozenset(covered)))

    def observe(
        self,
        transcript: Transcript,
        rendered: RenderedPrompt[T],
        request: ModelRequest,
        settings: ModelSettings,
        *,
        prompt_name: str,
        clock: Clock,
    ) -> None:
        """Fingerprint ``request`` and compare it with the last one sent (first: the one recorded)."""
        new = fingerprint(rendered, request, settings, digests=self._digests)
        self.pending, self.busted = new, None
        compactions, self._compactions = self._compactions, []
        previous, previous_session = self.previous, None
        if self._first:
            self._first = False
            replied, previous = _recorded(request.context.messages)
            self.previous = previous
            if not replied and self._look_in_store:
                found = _latest_of_template(transcript, new.template)
                if found is not None:
                    previous_session, previous = found
        if previous is None:
            return
        context = request.context
        conversation = [
            commit
            for message, commit in zip(context.messages, context.commit_hashes, strict=False)
            if message.role != "system"
        ]

        def lookup(index: int) -> CommitInfo | None:
            return _commit(transcript, conversation[index])

        found_difference = first_difference(previous, new, lookup, messages=previous_session is None)
        if found_difference is None:
            return
        if compactions and found_difference.kind == "message":
            index = found_difference.position - len(new.sections) - len(new.tools) - 1
            found_difference = _by_compaction(found_difference, compactions, lookup(index))
        self.busted = CacheBusted(
            prompt_name=prompt_name,
            kind=found_difference.kind,
            cause=found_difference.cause,
            name=found_difference.name,
            old_hash=found_difference.old_hash,
            new_hash=found_difference.new_hash,
            position=found_difference.position,
            commit=found_difference.commit,
            previous_session=previous_session,
            session_id=transcript.session_id,
            created_at=clock.now(),
            compaction_tier=found_difference.tier,
        )

    def sent(self) -> tuple[JSONObject, CacheBusted | None]:
        """The request was answered: the reply commit's metadata, and the bust to publish (if any)."""
        metadata: JSONObject = {}
        busted = self.busted
        if self.pending is not None:
            metadata[CACHE_PREFIX_KEY] = self.pending.to_json()
            self.previous = self.pending
        if busted is not None:
            metadata[CACHE_BUST_KEY] = busted.to_json()
        self.pending, self.busted = None, None
        return metadata, busted


def _by_compaction(
    found: Difference,
    compactions: Sequence[tuple[CompactionTier, str, frozenset[str]]],
    info: CommitInfo | None,
) -> Difference:
    """``found``, named after the compaction that made it when one did (``specs/COMPACTION.md``).

    A summary or drop commit stands where the first message it covers was; a
    slim compaction reshows the results it covers. Anything else (an edit
    before the compacted part) keeps its own cause.
    """
    if info is None:  # pragma: no cover - a compiled message's commit is in its session
        return found
    shown = {info.hash, info.edit_target}
    for tier, commit, covered in reversed(compactions):
        if info.hash == commit or (found.cause == "reshown" and not shown.isdisjoint(covered)):
            return attrs.evolve(found, cause="compacted", name=commit, commit=commit, tier=tier)
    return found


def _recorded(messages: Sequence[Message]) -> tuple[bool, Fingerprint | None]:
    """Whether the conversation has a reply, and the fingerprint its last reply recorded.

    A last reply without one (edited, or stored before fingerprints were kept) gives none: the
    request is then compared with nothing, rather than with an older request.
    """
    for message in reversed(messages):
        if message.role == "assistant":
            return True, Fingerprint.from_json(message.metadata.get(CACHE_PREFIX_KEY))
    return False, None


def _commit(transcript: Transcript, commit: str) -> CommitInfo | None:
    try:
        return transcript.get(commit)
    except TranscriptError:  # pragma: no cover - a compiled message's commit is in its session
        return None


def _latest_of_template(transcript: Transcript, template: str) -> tuple[str, Fingerprint] | None:
    """The last fingerprint another session of this store recorded for ``template`` (one scan, by text)."""
    with transcript.store.read() as conn:
        return latest_fingerprint(conn, template, not_session=transcript.session_id)


def latest_fingerprint(
    conn: Connection, template: str, *, not_session: str
) -> tuple[str, Fingerprint] | None:
    """The newest assistant commit outside ``not_session`` whose fingerprint is of ``template``."""
    rows = conn.execute(_latest_query(), {"session": not_session, "pattern": f"%{template}%"})
    for session_id, text in rows:
        metadata = parse_canonical_json(str(text))
        found = Fingerprint.from_json(metadata.get(CACHE_PREFIX_KEY) if isinstance(metadata, dict) else None)
        if found is not None and found.template == template:
            return str(session_id), found
    return None


_QUERY: list[Select[str, str]] = []


def _latest_query() -> Select[str, str]:
    """Built once (SQLAlchemy then caches its compiled form): a template version is hex, no LIKE wildcard."""
    if not _QUERY:
        from sqlalchemy import bindparam, select

        from ..store import tables

        commits = tables.commits
        _QUERY.append(
            select(commits.c.session_id, commits.c.metadata_json)
            .where(
                commits.c.role == "assistant",
                commits.c.session_id != bindparam("session"),
                commits.c.metadata_json.like(bindparam("pattern")),
            )
            .order_by(commits.c.created_at.desc(), commits.c.seq.desc())
            .limit(20)
        )
    return _QUERY[0]
