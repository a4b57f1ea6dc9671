"""What the database-backed services share: a connection pool that survives a Postgres restart, the game
catalog and the question checks. A BadQuestion or a database outage raised by a handler is mapped to its
status by the runner's ErrorInterceptor."""

from __future__ import annotations

import logging
from typing import Any, TypeVar

import grpc

from rulesage import db
from rulesage.catalog import Catalog, Game
from rulesage.config import CommonSettings, load
from rulesage.core.questions import clean_question

log = logging.getLogger(__name__)
T = TypeVar("T")


class DbService:
    """Base for services that read Postgres. Subclasses set ``name`` and ``service_names``."""

    name = "db"
    service_names: tuple[str, ...] = ()
    pool_size = 4

    def __init__(self, settings: CommonSettings | None = None) -> None:
        self.settings = settings or load(CommonSettings)
        self.url = self.settings.database_url or db.database_url(start_embedded=False)
        self.pool = db.async_pool(self.url, min_size=1, max_size=self.pool_size)
        self.catalog = Catalog(self.pool)

    async def start(self) -> None:
        await self.pool.open(wait=True, timeout=30)

    async def stop(self) -> None:
        await self.pool.close()

    def question(self, raw: str) -> str:
        return clean_question(raw, self.settings.rulesage_max_question_chars)

    async def game(self, slug: str) -> Game:
        return await self.catalog.game(slug)

    async def vector_search(self, request: Any, context: Any) -> Game:
        """What every arm that reads the question's vectors checks first (an ``ArmRequest``): the question,
        the game, and that the vectors came (INVALID_ARGUMENT otherwise)."""
        self.question(request.question)
        game = await self.game(request.game)
        if not request.vectors:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"{self.name}.Search needs the question's vectors"
            )
        return game


def book_words(vectors: Any) -> Any:
    """Of the question's vectors (``rulesage.v1.Vector``), the one in the book's own words: the canonical lane
    when an alias matched, else the one lane."""
    lanes = {v.lane: v for v in vectors}
    return lanes.get("dense.canonical") or vectors[0]


def vector_of(values: Any) -> Any:
    import numpy as np

    return np.asarray(list(values), dtype=np.float32)
