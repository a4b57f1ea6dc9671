"""pgvector search over a family's live passages (or one document's).

An exact top-k: the family filter is served by ``passages_live`` (the aisle's document filter by the
document indexes) and the rows are ranked by cosine distance, so the time follows the family's size, never
the shelf's, and no approximate index can return fewer rows than asked (bench/bench_scale.py: the same
recall and latency at 13k, 100k and 1M passages).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

MAX_LIMIT = 200  # the most rows one arm returns (the road asks 80, BEIR 100)

SQL = """
SELECT id, 1 - (embedding <=> %(v)s) AS score
FROM live_passages
WHERE family_id = %(family)s AND embedding IS NOT NULL
ORDER BY embedding <=> %(v)s, id
LIMIT %(limit)s
"""

# The best ``limit`` of each document, one round trip for all of them (the aisle's ballot).
DOCS_SQL = """
SELECT d.doc, p.id, p.score
FROM unnest(%(docs)s::int[]) AS d(doc)
CROSS JOIN LATERAL (
    SELECT id, 1 - (embedding <=> %(v)s) AS score
    FROM live_passages
    WHERE document_id = d.doc AND embedding IS NOT NULL
    ORDER BY embedding <=> %(v)s, id
    LIMIT %(limit)s
) AS p
"""


@dataclass(frozen=True)
class Hit:
    passage_id: int
    score: float


async def nearest(conn: Any, vector: np.ndarray, family_id: int, limit: int = 80) -> list[Hit]:
    if limit > MAX_LIMIT:
        raise ValueError(f"limit {limit} exceeds {MAX_LIMIT}")
    cur = await conn.execute(SQL, {"v": vector, "family": family_id, "limit": limit})
    return [Hit(int(r[0]), float(r[1])) for r in await cur.fetchall()]


async def nearest_per_document(
    conn: Any, vector: np.ndarray, document_ids: list[int], limit: int = 8
) -> dict[int, list[Hit]]:
    """Each document's ``limit`` nearest live passages (documents with none are absent)."""
    cur = await conn.execute(DOCS_SQL, {"v": vector, "docs": document_ids, "limit": limit})
    out: dict[int, list[Hit]] = {}
    for doc, pid, score in await cur.fetchall():
        out.setdefault(int(doc), []).append(Hit(int(pid), float(score)))
    return out
