"""The scale shelf (bench/scale_shelf.py) against a real Postgres holding the mini shelf: it adds synthetic
families that look like the real ones to BM25 and to the vectors, changes no real family's arm results, and
removes exactly what it added."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector, register_vector_async

from rulesage.embed import shared_embedder
from rulesage.store import vectors
from services.lexical import bm25

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ("how many actions does a player get on their turn?", "what happens when the deck runs out?")


def load_tool() -> Any:
    spec = importlib.util.spec_from_file_location("scale_shelf", ROOT / "bench" / "scale_shelf.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["scale_shelf"] = module
    spec.loader.exec_module(module)
    return module


def real_rows(url: str) -> dict[str, int]:
    tables = ("families", "games", "documents", "passages", "postings", "sentence_vectors", "window_states")
    with psycopg.connect(url) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}  # type: ignore[index]


def arm_results(url: str) -> list[Any]:
    """The lexical and dense arms' top 20 for each question, over every real family."""
    embedder = shared_embedder()

    async def go() -> list[Any]:
        out: list[Any] = []
        async with await psycopg.AsyncConnection.connect(url) as conn:
            await register_vector_async(conn)
            cur = await conn.execute("SELECT id FROM families WHERE slug NOT LIKE 'scale-%' ORDER BY id")
            families = [int(r[0]) for r in await cur.fetchall()]
            for q in QUESTIONS:
                vec = embedder.embed_queries([q])[0]
                for f in families:
                    for hits in (
                        await bm25.search(conn, q, f, limit=20),
                        await vectors.nearest(conn, vec, f, limit=20),
                    ):
                        # the same passages in the same order with the same scores; a new plan may sum a
                        # passage's BM25 terms in another order, which moves the last bits of a float
                        rounded = [(h.passage_id, round(h.score, 9)) for h in hits]
                        out.append(sorted(rounded, key=lambda r: (-r[1], r[0])))
        return out

    return asyncio.run(go())


def test_scale_shelf_adds_distractors_that_change_no_real_result(shelf_url: str) -> None:
    tool = load_tool()
    before_rows, before_arms = real_rows(shelf_url), arm_results(shelf_url)
    start = tool.status(shelf_url)["live_passages"]
    try:
        grown = tool.add(shelf_url, start * 3, progress=False)
        assert grown["live_passages"] >= start * 3 and grown["added_families"] >= 2
        with psycopg.connect(shelf_url) as conn:
            register_vector(conn)
            # each synthetic passage keeps its template's words (shuffled), postings and length, and a vector
            # near the template's
            pairs = conn.execute(
                "SELECT np.text, op.text, np.doc_len = op.doc_len, np.embedding, op.embedding,"
                " (SELECT array_agg((lexeme, tf)::text ORDER BY lexeme) FROM postings"
                "  WHERE passage_id = np.id) IS NOT DISTINCT FROM"
                " (SELECT array_agg((lexeme, tf)::text ORDER BY lexeme) FROM postings"
                "  WHERE passage_id = op.id)"
                " FROM scale_shelf s JOIN documents nd ON nd.family_id = s.family_id"
                " JOIN documents od ON od.family_id = s.template_id AND nd.key = split_part(nd.key, '/', 1)"
                " || '/' || od.key"
                " JOIN live_passages np ON np.document_id = nd.id JOIN live_passages op"
                " ON op.document_id = od.id AND op.ord = np.ord"
            ).fetchall()
            assert len(pairs) == grown["added_passages"]
            for new, old, same_len, nv, ov, same_postings in pairs:
                assert Counter(new.split()) == Counter(old.split()) and same_len and same_postings
                if ov is not None:
                    cos = float(np.dot(nv.to_numpy(), ov.to_numpy()))
                    assert 0.75 < cos < 0.99
            (games,) = conn.execute(  # type: ignore[misc]
                "SELECT count(DISTINCT game_id) FROM documents d"
                " JOIN scale_shelf s ON s.family_id = d.family_id"
                " WHERE d.game_id IS NOT NULL"
            ).fetchone()
            assert games <= grown["added_families"]
        # the distractors are other families: no real family's arm results move
        assert arm_results(shelf_url) == before_arms
    finally:
        removed = tool.remove(shelf_url)
    assert removed["live_passages"] == start
    assert real_rows(shelf_url) == before_rows
