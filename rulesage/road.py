"""The road of one question: fusion (arms + RRF) -> rerank -> answer -> stored ruling with its wrench.

The gateway, the CLI and the eval harness all walk this road. Every stage failure degrades inside the ruling —
the wrench says which stage was missing and why — and only a bad question raises (``BadQuestion``).
The search span (fusion + rerank: everything before the answering model) is timed as one span.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format
from pydantic import Field

from rulesage import db, rulings, runner, telemetry
from rulesage.arms import describe
from rulesage.catalog import Catalog
from rulesage.config import CommonSettings, load
from rulesage.core import rrf
from rulesage.core.deal import KEEP, deal
from rulesage.core.models import (
    AnswerInfo,
    ArmStatus,
    CategoryCall,
    Citation,
    NamedCard,
    PriorRuling,
    PriorsInfo,
    RerankInfo,
    Ruling,
    StageInfo,
    StageState,
    Timing,
    Verdict,
    Wrench,
)
from rulesage.core.questions import BadQuestion, clean_question
from rulesage.passages import to_candidate, to_view
from rulesage.v1 import (
    answer_pb2,
    answer_pb2_grpc,
    common_pb2,
    fusion_pb2,
    fusion_pb2_grpc,
    rerank_pb2,
    rerank_pb2_grpc,
)

__all__ = ["BadQuestion", "Road", "SearchOutcome"]

VERDICTS = {
    answer_pb2.ANSWERED: Verdict.ANSWERED,
    answer_pb2.NOT_IN_BOOK: Verdict.NOT_IN_BOOK,
    answer_pb2.UNAVAILABLE: Verdict.UNAVAILABLE,
}


def _not_looked_up() -> PriorsInfo:
    """An ask that is not stored (an evaluation run) is answered from the book alone."""
    return PriorsInfo(
        state=StageState.SKIPPED,
        detail="not looked up: this ask is not stored (an evaluation run)",
        shown=[],
        max_distance=rulings.PRIOR_MAX_DISTANCE,
    )


class RoadSettings(CommonSettings):
    rulesage_fusion_deadline_s: float = 5.0
    rulesage_rerank_deadline_s: float = 5.0
    rulesage_answer_deadline_s: float = 60.0
    # The prior-rulings lookup is a help: past this it is reported in the wrench and the ask goes on.
    rulesage_priors_deadline_s: float = 1.0
    # The reader scores the fused order's first this many candidates; the rest stay below them in their fused
    # order, unscored (the wrench shows them without a rerank score). Its fused prior (-2 ln(1 + position))
    # already keeps the later ones out of the kept 8: at 24 the two-head reader gives every figure of 48 on
    # the two gold sets, the held-out real posts and real-dev, and its scoring time halves (README, "A
    # real-post development set"; 48 before it, 80 before that).
    rulesage_rerank_candidates: int = Field(24, ge=1, le=200)


def _category(status: fusion_pb2.ArmStatus) -> CategoryCall | None:
    """A classifying arm's call as the wrench keeps it (None for arms that do not classify)."""
    if not status.HasField("category"):
        return None
    c = status.category
    return CategoryCall(
        name=c.name or None,
        best=c.best,
        confidence=round(c.confidence, 4),
        threshold=round(c.threshold, 4),
        sections=list(c.sections),
        runner_up=c.runner_up,
        runner_up_confidence=round(c.runner_up_confidence, 4),
    )


def _arm(a: fusion_pb2.ArmStatus) -> ArmStatus:
    call = _category(a)
    arm = ArmStatus(arm=a.arm, state=_arm_state(a.state), detail=a.detail, hits=a.hits, ms=round(a.ms, 2))
    if call is not None:  # only classifying arms carry the key
        arm.category = call
    return arm


def card_of(c: common_pb2.NamedCard) -> NamedCard:
    """A named card as the wrench keeps it: every field of the contract, empty ones included."""
    fields = json_format.MessageToDict(
        c, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    return NamedCard.validate_write(fields)


def _arm_state(value: int) -> StageState:
    """The contract's StageState enum as the core's state (STAGE_STATE_OK -> OK)."""
    return StageState.from_proto_name(common_pb2.StageState.Name(value))


def _timings(items: Any) -> list[Timing]:
    return [Timing(stage=t.stage, ms=round(t.ms, 2)) for t in items]


@dataclass
class SearchOutcome:
    game: str
    game_name: str
    question: str
    passages: list[common_pb2.Passage] = field(default_factory=list)  # kept, dealt order
    candidates: list[common_pb2.Passage] = field(default_factory=list)  # fused order, with rerank scores
    wrench: Wrench = field(default_factory=Wrench)
    models: dict[str, str] = field(default_factory=dict)
    trace_id: str = ""
    started: float = 0.0
    search_ms: float = 0.0
    timings: list[Timing] = field(default_factory=list)
    deadline: float = 0.0  # time.monotonic() by which the search span must end
    question_vector: list[float] = field(default_factory=list)  # from fusion's embedder; [] when it failed
    cards: list[common_pb2.NamedCard] = field(default_factory=list)  # the cards the question names

    def search_span_ms(self) -> float | None:
        return self.wrench.search_span_ms


class Road:
    """The road of one question. The gateway hands it its own pool and catalog (``pool``, ``catalog``);
    the CLI and the evaluation let it open its own on ``url``."""

    def __init__(self, url: str | None = None, *, pool: Any = None, catalog: Catalog | None = None) -> None:
        self.settings = load(RoadSettings)
        self._owns_pool = pool is None
        if pool is None:
            url = url or self.settings.database_url or db.database_url(start_embedded=False)
            pool = db.async_pool(url, min_size=1, max_size=4)
        self.pool = pool
        self.catalog = catalog or Catalog(self.pool)
        self.channels: dict[str, grpc.aio.Channel] = {}
        self._opened = False
        self._opening = asyncio.Lock()  # the first asks arrive together: open the pool once

    async def open(self) -> None:
        if self._opened:
            return
        async with self._opening:
            if self._opened:
                return
            if self._owns_pool:
                await self.pool.open(wait=True, timeout=30)
            self.channels = {n: runner.channel(n) for n in ("fusion", "rerank", "answer")}
            self._opened = True

    async def close(self) -> None:
        for ch in self.channels.values():
            await ch.close()
        if self._owns_pool:
            await self.pool.close()
        self._opened = False

    # -- the search span ------------------------------------------------------------------------------------
    async def search(self, game: str, question: str, *, deadline_s: float | None = None) -> SearchOutcome:
        """Fusion + rerank. ``deadline_s`` caps the whole search span (each stage keeps its own cap too)."""
        out = await self._outcome(game, question, deadline_s)
        tracer = telemetry.tracer()
        t0 = time.perf_counter()
        with tracer.start_as_current_span("search", attributes={"game": out.game}) as span:
            out.trace_id = telemetry.current_trace_id()
            fused = await self._fuse(out)
            if fused is not None:
                await self._rerank(out, fused)
            span.set_attribute("passages.kept", len(out.passages))
        out.search_ms = (time.perf_counter() - t0) * 1000.0
        out.wrench.search_span_ms = round(out.search_ms, 2)
        out.wrench.trace_id = out.trace_id
        return out

    async def fuse_only(self, game: str, question: str) -> SearchOutcome:
        """The fusion call alone: the fused candidates in order, no rerank (the reader's training pools,
        drawn from the very election an ask runs)."""
        out = await self._outcome(game, question, None)
        await self._fuse(out)
        return out

    async def _outcome(self, game: str, question: str, deadline_s: float | None) -> SearchOutcome:
        """A search's start: the question cleaned (or refused), the game looked up, the deadline set."""
        await self.open()
        question = clean_question(question, self.settings.rulesage_max_question_chars)
        g = await self.catalog.game(game)
        out = SearchOutcome(g.slug, g.name, question, started=time.perf_counter())
        out.deadline = time.monotonic() + (deadline_s or 1e9)  # per ask: concurrent searches never share it
        return out

    @staticmethod
    def _left(out: SearchOutcome, cap: float) -> float:
        return max(0.05, min(cap, out.deadline - time.monotonic()))

    async def _fuse(self, out: SearchOutcome) -> fusion_pb2.FuseResult | None:
        stub = fusion_pb2_grpc.FusionStub(self.channels["fusion"])
        t0 = time.perf_counter()
        w = out.wrench
        try:
            res: fusion_pb2.FuseResult = await stub.Fuse(
                fusion_pb2.FuseRequest(question=out.question, game=out.game),
                timeout=self._left(out, self.settings.rulesage_fusion_deadline_s),
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise BadQuestion(exc.details() or "bad question") from None
            state, detail = describe(exc)
            w.fusion = StageInfo(state=state, detail=detail)
            w.arms, w.voted, w.k, w.ceiling = [], [], rrf.K, 0.0
            w.ceiling_formula = "no list voted"
            w.candidates, w.guarantees_fired = [], []
            w.rerank = RerankInfo(
                state=StageState.SKIPPED, detail="nothing to rerank: fusion is missing", model=""
            )
            return None
        out.timings.append(Timing(stage="road.fuse_call", ms=round((time.perf_counter() - t0) * 1000, 2)))
        out.candidates = list(res.passages)
        out.question_vector = list(res.question_vector)
        out.cards = list(res.cards)
        out.models["embed"] = res.embed_model
        out.timings.extend(_timings(res.timings))
        w.fusion = StageInfo(state=StageState.OK, detail="")
        w.arms = [_arm(a) for a in res.arms]
        w.voted = list(res.voted)
        w.k = res.k
        w.ceiling = res.ceiling
        w.ceiling_formula = rrf.ceiling_formula(len(res.voted), res.k)
        w.aliases = list(res.aliases)
        w.cards = [card_of(c) for c in res.cards]
        return res

    async def _rerank(self, out: SearchOutcome, fused: fusion_pb2.FuseResult) -> None:
        stub = rerank_pb2_grpc.RerankerStub(self.channels["rerank"])
        t0 = time.perf_counter()
        w = out.wrench
        try:
            res: rerank_pb2.RerankResult = await stub.Rerank(
                rerank_pb2.RerankRequest(
                    question=out.question,
                    game=out.game,
                    candidates=fused.passages[: self.settings.rulesage_rerank_candidates],
                    keep=KEEP,
                ),
                timeout=self._left(out, self.settings.rulesage_rerank_deadline_s),
            )
            out.passages = list(res.passages)
            scores = list(res.scores)
            for p, s in zip(out.candidates, scores, strict=False):
                p.rerank_score = s
                p.has_rerank_score = True
            out.models["rerank"] = res.model
            out.timings.extend(_timings(res.timings))
            w.guarantees_fired = list(res.guarantees_fired)
            w.rerank = RerankInfo(state=StageState.OK, detail="", model=res.model)
        except Exception as exc:  # the ask continues with the fused order
            state, detail = describe(exc)
            out.passages = deal(list(fused.passages[:KEEP]))
            w.guarantees_fired = []
            w.rerank = RerankInfo(
                state=state, detail=f"{detail}; kept the fused order's top {KEEP}", model=""
            )
        out.timings.append(Timing(stage="road.rerank_call", ms=round((time.perf_counter() - t0) * 1000, 2)))
        w.candidates = [to_candidate(p) for p in out.candidates]

    # -- the answering model and the stored ruling ----------------------------------------------------------
    async def answer(self, out: SearchOutcome, *, store: bool = True) -> Ruling:
        """Answer from the kept passages and store the ruling (``store=False``: evaluation runs, not kept).
        The ruling is validated as written (every key known, at every depth) before it is stored."""
        await self.open()
        tracer = telemetry.tracer()
        found, priors_info = await self._priors(out) if store else ([], _not_looked_up())
        t0 = time.perf_counter()
        with tracer.start_as_current_span("answer", attributes={"game": out.game}):
            verdict, text, citations, info = await self._answer(out, found)
        answer_ms = (time.perf_counter() - t0) * 1000.0
        wrench = out.wrench.model_copy()
        wrench.answer = info
        wrench.priors = priors_info
        wrench.answer_ms = round(answer_ms, 2)
        wrench.total_ms = round((time.perf_counter() - out.started) * 1000.0, 2)
        wrench.timings = list(out.timings)
        draft = Ruling(
            game=out.game,
            game_name=out.game_name,
            question=out.question,
            answer=text,
            verdict=verdict,
            citations=citations,
            passages=[to_view(p) for p in out.passages],
            cards=list(wrench.cards),
            wrench=wrench,
            models=dict(out.models),
            trace_id=out.trace_id,
        )
        ruling = Ruling.validate_write(draft)  # the one schema: a renamed or unknown key fails here
        asked = [PriorRuling.model_validate(p) for p in found]
        if not store:
            ruling.asked_before = asked
            return ruling
        async with self.pool.connection() as conn:
            rid = await rulings.save(conn, ruling.to_json(), question_vec=out.question_vector)
            stored = await rulings.get(conn, rid)
        if stored is not None:
            ruling = Ruling.model_validate(stored)
        else:
            ruling.id = rid
        ruling.asked_before = asked
        return ruling

    async def _priors(self, out: SearchOutcome) -> tuple[list[dict[str, Any]], PriorsInfo]:
        """Earlier rulings about the same thing (rulesage.rulings.priors), with the wrench's report. A missing
        question vector or a failed or slow lookup gives none and says why; it never fails the ask."""
        limit = rulings.PRIOR_MAX_DISTANCE
        if not out.question_vector:
            detail = "no question vector (the embedder did not answer): no earlier rulings looked up"
            return [], PriorsInfo(state=StageState.SKIPPED, detail=detail, shown=[], max_distance=limit)
        t0 = time.perf_counter()
        try:
            async with asyncio.timeout(self.settings.rulesage_priors_deadline_s):
                async with self.pool.connection() as conn:
                    found = await rulings.priors(
                        conn, out.game, out.question_vector, out.models.get("embed", "")
                    )
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                state = StageState.TIMEOUT
                why = f"no answer within {self.settings.rulesage_priors_deadline_s:g} s"
            else:
                state, why = StageState.FAILED, f"{type(exc).__name__}: {exc}"[:300]
            detail = f"{why}; answered without earlier rulings"
            return [], PriorsInfo(state=state, detail=detail, shown=[], max_distance=limit)
        finally:
            out.timings.append(Timing(stage="road.priors", ms=round((time.perf_counter() - t0) * 1000, 2)))
        detail = f"{len(found)} earlier ruling{'' if len(found) == 1 else 's'} within distance"
        detail += f" {limit:g}"
        info = PriorsInfo(
            state=StageState.OK, detail=detail, shown=[p["id"] for p in found], max_distance=limit
        )
        return found, info

    async def _answer(
        self, out: SearchOutcome, priors: list[dict[str, Any]] | None = None
    ) -> tuple[Verdict, str, list[Citation], AnswerInfo]:
        if not out.passages:
            fusion = out.wrench.fusion
            why = (fusion.detail if fusion else "") or "no passage was found"
            info = AnswerInfo(state=StageState.SKIPPED, detail=why, attempts=0, rejections=[])
            if fusion is not None and fusion.state != StageState.OK:
                text = "The search is unavailable right now; nothing was looked up."
                return Verdict.UNAVAILABLE, text, [], info
            text = "Not in the book: nothing on this game's shelf speaks to that."
            return Verdict.NOT_IN_BOOK, text, [], info
        stub = answer_pb2_grpc.AnswererStub(self.channels["answer"])
        try:
            res: answer_pb2.AnswerResult = await stub.Answer(
                answer_pb2.AnswerRequest(
                    question=out.question,
                    game=out.game,
                    passages=out.passages,
                    cards=out.cards,
                    priors=[
                        answer_pb2.PriorRuling(
                            question=p["question"],
                            answer=p["answer"],
                            score=float(p["rating"]["effective"]),
                            id=p["id"],
                        )
                        for p in priors or []
                    ],
                ),
                timeout=self.settings.rulesage_answer_deadline_s,
            )
        except Exception as exc:
            state, detail = describe(exc)
            info = AnswerInfo(state=state, detail=detail, attempts=0, rejections=[])
            text = "The answer is unavailable right now. The passages found are below; nothing was invented."
            return Verdict.UNAVAILABLE, text, [], info
        out.models["answer"] = res.model
        out.timings.extend(_timings(res.timings))
        citations = [
            Citation(
                passage_id=c.passage_id,
                quote=c.quote,
                start=c.start,
                end=c.end,
                page=c.page or None,
                doc_key=c.doc_key,
                doc_title=c.doc_title,
                doc_version=c.doc_version,
                rule_id=c.rule_id,
            )
            for c in res.citations
        ]
        info = AnswerInfo(
            state=StageState.OK,
            detail="",
            attempts=res.attempts,
            rejections=list(res.rejections),
            confidence=round(res.confidence, 4),
        )
        if res.threshold_source:
            info.threshold = round(res.threshold, 4)
            info.threshold_source = res.threshold_source
        return VERDICTS.get(res.verdict, Verdict.UNAVAILABLE), res.answer, citations, info

    async def ask(self, game: str, question: str) -> Ruling:
        with telemetry.tracer().start_as_current_span("ask", attributes={"game": game}):
            out = await self.search(game, question)
            return await self.answer(out)
