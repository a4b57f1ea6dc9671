"""Candidate pools from the database: a stand-in for the fusion service used to mine hard negatives and to
measure the reranker (Postgres full-text + exact dense cosine over one family, fused by RRF k=60).

This is *not* the production fusion (no alias lanes, no aisle arm): a two-arm election that runs without
the mesh, and every measurement made with it says so.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg

from rulesage.core import rrf as core_rrf


@dataclass(frozen=True)
class Passage:
    id: int
    doc_key: str
    doc_kind: str
    game: str  # owning game slug; '' for a family document
    text: str
    page_start: int
    page_end: int
    heading_path: tuple[str, ...]
    rule_id: str = ""  # numbered rulebooks: the rule this row prints ("702.19")


class FamilyIndex:
    """Every live, searchable passage of one family, with its vector, held in memory."""

    def __init__(self, conn: psycopg.Connection, family_id: int) -> None:
        rows = conn.execute(
            "SELECT p.id, d.key, d.kind, coalesce(g.slug, ''), p.text, coalesce(p.page_start, 0),"
            " coalesce(p.page_end, 0), p.heading_path, p.embedding, coalesce(p.rule_id, '')"
            " FROM live_passages p JOIN documents d ON d.id = p.document_id"
            " LEFT JOIN games g ON g.id = d.game_id"
            " WHERE p.family_id = %s AND p.embedding IS NOT NULL ORDER BY p.id",
            (family_id,),
        ).fetchall()
        self.family_id = family_id
        self.passages = [
            Passage(r[0], r[1], r[2], r[3], r[4], r[5], r[6], tuple(r[7] or ()), r[9]) for r in rows
        ]
        self.position = {p.id: i for i, p in enumerate(self.passages)}
        self.vectors = (
            np.stack([np.asarray(r[8].to_numpy(), dtype=np.float32) for r in rows])
            if rows
            else np.zeros((0, 384), dtype=np.float32)
        )

    def __len__(self) -> int:
        return len(self.passages)

    def dense(self, qvec: np.ndarray, k: int) -> list[int]:
        """Exact cosine (vectors are unit length), best first: positions in ``passages``."""
        if not len(self):
            return []
        sims = self.vectors @ qvec
        top = np.argpartition(-sims, min(k, len(sims) - 1))[:k]
        return [int(i) for i in sorted(top, key=lambda i: (-sims[i], i))]

    def lexical(self, conn: psycopg.Connection, question: str, k: int) -> list[int]:
        """Postgres full-text, any of the question's lexemes (OR), ranked by ts_rank_cd."""
        rows = conn.execute(
            "WITH q AS (SELECT nullif(replace(plainto_tsquery('english', %s)::text, ' & ', ' | '), '')"
            "::tsquery AS q)"
            " SELECT p.id FROM live_passages p, q WHERE q.q IS NOT NULL AND p.family_id = %s"
            " AND p.tsv @@ q.q ORDER BY ts_rank_cd(p.tsv, q.q) DESC, p.id LIMIT %s",
            (question, self.family_id, k),
        ).fetchall()
        return [self.position[r[0]] for r in rows if r[0] in self.position]

    def fused(
        self, conn: psycopg.Connection, question: str, qvec: np.ndarray, k: int = 80, depth: int = 80
    ) -> list[int]:
        """RRF (k=60) of the lexical and dense lists (each ``depth`` deep), cut to the top ``k``."""
        return rrf([self.lexical(conn, question, depth), self.dense(qvec, depth)])[:k]


def rrf(lists: Sequence[Sequence[int]], k: int = core_rrf.K) -> list[int]:
    fused = core_rrf.fuse({str(i): ranked for i, ranked in enumerate(lists)}, k, limit=sys.maxsize)
    return [f.passage_id for f in fused]


def family_of(conn: psycopg.Connection, game: str) -> int | None:
    row = conn.execute("SELECT family_id FROM games WHERE slug = %s", (game,)).fetchone()
    return int(row[0]) if row else None
