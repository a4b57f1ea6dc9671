"""The answer service reads the shown passages' stored embeddings from a real Postgres (a really ingested
mini shelf) and they stand in exactly for embedding the passages again."""

from __future__ import annotations

import asyncio
import dataclasses

import numpy as np
import psycopg
import pytest

from rulesage.db import async_pool
from services.answer.backends.extractive import BiEncoderScorer
from services.answer.citations import ShownPassage
from services.answer.context import PgLibrary, with_vectors

pytestmark = pytest.mark.integration


def test_stored_vectors_are_read_and_match_embedding_again(shelf_url: str) -> None:
    """The passage vectors the answer reads are its own encoder's (RULESAGE_ANSWER_ENCODER, drawn beside the
    sentence vectors), whichever encoder search reads: comparing them with the question is exact."""
    from services.answer import sentence_index

    sentence_index.draw_missing(shelf_url)
    with psycopg.connect(shelf_url) as conn:
        rows = conn.execute(
            "SELECT id, text, heading_path FROM passages WHERE searchable AND embedding IS NOT NULL"
            " ORDER BY id LIMIT 6"
        ).fetchall()
    views = [ShownPassage(int(r[0]), r[1], heading_path=tuple(r[2])) for r in rows]
    assert len(views) == 6

    async def read() -> dict[int, tuple]:  # type: ignore[type-arg]
        pool = async_pool(shelf_url, min_size=1, max_size=1)
        await pool.open(wait=True)
        try:
            return await PgLibrary(pool).vectors([v.id for v in views] + [0, 10**12])
        finally:
            await pool.close()

    found = asyncio.run(read())
    assert set(found) == {v.id for v in views}  # unknown ids are simply absent
    scorer = BiEncoderScorer()
    for vec, model, *_ in found.values():
        assert vec.dtype == np.float32 and vec.shape == (384,)
        assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-3
        assert model == scorer.model
    stored = [dataclasses.replace(v, vector=found[v.id][0], vector_model=found[v.id][1]) for v in views]
    q = "how many actions do I get on my turn?"
    assert scorer.score_passages(q, stored) == pytest.approx(scorer.score_passages(q, views), abs=1e-4)


def test_ingest_draws_sentence_vectors_that_the_answer_reads(shelf_url: str) -> None:
    from services.answer import sentence_index
    from services.answer.backends.extractive import sentence_inputs

    first = sentence_index.draw_missing(shelf_url)
    assert sentence_index.draw_missing(shelf_url) == 0  # nothing left to draw
    with psycopg.connect(shelf_url) as conn:
        (live,) = conn.execute("SELECT count(*) FROM live_passages").fetchone()  # type: ignore[misc]
        (rows,) = conn.execute("SELECT count(*) FROM sentence_vectors").fetchone()  # type: ignore[misc]
        picked = conn.execute(
            "SELECT id, text, heading_path FROM passages WHERE searchable ORDER BY id LIMIT 5"
        ).fetchall()
    assert rows >= live and first <= live
    views = [ShownPassage(int(r[0]), r[1], heading_path=tuple(r[2])) for r in picked]

    async def read() -> dict[int, tuple]:  # type: ignore[type-arg]
        pool = async_pool(shelf_url, min_size=1, max_size=1)
        await pool.open(wait=True)
        try:
            return await PgLibrary(pool).vectors([v.id for v in views])
        finally:
            await pool.close()

    found = asyncio.run(read())
    attached = with_vectors(views, found)
    scorer = BiEncoderScorer()
    assert all(v.sentence_vectors is not None and v.sentence_vectors[0] == scorer.model for v in attached)
    q = "what happens at the end of a round?"
    per_stored = [(v, sentence_inputs(v)) for v in attached]
    per_fresh = [(v, sentence_inputs(v)) for v in views]
    assert scorer.score_sentences(q, per_stored) == pytest.approx(
        scorer.score_sentences(q, per_fresh), abs=2e-3
    )
