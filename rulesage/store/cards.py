"""Reading a game's card table (rulesage.ingest.cards writes it): the names the matcher reads, the cards a
question named with their rulings, and the name search behind the page's autocomplete."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rulesage.core.cards import CardName, name_key

NAMES_SQL = "SELECT key, card_id, kind, plain FROM card_names WHERE game_id = %s"
CARDS_SQL = """
SELECT c.id, c.name, c.type_line, c.mana_cost, c.oracle, c.pt, c.loyalty, c.other_face,
       coalesce(array_agg(r.text ORDER BY r.ord) FILTER (WHERE r.text IS NOT NULL), '{}')
FROM cards c LEFT JOIN card_rulings r ON r.card_id = c.id
WHERE c.id = ANY(%s)
GROUP BY c.id
"""
# Names that start with what was typed first, then the nearest by trigram similarity (the name_key index
# serves both: `%` uses it, and LIKE on a prefix does too).
SEARCH_SQL = """
SELECT id, name, type_line, mana_cost, similarity(name_key, %(q)s) AS sim, name_key LIKE %(prefix)s AS starts
FROM cards
WHERE game_id = %(game)s AND (name_key LIKE %(prefix)s OR name_key %% %(q)s)
ORDER BY starts DESC, sim DESC, length(name), name
LIMIT %(limit)s
"""
TABLE_SQL = "SELECT cards, sha256 FROM card_tables WHERE game_id = %s"


@dataclass(frozen=True)
class StoredCard:
    id: int
    name: str
    type_line: str
    mana_cost: str
    oracle: str
    pt: str
    loyalty: str
    other_face: str
    rulings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CardHit:
    id: int
    name: str
    type_line: str
    mana_cost: str
    similarity: float


def _names(rows: list[Any]) -> list[CardName]:
    return [CardName(r[0], int(r[1]), r[2], bool(r[3])) for r in rows]


def _cards(rows: list[Any]) -> dict[int, StoredCard]:
    return {
        int(r[0]): StoredCard(int(r[0]), r[1], r[2], r[3], r[4], r[5], r[6], r[7], list(r[8])) for r in rows
    }


async def names(conn: Any, game_id: int) -> list[CardName]:
    cur = await conn.execute(NAMES_SQL, (game_id,))
    return _names(await cur.fetchall())


async def cards(conn: Any, ids: list[int]) -> dict[int, StoredCard]:
    if not ids:
        return {}
    cur = await conn.execute(CARDS_SQL, (ids,))
    return _cards(await cur.fetchall())


def names_sync(conn: Any, game_id: int) -> list[CardName]:
    """``names`` over a blocking connection (training reads the table as the matcher does)."""
    return _names(conn.execute(NAMES_SQL, (game_id,)).fetchall())


def cards_sync(conn: Any, ids: list[int]) -> dict[int, StoredCard]:
    """``cards`` over a blocking connection."""
    return _cards(conn.execute(CARDS_SQL, (ids,)).fetchall()) if ids else {}


@dataclass(frozen=True)
class Table:
    cards: int  # how many cards the table holds
    sha256: str  # of what was loaded: a reloaded table has another


async def table(conn: Any, game_id: int) -> Table | None:
    """The game's loaded card table; None when the game has none."""
    cur = await conn.execute(TABLE_SQL, (game_id,))
    row = await cur.fetchone()
    return None if row is None else Table(int(row[0]), row[1])


GAMES_SQL = "SELECT g.slug, g.id FROM card_tables t JOIN games g ON g.id = t.game_id ORDER BY g.slug"


async def games_with_cards(conn: Any) -> list[str]:
    cur = await conn.execute(GAMES_SQL)
    return [r[0] for r in await cur.fetchall()]


def games_with_cards_sync(conn: Any) -> dict[str, int]:
    """Slug -> game id of every game with a loaded card table, over a blocking connection."""
    return {r[0]: int(r[1]) for r in conn.execute(GAMES_SQL).fetchall()}


async def search(conn: Any, game_id: int, typed: str, limit: int = 10) -> list[CardHit]:
    """Cards whose name starts with, or is near, what was typed (best first)."""
    key = name_key(typed)
    if not key:
        return []
    prefix = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    cur = await conn.execute(SEARCH_SQL, {"q": key, "prefix": prefix, "game": game_id, "limit": limit})
    return [CardHit(int(r[0]), r[1], r[2], r[3], round(float(r[4]), 4)) for r in await cur.fetchall()]
