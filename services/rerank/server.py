"""The Reranker gRPC service: a thin servicer over the scorer, the guarantees and the deal.

Scoring is CPU-bound, so it runs in a worker thread behind a bounded gate: at most ``concurrency`` requests
score at once and at most ``max_queue`` wait; past that the service sheds load with RESOURCE_EXHAUSTED and
callers fall back to the fused order.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import grpc

from rulesage import telemetry
from rulesage.admission import Gate, Saturated
from rulesage.config import CommonSettings, ConfigError, load
from rulesage.v1 import common_pb2, rerank_pb2, rerank_pb2_grpc
from services.rerank.deal import deal
from services.rerank.guarantees import DEFAULT_KEEP, Candidate, select
from services.rerank.scorer import RuntimeOptions, Scorer, load_scorer


class RerankSettings(CommonSettings):
    # "cuda" uses onnxruntime-gpu's CUDA provider when one is present (CPU otherwise, with a warning).
    rulesage_rerank_device: Literal["cpu", "cuda"] = "cpu"
    # ONNX Runtime intra-op threads; 0 = every core.
    rulesage_rerank_threads: int = 0
    # Path of a reranker ONNX file; "" = the shipped model (or the interim cosine when none is shipped);
    # "interim" = the bi-encoder cosine of the window.
    rulesage_rerank_model: str = ""
    # Word pieces of a window the model reads ([CLS]/[SEP] included); the window is cut head+tail to fit.
    rulesage_rerank_max_tokens: int = 256
    rulesage_rerank_batch: int = 16
    # Requests scoring at once, and requests allowed to wait for a slot before RESOURCE_EXHAUSTED.
    rulesage_rerank_concurrency: int = 1
    rulesage_rerank_max_queue: int = 4
    rulesage_rerank_max_candidates: int = 200


def check(settings: RerankSettings) -> RerankSettings:
    for name, value, low in (
        ("RULESAGE_RERANK_THREADS", settings.rulesage_rerank_threads, 0),
        ("RULESAGE_RERANK_MAX_TOKENS", settings.rulesage_rerank_max_tokens, 16),
        ("RULESAGE_RERANK_BATCH", settings.rulesage_rerank_batch, 1),
        ("RULESAGE_RERANK_CONCURRENCY", settings.rulesage_rerank_concurrency, 1),
        ("RULESAGE_RERANK_MAX_QUEUE", settings.rulesage_rerank_max_queue, 0),
        ("RULESAGE_RERANK_MAX_CANDIDATES", settings.rulesage_rerank_max_candidates, 1),
    ):
        if value < low:
            raise ConfigError(f"bad configuration: {name}={value!r}: expected an integer >= {low}")
    if settings.rulesage_rerank_max_tokens > 512:
        raise ConfigError("bad configuration: RULESAGE_RERANK_MAX_TOKENS: MiniLM reads at most 512 tokens")
    return settings


@dataclass(frozen=True)
class Reading:
    """Scores of every candidate, the kept candidates in dealt order, and the guarantees that fired."""

    scores: list[float]
    dealt: list[int]
    fired: list[str]


def read(
    scorer: Scorer, question: str, game: str, candidates: Sequence[common_pb2.Passage], keep: int
) -> Reading:
    scores = [float(s) for s in scorer.score(question, [c.text for c in candidates])]
    if scorer.prior:  # blend with the election's order (candidates arrive best first)
        scores = [s - scorer.prior * math.log1p(i) for i, s in enumerate(scores)]
    sel = select([Candidate(c.doc_kind, c.game) for c in candidates], scores, game, keep or DEFAULT_KEEP)
    return Reading(scores=scores, dealt=deal(sel.kept), fired=sel.fired)


class RerankServicer(rerank_pb2_grpc.RerankerServicer):
    def __init__(self, scorer: Scorer | None, gate: Gate, settings: RerankSettings) -> None:
        self.scorer = scorer
        self.gate = gate
        self.settings = settings

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
        if not request.question.strip():
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the question is empty")
        if len(request.question) > s.rulesage_max_question_chars:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"question longer than {s.rulesage_max_question_chars} characters",
            )
        if len(request.candidates) > s.rulesage_rerank_max_candidates:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"{len(request.candidates)} candidates; at most {s.rulesage_rerank_max_candidates}",
            )
        timings = telemetry.Timings("rerank")
        t0 = time.perf_counter()
        try:
            async with self.gate.slot():
                timings.add("rerank.queue", (time.perf_counter() - t0) * 1000.0)
                with timings.stage("rerank.score", candidates=len(request.candidates)):
                    reading = await asyncio.to_thread(
                        read, scorer, request.question, request.game, request.candidates, request.keep
                    )
        except Saturated as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, f"reranker saturated: {exc}")
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
        self.settings = check(settings or load(RerankSettings))
        s = self.settings
        self.options = RuntimeOptions(
            device=s.rulesage_rerank_device,
            threads=s.rulesage_rerank_threads,
            max_tokens=s.rulesage_rerank_max_tokens,
            batch=s.rulesage_rerank_batch,
        )
        self.gate = Gate(s.rulesage_rerank_concurrency, s.rulesage_rerank_max_queue)
        # The scorer loads in start(); until then a call is answered UNAVAILABLE (health says NOT_SERVING).
        self.servicer = RerankServicer(None, self.gate, s)
        self._scorer = scorer

    @property
    def scorer(self) -> Scorer | None:
        return self.servicer.scorer

    def register(self, server: grpc.aio.Server) -> None:
        rerank_pb2_grpc.add_RerankerServicer_to_server(self.servicer, server)

    async def start(self) -> None:
        scorer = self._scorer or await asyncio.to_thread(
            load_scorer, self.options, self.settings.rulesage_rerank_model
        )
        await asyncio.to_thread(scorer.score, "warm up", ["warm up the session"])
        self.servicer.scorer = scorer

    async def stop(self) -> None:
        return None
