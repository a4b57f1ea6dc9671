"""The Reranker gRPC service: a thin servicer over the scorer, the guarantees and the deal.

Windows' encoder states are read from the database where ingest drew them (states.py); only missing ones
are encoded here. Scoring is CPU-bound, so it runs in a worker thread behind a bounded gate: at most
``concurrency`` requests score at once and at most ``max_queue`` wait; past that the service sheds load with
RESOURCE_EXHAUSTED and callers fall back to the fused order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
import numpy as np

from rulesage import db, telemetry
from rulesage.admission import Gate, Saturated
from rulesage.config import load
from rulesage.core.deal import KEEP, deal
from rulesage.core.questions import clean_question
from rulesage.v1 import common_pb2, rerank_pb2, rerank_pb2_grpc
from services.rerank import states
from services.rerank.blend import BlendScorer
from services.rerank.choice import load_scorer
from services.rerank.guarantees import Candidate, select
from services.rerank.scorer import RuntimeOptions, Scorer, TrainedScorer, with_prior
from services.rerank.settings import RerankSettings
from services.rerank.window import reader_text

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reading:
    """Scores of every candidate, the kept candidates in dealt order, and the guarantees that fired;
    ``drawn``: window states encoded for this call (candidate index -> states), to be stored."""

    scores: list[float]
    dealt: list[int]
    fired: list[str]
    drawn: dict[int, np.ndarray] = field(default_factory=dict)


def _head_scores(
    head: TrainedScorer, question: str, texts: list[str], stored: Sequence[np.ndarray | None] | None
) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """The head's raw scores, from the stored window states where they are usable (the rest encoded and
    returned, to be stored)."""
    windows, drawn = head.fill_states(texts, stored)
    return head.score_and_cosine(question, texts, windows)[0], drawn


def _headed(candidates: Sequence[common_pb2.Passage]) -> list[str]:
    return [reader_text(c.heading_path, c.text) for c in candidates]


def read(
    scorer: Scorer,
    question: str,
    game: str,
    candidates: Sequence[common_pb2.Passage],
    keep: int,
    stored: Sequence[np.ndarray | None] | None = None,
) -> Reading:
    """Score, blend with the fused order, apply the guarantees and deal. ``stored``: the candidates' window
    states read from the database (None where missing); a scorer that reads states encodes the rest."""
    windows = [c.text for c in candidates]
    drawn: dict[int, np.ndarray] = {}
    if isinstance(scorer, BlendScorer):  # each model reads what it was trained on
        head_raw, drawn = _head_scores(scorer.head, question, windows, stored)
        served = scorer.combine(head_raw, scorer.reader.score(question, _headed(candidates)))
    else:
        texts = _headed(candidates) if scorer.reads_headings else windows
        if isinstance(scorer, TrainedScorer):
            raw, drawn = _head_scores(scorer, question, texts, stored)
        else:
            raw = scorer.score(question, texts)
        served = with_prior(raw, scorer.prior)  # blend with the election's order
    scores = [float(s) for s in served]
    sel = select([Candidate(c.doc_kind, c.game) for c in candidates], scores, game, keep or KEEP)
    return Reading(scores=scores, dealt=deal(sel.kept), fired=sel.fired, drawn=drawn)


class StateStore:
    """The window states table, read with a deadline and written back in the background; a database that
    is down or slow only means the windows are encoded here (slower), never a failed rerank."""

    def __init__(self, pool: Any, timeout_s: float) -> None:
        self.pool = pool
        self.timeout_s = timeout_s
        self._writes: set[asyncio.Task[None]] = set()

    async def read(self, key: str, candidates: Sequence[common_pb2.Passage]) -> list[np.ndarray | None]:
        async def go() -> dict[int, states.Stored]:
            async with self.pool.connection() as conn:
                return await states.fetch(conn, [c.id for c in candidates])

        try:
            rows = await asyncio.wait_for(go(), self.timeout_s)
        except Exception as exc:  # down, slow, or not migrated: encode instead
            log.warning("window states unavailable (%s): encoding the windows", type(exc).__name__)
            return [None] * len(candidates)
        return [states.usable(rows.get(c.id), key, c.text) for c in candidates]

    def write_back(self, key: str, items: list[tuple[int, str, np.ndarray]]) -> None:
        if not items or len(self._writes) > 8:  # a backlog of writes is dropped, not queued without bound
            return

        async def go() -> None:
            try:
                async with self.pool.connection() as conn:
                    await states.save(conn, key, items)
            except Exception as exc:
                log.info("window states not stored (%s)", type(exc).__name__)

        task = asyncio.create_task(go())
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)


class RerankServicer(rerank_pb2_grpc.RerankerServicer):
    def __init__(self, scorer: Scorer | None, gate: Gate, settings: RerankSettings) -> None:
        self.scorer = scorer
        self.gate = gate
        self.settings = settings
        self.store: StateStore | None = None

    async def Rerank(
        self, request: rerank_pb2.RerankRequest, context: grpc.aio.ServicerContext
    ) -> rerank_pb2.RerankResult:
        s = self.settings
        scorer = self.scorer
        if scorer is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "reranker model still loading")
        assert scorer is not None
        if request.keep < 0:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "keep must be >= 0 (0 means 8)")
        # the one question check (a BadQuestion is INVALID_ARGUMENT, by the runner's interceptor)
        question = clean_question(request.question, s.rulesage_max_question_chars)
        if len(request.candidates) > s.rulesage_rerank_max_candidates:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{len(request.candidates)} candidates; at most {s.rulesage_rerank_max_candidates}",
            )
        timings = telemetry.Timings("rerank")
        t0 = time.perf_counter()
        key = scorer.states_key if isinstance(scorer, TrainedScorer | BlendScorer) else ""
        try:
            async with self.gate.slot():
                timings.add("rerank.queue", (time.perf_counter() - t0) * 1000.0)
                stored: list[np.ndarray | None] | None = None
                if self.store is not None and key and request.candidates:
                    with timings.stage("rerank.states", candidates=len(request.candidates)) as span:
                        stored = await self.store.read(key, request.candidates)
                        span.set_attribute("states.stored", sum(st is not None for st in stored))
                with timings.stage("rerank.score", candidates=len(request.candidates)):
                    reading = await asyncio.to_thread(
                        read, scorer, question, request.game, request.candidates, request.keep, stored
                    )
        except Saturated as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"reranker saturated: {exc}")
        if self.store is not None and reading.drawn:
            c = request.candidates
            self.store.write_back(
                key, [(c[i].id, c[i].text, st) for i, st in reading.drawn.items() if c[i].id]
            )
        kept = []
        for i in reading.dealt:
            p = common_pb2.Passage()
            p.CopyFrom(request.candidates[i])
            p.rerank_score = reading.scores[i]
            p.has_rerank_score = True
            kept.append(p)
        timings.add("rerank.rerank", (time.perf_counter() - t0) * 1000.0)
        return rerank_pb2.RerankResult(
            passages=kept,
            scores=reading.scores,
            guarantees_fired=reading.fired,
            model=scorer.identity,
            timings=timings.proto(),
        )


class RerankService:
    name = "rerank"
    service_names: Sequence[str] = (rerank_pb2.DESCRIPTOR.services_by_name["Reranker"].full_name,)

    def __init__(self, settings: RerankSettings | None = None, scorer: Scorer | None = None) -> None:
        self.settings = settings or load(RerankSettings)
        s = self.settings
        self.options = RuntimeOptions(
            device=s.rulesage_rerank_device,
            threads=s.rulesage_rerank_threads,
            max_tokens=s.rulesage_rerank_max_tokens,
            batch=s.rulesage_rerank_batch,
            question_tokens=s.rulesage_rerank_question_tokens,
            asked_weight=s.rulesage_rerank_asked_weight,
        )
        self.gate = Gate(s.rulesage_rerank_concurrency, s.rulesage_rerank_max_queue)
        # The scorer loads in start(); until then a call is answered UNAVAILABLE (health says NOT_SERVING).
        self.servicer = RerankServicer(None, self.gate, s)
        self._scorer = scorer
        self.pool: Any = None
        if s.rulesage_rerank_stored_states:
            url = s.database_url or db.database_url(start_embedded=False)
            self.pool = db.async_pool(url, min_size=1, max_size=2)

    @property
    def scorer(self) -> Scorer | None:
        return self.servicer.scorer

    def register(self, server: grpc.aio.Server) -> None:
        rerank_pb2_grpc.add_RerankerServicer_to_server(self.servicer, server)

    async def start(self) -> None:
        scorer = self._scorer
        if scorer is None:
            scorer = await asyncio.to_thread(load_scorer, self.options, self.settings.rulesage_rerank_model)
        await asyncio.to_thread(scorer.score, "warm up", ["warm up the session"])
        if self.pool is not None:
            await self.pool.open(wait=False)  # Postgres may come later: until then windows are encoded
            self.servicer.store = StateStore(self.pool, self.settings.rulesage_rerank_states_timeout_s)
        self.servicer.scorer = scorer

    async def stop(self) -> None:
        if self.pool is not None:
            await self.pool.close()
