"""BM25 inside Postgres.

Every query term is OR-ed (a seven-word question still matches), rarer terms weigh more (Robertson-Sparck
Jones idf, as Lucene computes it), and long passages do not win by length (b). Term frequencies come from the
``postings`` table, derived from each passage's English tsvector at ingest (stems forgiven); document
frequencies, N and the average length are computed over the family's live passages at query time, so they are
never stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Anserini's BEIR settings (k1=0.9, b=0.4): the configuration behind Lucene BM25's published BEIR figures.
K1 = 0.9
B = 0.4

SQL = """
WITH q AS (
    SELECT DISTINCT lexeme FROM unnest(tsvector_to_array(to_tsvector('english', %(q)s))) AS t(lexeme)
),
live AS (
    SELECT id, doc_len FROM live_passages WHERE family_id = %(family)s
),
stats AS MATERIALIZED (SELECT count(*)::float8 AS n, greatest(avg(doc_len), 1)::float8 AS avgdl FROM live),
df AS (
    SELECT po.lexeme, count(*)::float8 AS df
    FROM postings po JOIN q USING (lexeme) JOIN live l ON l.id = po.passage_id
    WHERE po.family_id = %(family)s
    GROUP BY po.lexeme
)
SELECT po.passage_id,
       sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5))
           * po.tf * (%(k1)s + 1) / (po.tf + %(k1)s * (1 - %(b)s + %(b)s * l.doc_len / s.avgdl))) AS score
FROM postings po
JOIN df USING (lexeme)
JOIN live l ON l.id = po.passage_id
CROSS JOIN stats s
WHERE po.family_id = %(family)s
GROUP BY po.passage_id
ORDER BY score DESC, po.passage_id
LIMIT %(limit)s
"""


@dataclass(frozen=True)
class Hit:
    passage_id: int
    score: float


async def search(conn: Any, question: str, family_id: int, limit: int = 80) -> list[Hit]:
    cur = await conn.execute(SQL, {"q": question, "family": family_id, "limit": limit, "k1": K1, "b": B})
    return [Hit(int(r[0]), float(r[1])) for r in await cur.fetchall()]
