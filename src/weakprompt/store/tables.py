"""The live table definitions: the shape of the newest schema version.

Queries use these objects. Migration steps do *not*: each step carries its
own frozen DDL (see :mod:`weakprompt.store.migrations`), so that changing a
table here later can never change what an old step creates. A test checks
that a database built by the migrations matches these definitions.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "HASH_LENGTH",
    "blobs",
    "commit_tools",
    "commits",
    "forks",
    "eval_results",
    "metadata",
    "part_blobs",
    "paused_runs",
    "run_journal",
    "run_leases",
    "schema_versions",
    "store_identity",
    "tool_definitions",
    "tool_output_blobs",
    "tool_outputs",
    "tool_set_members",
    "tool_sets",
]

HASH_LENGTH = 64
"""sha256 hex digests everywhere."""

metadata = MetaData()

schema_versions = Table(
    "weakprompt_schema",
    metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("description", Text, nullable=False),
    Column("applied_at", String(40), nullable=False),
)

blobs = Table(
    "blobs",
    metadata,
    Column("hash", String(HASH_LENGTH), primary_key=True),
    Column("content", Text, nullable=False),
    Column("size_bytes", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
)

commits = Table(
    "commits",
    metadata,
    Column("hash", String(HASH_LENGTH), primary_key=True),
    Column("session_id", String(255), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("parent_hash", String(HASH_LENGTH), ForeignKey("commits.hash"), nullable=True),
    Column("operation", String(8), nullable=False),
    Column("edit_target", String(HASH_LENGTH), ForeignKey("commits.hash"), nullable=True),
    Column("role", String(16), nullable=False),
    Column("blob_hash", String(HASH_LENGTH), ForeignKey("blobs.hash"), nullable=False),
    Column("message", Text, nullable=True),
    Column("metadata_json", Text, nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
    UniqueConstraint("session_id", "seq", name="uq_commits_session_seq"),
    CheckConstraint("operation IN ('APPEND', 'EDIT')", name="ck_commits_operation"),
)

tool_definitions = Table(
    "tool_definitions",
    metadata,
    Column("content_hash", String(HASH_LENGTH), primary_key=True),
    Column("name", String(255), nullable=False, index=True),
    Column("schema_json", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
)

tool_sets = Table(
    "tool_sets",
    metadata,
    Column("set_hash", String(HASH_LENGTH), primary_key=True),
    Column("tool_count", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
)

tool_set_members = Table(
    "tool_set_members",
    metadata,
    Column("set_hash", String(HASH_LENGTH), ForeignKey("tool_sets.set_hash"), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("tool_hash", String(HASH_LENGTH), ForeignKey("tool_definitions.content_hash"), nullable=False),
    Index("ix_tool_set_members_tool", "tool_hash"),
    sqlite_with_rowid=False,
)

commit_tools = Table(
    "commit_tools",
    metadata,
    Column("commit_hash", String(HASH_LENGTH), ForeignKey("commits.hash"), primary_key=True),
    Column(
        "tool_set_hash", String(HASH_LENGTH), ForeignKey("tool_sets.set_hash"), nullable=False, index=True
    ),
)

tool_output_blobs = Table(
    "tool_output_blobs",
    metadata,
    Column("hash", String(HASH_LENGTH), primary_key=True),
    Column("data", LargeBinary, nullable=False),
    Column("encoding", String(16), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("stored_bytes", BigInteger, nullable=False),
    Column("created_at", String(40), nullable=False),
)

tool_outputs = Table(
    "tool_outputs",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("tool_call_id", String(255), nullable=False),
    Column("handle", String(36), nullable=False),
    Column("blob_hash", String(HASH_LENGTH), ForeignKey("tool_output_blobs.hash"), nullable=False),
    Column("tool_name", String(255), nullable=False),
    Column("arguments", Text, nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("lines", BigInteger, nullable=False),
    Column("tokens", BigInteger, nullable=False),
    Column("is_error", Boolean, nullable=False),
    Column("oversized", Boolean, nullable=False),
    Column("summary", Text, nullable=False),
    Column("preview", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Index("ix_tool_outputs_call", "session_id", "tool_call_id"),
    Index("ix_tool_outputs_handle", "session_id", "handle"),
    Index("ix_tool_outputs_blob", "blob_hash"),
)

paused_runs = Table(
    "paused_runs",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("status", String(16), nullable=False),
    Column("head_hash", String(HASH_LENGTH), nullable=True),
    Column("pending_json", Text, nullable=False),
    Column("state_json", Text, nullable=False),
    Column("decisions_json", Text, nullable=True),
    Column("decided_by", String(255), nullable=True),
    Column("created_at", String(40), nullable=False),
    Column("resumed_at", String(40), nullable=True),
    CheckConstraint("status IN ('paused', 'resumed')", name="ck_paused_runs_status"),
    Index("ix_paused_runs_status", "status"),
)
"""One row per pause of a run (``specs/APPROVAL.md``): the calls waiting, the session state, the decisions."""

run_journal = Table(
    "run_journal",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("head_hash", String(HASH_LENGTH), nullable=True),
    Column("reply_json", Text, nullable=True),
    Column("calls_json", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
)
"""At most one row per session: a turn whose tool calls are running; removed with the turn's commit."""

store_identity = Table(
    "store_identity",
    metadata,
    Column("store_id", String(36), primary_key=True),
)
"""One row: the store's random id, made when the store was created (or upgraded to version 5)."""

run_leases = Table(
    "run_leases",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("token", String(32), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", BigInteger, nullable=False),
    Column("pid_started", String(32), nullable=False),
    Column("acquired_at", String(40), nullable=False),
    Column("expires_ms", BigInteger, nullable=False),
)
"""At most one row per session: the run under way on it (``store/run_leases.py``); removed when it ends."""

forks = Table(
    "forks",
    metadata,
    Column("session_id", String(255), primary_key=True),
    Column("parent_session", String(255), nullable=False, index=True),
    Column("fork_commit", String(HASH_LENGTH), ForeignKey("commits.hash"), nullable=False),
    Column("fork_seq", Integer, nullable=False),
    Column("created_at", String(40), nullable=False),
)
"""One row per fork (``store/fork_rows.py``): the session shares its parent's chain up to ``fork_commit``."""
eval_results = Table(
    "eval_results",
    metadata,
    Column("experiment_id", String(64), primary_key=True),
    Column("case_name", String(255), primary_key=True),
    Column("repeat", Integer, primary_key=True, autoincrement=False),
    Column("case_index", Integer, nullable=False),
    Column("experiment_name", String(255), nullable=False),
    Column("dataset", String(255), nullable=False),
    Column("session_id", String(255), nullable=False),
    Column("passed", Boolean, nullable=False),
    Column("scores_json", Text, nullable=False),
    Column("outcomes_json", Text, nullable=False),
    Column("usage_json", Text, nullable=False),
    Column("turns", Integer, nullable=False),
    Column("duration_ms", BigInteger, nullable=False),
    Column("error", Text, nullable=True),
    Column("started_at", String(40), nullable=False),
    Index("ix_eval_results_name", "experiment_name"),
    Index("ix_eval_results_session", "session_id"),
)
"""One row per run of an eval case (``specs/EVALS.md``); ``session_id`` names the run's transcript."""
part_blobs = Table(
    "part_blobs",
    metadata,
    Column("digest", String(80), primary_key=True),
    Column("media_type", String(255), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("data", LargeBinary, nullable=False),
    Column("created_at", String(40), nullable=False),
)
"""The bytes of image and document parts, once per ``sha256:<hex>`` digest (``store/part_blob_rows.py``)."""
