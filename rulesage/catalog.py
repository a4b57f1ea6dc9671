"""The shelf as services see it: game slug -> ids, cached, refreshed on a miss (new games appear)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rulesage.core.questions import BadQuestion, check_slug


@dataclass(frozen=True)
class Game:
    id: int
    slug: str
    name: str
    family_id: int
    documents: int  # live documents owned by the game itself (its aisle)


class Catalog:
    def __init__(self, pool: Any, ttl_s: float = 60.0) -> None:
        self.pool = pool
        self.ttl_s = ttl_s
        self._games: dict[str, Game] = {}
        self._loaded = 0.0

    async def _load(self) -> None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT g.id, g.slug, g.name, g.family_id,"
                " (SELECT count(*) FROM documents d WHERE d.game_id = g.id) FROM games g"
            )
            rows = await cur.fetchall()
        self._games = {r[1]: Game(r[0], r[1], r[2], r[3], r[4]) for r in rows}
        self._loaded = time.monotonic()

    async def game(self, slug: str) -> Game:
        """The game, or BadQuestion naming the unknown slug."""
        slug = check_slug(slug)
        if slug not in self._games or time.monotonic() - self._loaded > self.ttl_s:
            await self._load()
        game = self._games.get(slug)
        if game is None:
            raise BadQuestion(f"unknown game {slug!r}: it is not on the shelf")
        return game
