"""A throwaway Postgres database for a test: created under a random name, migrated, dropped at the end.

The one helper every test that needs a database of its own uses (the integration conftest's
``fresh_database``, tests.support.gateway_fixtures, the ingest, answer and BEIR tests). SQL is composed with
``psycopg.sql.Identifier``, so the name is always quoted as an identifier, never pasted into the statement.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from rulesage import db


@contextmanager
def throwaway_database(prefix: str = "rs_test_", base_url: str | None = None) -> Iterator[str]:
    """CREATE DATABASE ``<prefix><random hex>`` on ``base_url``'s server (default: the configured one,
    ``rulesage.db.database_url()``: the embedded server in tests), apply every migration (which creates the
    vector and pg_trgm extensions), yield its URL, and DROP it (WITH (FORCE): connections a test left open do
    not keep it alive), also when the migration or the test fails."""
    base = base_url or db.database_url()
    name = prefix + secrets.token_hex(6)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = make_conninfo(base, dbname=name)
        db.migrate(url)
        yield url
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
