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

# The nearest ``limit`` live passages of the family to each of the named cards' rulings, one round trip: the
# ingest drew each ruling's nearest passages (card_rulings.near, best first), so nothing is scanned here; a
# passage retired since is dropped. At most ``most`` rulings are read, dealt a card at a time (each card's
# first ruling, then each one's second, ...): the first card's long list does not crowd out the next.
RULINGS_SQL = """
WITH r AS (
    SELECT r.card_id, r.ord, r.near,
           row_number() OVER (PARTITION BY r.card_id ORDER BY r.ord) AS turn,
           array_position(%(cards)s::bigint[], r.card_id) AS card_rank
    FROM card_rulings r
    WHERE r.card_id = ANY(%(cards)s::bigint[]) AND r.near IS NOT NULL
    ORDER BY turn, card_rank
    LIMIT %(most)s
)
SELECT r.card_id, r.ord, n.id
FROM r CROSS JOIN LATERAL unnest(r.near[1:%(limit)s]) WITH ORDINALITY AS n(id, k)
JOIN live_passages p ON p.id = n.id AND p.family_id = %(family)s
ORDER BY r.turn, r.card_rank, n.k
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


async def nearest_to_rulings(
    conn: Any, card_ids: list[int], family_id: int, most: int, limit: int
) -> dict[tuple[int, int], list[int]]:
    """Each read ruling's (card id, ord) nearest ``limit`` live passage ids, best first, in the order the
    rulings were dealt (RULINGS_SQL); rulings whose neighbours were not drawn are not read."""
    if not card_ids or most <= 0 or limit <= 0:
        return {}
    cur = await conn.execute(
        RULINGS_SQL, {"cards": card_ids, "family": family_id, "most": most, "limit": limit}
    )
    out: dict[tuple[int, int], list[int]] = {}
    for card, ord_, pid in await cur.fetchall():
        out.setdefault((int(card), int(ord_)), []).append(int(pid))
    return out
