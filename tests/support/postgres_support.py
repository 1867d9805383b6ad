"""PostgreSQL for tests: a database per module and a fresh schema per test, beside a SQLite file.

Without ``WEAKPROMPT_PG_URL`` the PostgreSQL cases skip, except under CI,
where they fail: CI must never pass without having run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from weakprompt.store.engine import normalize_url

PG_URL_ENV = "WEAKPROMPT_PG_URL"


def _server_url() -> str:
    url = os.environ.get(PG_URL_ENV)
    if url:
        return normalize_url(url)
    if os.environ.get("CI"):
        pytest.fail(
            f"CI is set but {PG_URL_ENV} is not: the PostgreSQL store tests must run in CI. "
            f'Start a server with `eval "$(.ci/postgres.sh)"` before running pytest.',
            pytrace=False,
        )
    pytest.skip(f'{PG_URL_ENV} is not set (`eval "$(.ci/postgres.sh)"` starts a local server)')


def _autocommit(url: str) -> Engine:
    return create_engine(url, isolation_level="AUTOCOMMIT")


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    """URL of a database created for this module, dropped (connections and all) at the end."""
    server = make_url(_server_url())
    name = f"weakprompt_test_{uuid.uuid4().hex[:12]}"
    admin = _autocommit(server.render_as_string(hide_password=False))
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield server.set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture
def pg_url(pg_database: str) -> Iterator[str]:
    """A store URL whose tables live in a fresh, empty schema of the module's database."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = _autocommit(pg_database)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        yield _in_schema(pg_database, schema)
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    finally:
        admin.dispose()


def _in_schema(database_url: str, schema: str) -> str:
    url = make_url(database_url).update_query_dict({"options": f"-csearch_path={schema}"})
    return url.render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))
