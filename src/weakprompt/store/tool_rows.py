"""SQL for tool definitions and their per-commit links."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import attrs
from sqlalchemy import Connection, bindparam, select

from ..canonical import parse_canonical_json
from ..jsontypes import JSONObject, JSONValue
from . import tables
from .fork_rows import chain_sessions
from .prepared import PreparedInsertIgnore, PreparedStatement

__all__ = [
    "ToolDefinition",
    "fetch_definitions",
    "fetch_definitions_by_name",
    "fetch_links",
    "fetch_session_links",
    "link_tool_sets",
    "put_definitions",
    "put_tool_set",
    "tool_set_exists",
]


@attrs.frozen
class ToolDefinition:
    """One stored tool schema; ``content_hash`` is its identity, ``name`` a label."""

    content_hash: str
    name: str
    schema: JSONObject
    created_at: datetime


_PUT_DEFINITIONS = PreparedInsertIgnore(
    tables.tool_definitions, ("content_hash", "name", "schema_json", "created_at")
)
_PUT_SETS = PreparedInsertIgnore(tables.tool_sets, ("set_hash", "tool_count", "created_at"))
_PUT_MEMBERS = PreparedInsertIgnore(tables.tool_set_members, ("set_hash", "position", "tool_hash"))


def put_definitions(
    conn: Connection, definitions: Sequence[tuple[str, str, str]], created_at: datetime
) -> None:
    """Store ``(content_hash, name, canonical_json)`` schemas once; a stored hash keeps its created_at."""
    rows = [
        {"content_hash": h, "name": name, "schema_json": canonical, "created_at": created_at.isoformat()}
        for h, name, canonical in definitions
    ]
    _PUT_DEFINITIONS.executemany(conn, rows)


_SET_EXISTS = PreparedStatement(
    select(tables.tool_sets.c.set_hash).where(tables.tool_sets.c.set_hash == bindparam("set_hash"))
)


def tool_set_exists(conn: Connection, set_hash: str) -> bool:
    return _SET_EXISTS.first(conn, {"set_hash": set_hash}) is not None


def put_tool_set(conn: Connection, set_hash: str, tool_hashes: Sequence[str], created_at: datetime) -> None:
    """Store an ordered tool set once; its member definitions must already be stored."""
    inserted = {"set_hash": set_hash, "tool_count": len(tool_hashes), "created_at": created_at.isoformat()}
    _PUT_SETS.executemany(conn, [inserted])
    members = [{"set_hash": set_hash, "position": i, "tool_hash": h} for i, h in enumerate(tool_hashes)]
    _PUT_MEMBERS.executemany(conn, members)


_LINK = PreparedStatement(tables.commit_tools.insert(), columns=("commit_hash", "tool_set_hash"))


def link_tool_sets(conn: Connection, links: Sequence[tuple[str, str]]) -> None:
    """Link each ``(commit_hash, set_hash)`` pair in one statement."""
    _LINK.executemany(conn, [{"commit_hash": c, "tool_set_hash": s} for c, s in links])


def _definition(
    content_hash: object, name: object, schema_json: object, created_at: object
) -> ToolDefinition:
    schema: JSONValue = parse_canonical_json(str(schema_json))
    return ToolDefinition(
        content_hash=str(content_hash),
        name=str(name),
        schema=schema if isinstance(schema, dict) else {},
        created_at=datetime.fromisoformat(str(created_at)),
    )


def fetch_definitions(conn: Connection, hashes: Iterable[str]) -> dict[str, ToolDefinition]:
    c = tables.tool_definitions.c
    wanted = list(dict.fromkeys(hashes))
    found: dict[str, ToolDefinition] = {}
    for start in range(0, len(wanted), 500):
        query = select(c.content_hash, c.name, c.schema_json, c.created_at).where(
            c.content_hash.in_(wanted[start : start + 500])
        )
        for row in conn.execute(query):
            definition = _definition(*row)
            found[definition.content_hash] = definition
    return found


def fetch_definitions_by_name(conn: Connection, name: str) -> list[ToolDefinition]:
    """Every stored version of a tool name, oldest first."""
    c = tables.tool_definitions.c
    query = (
        select(c.content_hash, c.name, c.schema_json, c.created_at)
        .where(c.name == name)
        .order_by(c.created_at, c.content_hash)
    )
    return [_definition(*row) for row in conn.execute(query)]


def _links(conn: Connection, rows: Iterable[Sequence[Any]]) -> dict[str, tuple[str, ...]]:
    """Rows of (commit_hash, set_hash) -> tool hashes per commit, in the rows' order."""
    sets: dict[str, str] = {}
    for row in rows:
        sets[str(row[0])] = str(row[1])
    members = _set_members(conn, set(sets.values()))
    return {commit: members[set_hash] for commit, set_hash in sets.items()}


def _set_members(conn: Connection, set_hashes: Iterable[str]) -> dict[str, tuple[str, ...]]:
    c = tables.tool_set_members.c
    wanted = list(set_hashes)
    found: dict[str, list[str]] = {h: [] for h in wanted}
    for start in range(0, len(wanted), 500):
        query = (
            select(c.set_hash, c.tool_hash)
            .where(c.set_hash.in_(wanted[start : start + 500]))
            .order_by(c.set_hash, c.position)
        )
        for set_hash, tool_hash in conn.execute(query):
            found[str(set_hash)].append(str(tool_hash))
    return {k: tuple(v) for k, v in found.items()}


def fetch_links(conn: Connection, commit_hash: str) -> tuple[str, ...]:
    """Tool hashes linked to one commit, in position order (empty when none)."""
    c = tables.commit_tools.c
    query = select(c.commit_hash, c.tool_set_hash).where(c.commit_hash == commit_hash)
    return _links(conn, conn.execute(query)).get(commit_hash, ())


def fetch_session_links(
    conn: Connection, session_id: str, *, after_seq: int = -1
) -> dict[str, tuple[str, ...]]:
    """Tool hashes per linked commit of a session's chain with ``seq > after_seq``, oldest commit first.

    A fork's chain includes its parent's commits up to the fork commit (``fork_rows``).
    """
    # One prepared statement per level gives each linked commit's set with its members: a
    # second query for the members (an IN list, built and compiled anew each time) cost more.
    members: dict[str, list[str]] = {}
    for session, last in reversed(chain_sessions(conn, session_id).items()):  # oldest first
        if last is not None and last <= after_seq:
            continue
        upto = _NO_LIMIT if last is None else last
        values = {"session_id": session, "after_seq": after_seq, "upto_seq": upto}
        for commit_hash, tool_hash in _SESSION_LINKS.all(conn, values):
            tools = members.setdefault(str(commit_hash), [])
            if tool_hash is not None:  # None: the commit's set has no members (outer join)
                tools.append(str(tool_hash))
    return {commit: tuple(tools) for commit, tools in members.items()}


_NO_LIMIT = 2**31 - 1  # above every seq; fits PostgreSQL's INTEGER
_SESSION_LINKS = PreparedStatement(
    select(tables.commit_tools.c.commit_hash, tables.tool_set_members.c.tool_hash)
    .join(tables.commits, tables.commits.c.hash == tables.commit_tools.c.commit_hash)
    .outerjoin(
        tables.tool_set_members,
        tables.tool_set_members.c.set_hash == tables.commit_tools.c.tool_set_hash,
    )
    .where(
        tables.commits.c.session_id == bindparam("session_id"),
        tables.commits.c.seq > bindparam("after_seq"),
        tables.commits.c.seq <= bindparam("upto_seq"),
    )
    .order_by(tables.commits.c.seq, tables.tool_set_members.c.position)
)
