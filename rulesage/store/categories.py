"""The category leg's reads: one game's classifier texts scored against the question, and one category's
passages ranked by the question's vector (exact: a category selects tens to hundreds of passages)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rulesage.core.categories import labels

SCORES_SQL = """
SELECT c.name, 1 - (t.embedding <=> %(v)s)
FROM category_texts t JOIN categories c ON c.id = t.category_id
WHERE c.game_id = %(game)s
"""

CATEGORY_SQL = """
SELECT id, sections, rules FROM categories WHERE game_id = %(game)s AND name = %(name)s
"""

PASSAGES_SQL = """
SELECT p.id, 1 - (p.embedding <=> %(v)s) AS score
FROM category_passages cp JOIN live_passages p ON p.id = cp.passage_id
WHERE cp.category_id = %(category)s AND p.embedding IS NOT NULL
ORDER BY p.embedding <=> %(v)s, p.id
LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Mapped:
    category_id: int
    sections: list[str]


async def text_scores(conn: Any, game_id: int, vector: np.ndarray) -> list[tuple[str, float]]:
    """(category, cosine) for every description and example of the game's map; [] when it has none."""
    cur = await conn.execute(SCORES_SQL, {"v": vector, "game": game_id})
    return [(str(r[0]), float(r[1])) for r in await cur.fetchall()]


async def category(conn: Any, game_id: int, name: str) -> Mapped | None:
    cur = await conn.execute(CATEGORY_SQL, {"game": game_id, "name": name})
    row = await cur.fetchone()
    if row is None:
        return None
    return Mapped(int(row[0]), labels(row[1], row[2]))


async def passages(conn: Any, category_id: int, vector: np.ndarray, limit: int) -> list[tuple[int, float]]:
    cur = await conn.execute(PASSAGES_SQL, {"v": vector, "category": category_id, "limit": limit})
    return [(int(r[0]), float(r[1])) for r in await cur.fetchall()]
