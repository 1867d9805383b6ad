"""Tool sets: the tools offered on a turn, what changed since the turn before, and a page per set hash.

A change is the transcript's ``ToolSetChange`` (this module's own, with other fields, is gone:
its old name here warns for one release); this module reads the sets from the store.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs
from sqlalchemy import Connection, func, select

from ..lazy import lazy_exports
from ..store import Store, tables
from ..transcript import tool_tracking
from ..transcript.tool_tracking import diff_tool_sets
from ._json import as_object, as_str, load_object, pretty

__all__ = [
    "ToolEntry",
    "ToolSetPage",
    "compare_sets",
    "load_tool_set_page",
    "set_members",
]


@attrs.frozen
class ToolEntry:
    """One tool of a set: its name, schema hash, description and schema (pretty JSON)."""

    name: str
    tool_hash: str
    description: str = ""
    schema: str = ""


@attrs.frozen
class ToolSetPage:
    set_hash: str
    tools: tuple[ToolEntry, ...]
    commits: int
    sessions: tuple[str, ...]


def _entry(name: object, tool_hash: object, schema_json: object, *, full: bool) -> ToolEntry:
    schema = load_object(schema_json)
    inner = as_object(schema.get("function")) or schema  # OpenAI's shape nests the function
    description = as_str(inner.get("description")) or ""
    return ToolEntry(
        name=str(name),
        tool_hash=str(tool_hash),
        description=description,
        schema=pretty(schema) if full else "",
    )


def set_members(
    conn: Connection, set_hashes: Iterable[str], *, full: bool = False
) -> dict[str, tuple[ToolEntry, ...]]:
    """The tools of each set, in offer order (``full``: with their schemas)."""
    wanted = sorted(set(set_hashes))
    if not wanted:
        return {}
    members, definitions = tables.tool_set_members, tables.tool_definitions
    query = (
        select(members.c.set_hash, definitions.c.name, definitions.c.content_hash, definitions.c.schema_json)
        .join(definitions, definitions.c.content_hash == members.c.tool_hash)
        .where(members.c.set_hash.in_(wanted))
        .order_by(members.c.set_hash, members.c.position)
    )
    found: dict[str, list[ToolEntry]] = {h: [] for h in wanted}
    for set_hash, name, tool_hash, schema_json in conn.execute(query):
        found[str(set_hash)].append(_entry(name, tool_hash, schema_json, full=full))
    return {h: tuple(entries) for h, entries in found.items()}


def compare_sets(
    commit_hash: str,
    set_hash: str,
    tools: tuple[ToolEntry, ...],
    previous: tuple[str, tuple[ToolEntry, ...]] | None,
) -> tool_tracking.ToolSetChange:
    """What ``tools`` (linked to ``commit_hash``) changed compared with ``previous``.

    ``previous`` is the commit of the turn before and its tools (``None``: the
    first set of the session). The comparison is the transcript's own.
    """
    before_commit, before = previous if previous is not None else (None, ())
    return diff_tool_sets(
        commit_hash,
        before_commit,
        [(t.name, t.tool_hash) for t in before],
        [(t.name, t.tool_hash) for t in tools],
        set_hash=set_hash,
    )


def load_tool_set_page(store: Store, set_hash: str, *, sessions_shown: int = 20) -> ToolSetPage | None:
    """A tool set with its schemas, how many commits link it and some sessions that offered it."""
    with store.read() as conn:
        exists = conn.execute(
            select(tables.tool_sets.c.set_hash).where(tables.tool_sets.c.set_hash == set_hash)
        ).first()
        if exists is None:
            return None
        tools = set_members(conn, [set_hash], full=True).get(set_hash, ())
        links = tables.commit_tools
        commits = conn.execute(
            select(func.count()).select_from(links).where(links.c.tool_set_hash == set_hash)
        ).scalar_one()
        sessions = (
            select(tables.commits.c.session_id)
            .join(links, links.c.commit_hash == tables.commits.c.hash)
            .where(links.c.tool_set_hash == set_hash)
            .distinct()
            .limit(sessions_shown)
        )
        shown = tuple(str(s) for s in conn.execute(sessions).scalars())
    return ToolSetPage(set_hash=set_hash, tools=tools, commits=int(commits), sessions=shown)


__getattr__, __dir__ = lazy_exports(
    __name__, {}, __all__, renamed={"ToolSetChange": "weakprompt.transcript.ToolSetChange"}
)
