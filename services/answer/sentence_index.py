"""The extractive answer's index-time half: every live passage's sentence vectors, drawn once at ingest.

Answering used to embed every sentence of the eight shown passages per ask (~40 sentences: most of the
answer's cost). The sentences of a passage, and the text each is scored on (its nearest heading, then the
sentence: ``extractive.sentence_inputs``), depend on the passage alone, so they are drawn at ingest like the
passage's own embedding and the reranker's window states. Stored per passage: the spans and one float16
vector per sentence and the passage's own vector, drawn by the answer's encoder (RULESAGE_ANSWER_ENCODER),
stamped with the model and the sha256 of the text. A passage whose row is missing,
stale, or whose spans differ from what the splitter gives now is embedded at answer time, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rulesage.indexing import text_sha
from services.answer.backends.extractive import sentence_inputs
from services.answer.citations import ShownPassage

log = logging.getLogger(__name__)
DIM = 384

MISSING_SQL = """
SELECT p.id, p.text, p.heading_path FROM ruled_passages p
LEFT JOIN sentence_vectors v ON v.passage_id = p.id
WHERE v.passage_id IS NULL OR v.model <> %s OR v.passage_vec IS NULL
ORDER BY p.id
"""
COUNT_MISSING_SQL = f"SELECT count(*) FROM ({MISSING_SQL}) AS m"
SAVE_SQL = """
INSERT INTO sentence_vectors (passage_id, model, text_sha, spans, vectors, passage_vec)
VALUES (%s, %s, %s, %s, %s, %s::vector)
ON CONFLICT (passage_id) DO UPDATE
SET model = EXCLUDED.model, text_sha = EXCLUDED.text_sha, spans = EXCLUDED.spans, vectors = EXCLUDED.vectors,
    passage_vec = EXCLUDED.passage_vec
"""


def pack(vectors: np.ndarray) -> bytes:
    return np.ascontiguousarray(vectors, dtype=np.float16).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float16).reshape(-1, DIM).astype(np.float32)


def stored(
    row: tuple[str, str, Sequence[int], bytes] | None, text: str
) -> tuple[str, list[tuple[int, int]], Any] | None:
    """A row as the scorer reads it, (model, spans, vectors); None when it was drawn from another text."""
    if row is None:
        return None
    model, sha, flat, blob = row
    if sha != text_sha(text):
        return None
    spans = [(int(flat[i]), int(flat[i + 1])) for i in range(0, len(flat), 2)]
    vectors = unpack(blob)
    return (model, spans, vectors) if len(vectors) == len(spans) else None


def rows_for(embedder: Any, passages: Sequence[tuple[int, str, Sequence[str]]]) -> Iterable[tuple[Any, ...]]:
    """Draw the sentence vectors of (id, text, heading_path) passages, and each passage's own vector (what
    the dense arm embeds: its nearest headings, then its text), with the answer's encoder."""
    from rulesage.ingest.store import embed_text
    from rulesage.rulings import vector_literal

    views = [ShownPassage(pid, text, heading_path=tuple(heads or ())) for pid, text, heads in passages]
    inputs = [sentence_inputs(v) for v in views]
    texts = [t for ins in inputs for _, _, t in ins]
    vectors = embedder.embed_passages(texts, batch=32) if texts else np.zeros((0, DIM), np.float32)
    whole = embedder.embed_passages([embed_text(v.heading_path, v.text) for v in views]) if views else []
    model = embedder.identity.model
    at = 0
    for v, ins, vec in zip(views, inputs, whole, strict=True):
        mine = vectors[at : at + len(ins)]
        at += len(ins)
        flat = [x for s, e, _ in ins for x in (s, e)]
        packed = pack(mine if len(ins) else np.zeros((0, DIM)))
        yield (v.id, model, text_sha(v.text), flat, packed, vector_literal([float(x) for x in vec]))


def draw_missing(url: str, progress: bool = False, batch: int = 64) -> int:
    """After an ingest: draw the sentence vectors the answer's encoder lacks; returns how many passages."""
    import psycopg

    from rulesage.config import load
    from rulesage.embed import identity
    from rulesage.indexing import in_batches
    from services.answer.settings import AnswerSettings, answer_embedder

    model = identity(encoder=load(AnswerSettings).rulesage_answer_encoder or None).model
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(COUNT_MISSING_SQL, (model,)).fetchone()  # type: ignore[arg-type]
        if not row or not row[0]:
            return 0
        embedder = answer_embedder(bulk=True)
        todo = conn.execute(MISSING_SQL, (model,)).fetchall()  # type: ignore[arg-type]

        def write(conn: Any, chunk: Sequence[Any]) -> None:
            with conn.cursor() as cur:
                cur.executemany(SAVE_SQL, list(rows_for(embedder, [(int(r[0]), r[1], r[2]) for r in chunk])))

        in_batches(conn, todo, write, batch, "answer sentence vectors", progress)
    log.info("drew sentence vectors for %d passages", len(todo))
    return len(todo)
