"""Reading passages with their document: what fusion hands downstream, and what the evaluation matches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

# A passage with its document, from ``passages`` (retired rows too) or one of the views over it.
_SELECT = """
SELECT p.id, p.text, d.key, d.title, d.kind, d.version, coalesce(g.slug, ''), p.page_start, p.page_end,
       p.heading_path, coalesce(p.rule_id, ''), coalesce(p.section_id, 0), coalesce(d.amends, '')
FROM {table} p
JOIN documents d ON d.id = p.document_id
LEFT JOIN games g ON g.id = d.game_id
"""
HYDRATE_SQL = _SELECT.format(table="passages") + "WHERE p.id = ANY(%s)"
CURRENT_OF_DOCUMENT_SQL = _SELECT.format(table="current_passages") + "WHERE d.key = %s ORDER BY p.ord"


@dataclass(frozen=True)
class StoredPassage:
    id: int
    text: str
    doc_key: str
    doc_title: str
    doc_kind: str
    doc_version: str
    game: str  # the owning game's slug; '' for a family-level document
    page_start: int  # 0 for files without pages
    page_end: int
    heading_path: list[str]
    rule_id: str
    section_id: int
    amends: str


def _row(r: Any) -> StoredPassage:
    return StoredPassage(
        int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7] or 0, r[8] or 0, list(r[9] or []), r[10],
        int(r[11]), r[12],
    )  # fmt: skip


async def hydrate(conn: psycopg.AsyncConnection, ids: list[int]) -> dict[int, StoredPassage]:
    """The passages of ``ids`` that exist (retired ones too: an old ruling still shows its quotes)."""
    cur = await conn.execute(HYDRATE_SQL, (ids,))
    return {int(r[0]): _row(r) for r in await cur.fetchall()}


def hydrate_sync(conn: psycopg.Connection, ids: list[int]) -> dict[int, StoredPassage]:
    return {int(r[0]): _row(r) for r in conn.execute(HYDRATE_SQL, (ids,)).fetchall()}


def current_of_document(conn: psycopg.Connection, doc_key: str) -> list[StoredPassage]:
    """Every passage of the current release of one document (leaf rows and superseded ones included)."""
    return [_row(r) for r in conn.execute(CURRENT_OF_DOCUMENT_SQL, (doc_key,)).fetchall()]
