"""A session's tool links read in one statement per chain level, members included."""

from __future__ import annotations

from datetime import UTC, datetime

from weakprompt import Store, Transcript
from weakprompt.store.tool_rows import fetch_session_links, link_tool_sets, put_tool_set


def test_a_commit_linked_to_an_empty_tool_set_reads_back_with_no_tools() -> None:
    with Store.open() as store:
        transcript = Transcript(store, "s")
        transcript.user("hi")
        reply = transcript.assistant("ok", tools=[])
        empty = "e" * 64
        with store.write() as conn:
            put_tool_set(conn, empty, [], datetime.now(UTC))
            link_tool_sets(conn, [(reply.hash, empty)])
        with store.read() as conn:
            assert fetch_session_links(conn, "s") == {reply.hash: ()}
        assert transcript.get_commit_tools(reply.hash) == []
