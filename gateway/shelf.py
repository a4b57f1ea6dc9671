"""The shelf: games and their books, read from the games/documents tables (SQL through parameters only)."""

from __future__ import annotations

from typing import Any

from rulesage.store import cards as card_store


def like_pattern(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere, with the user's own % and _ taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


_BOOKS = "(d.game_id = g.id OR (d.game_id IS NULL AND d.family_id = g.family_id))"


async def games(conn: Any, q: str = "", family: str = "", limit: int = 500) -> list[dict[str, Any]]:
    q = q.strip()
    pattern = like_pattern(q)
    cur = await conn.execute(
        "SELECT g.slug, g.name, f.slug,"
        f" (SELECT count(*) FROM documents d WHERE {_BOOKS}),"
        " (SELECT count(*) FROM rulings r WHERE r.game_id = g.id AND r.public_state = 'cleared')"
        " FROM games g JOIN families f ON f.id = g.family_id"
        " WHERE (%s = '' OR g.name ILIKE %s OR g.slug ILIKE %s OR f.slug ILIKE %s)"
        " AND (%s = '' OR f.slug = %s)"
        " ORDER BY (%s <> '' AND g.name ILIKE %s) DESC, lower(g.name) LIMIT %s",
        (q, pattern, pattern, pattern, family, family, q, like_pattern(q)[1:], limit),
    )
    return [
        {"slug": r[0], "name": r[1], "family": r[2], "books": int(r[3]), "rulings": int(r[4])}
        for r in await cur.fetchall()
    ]


async def families(conn: Any) -> list[dict[str, Any]]:
    cur = await conn.execute(
        "SELECT f.slug, count(g.id) FROM families f JOIN games g ON g.family_id = f.id"
        " GROUP BY f.slug ORDER BY f.slug"
    )
    return [{"slug": r[0], "games": int(r[1])} for r in await cur.fetchall()]


async def game(conn: Any, slug: str) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT g.id, g.slug, g.name, f.slug FROM games g JOIN families f ON f.id = g.family_id"
        " WHERE g.slug = %s",
        (slug,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    cur = await conn.execute(
        "SELECT d.key, d.title, d.kind, d.version, d.pages FROM documents d, games g"
        f" WHERE g.id = %s AND {_BOOKS} ORDER BY (d.kind = 'rulebook') DESC, d.kind, d.title",
        (row[0],),
    )
    books = [
        {"key": b[0], "title": b[1], "kind": b[2], "version": b[3], "pages": int(b[4])}
        for b in await cur.fetchall()
    ]
    table = await card_store.table(conn, row[0])
    return {
        "id": row[0],
        "slug": row[1],
        "name": row[2],
        "family": row[3],
        "books": books,
        "cards": table.cards if table else 0,  # the game's card table's size; 0: it has none
    }
