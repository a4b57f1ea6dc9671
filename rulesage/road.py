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
from rulesage.core.models import Ruling, StageState
from rulesage.core.questions import BadQuestion, clean_question
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
    answer_pb2.ANSWERED: "answered",
    answer_pb2.NOT_IN_BOOK: "not_in_book",
    answer_pb2.UNAVAILABLE: "unavailable",
}


# An ask that is not stored (an evaluation run) is answered from the book alone.
_NOT_LOOKED_UP: dict[str, Any] = {
    "state": StageState.SKIPPED.value,
    "detail": "not looked up: this ask is not stored (an evaluation run)",
    "shown": [],
    "max_distance": rulings.PRIOR_MAX_DISTANCE,
}


class RoadSettings(CommonSettings):
    rulesage_fusion_deadline_s: float = 5.0
    rulesage_rerank_deadline_s: float = 5.0
    rulesage_answer_deadline_s: float = 60.0
    # The prior-rulings lookup is a help: past this it is reported in the wrench and the ask goes on.
    rulesage_priors_deadline_s: float = 1.0
    # The reader scores the fused order's first this many candidates; the rest stay below them in their fused
    # order, unscored (the wrench shows them without a rerank score). Its fused prior (-2 ln(1 + position))
    # already kept the later ones out of the kept 8: at 48 both gold sets' recall@8 and MRR@10 are those of
    # all 80, and the reader's time falls 40 % (README, "The search span").
    rulesage_rerank_candidates: int = Field(48, ge=1, le=200)


def passage_dict(p: common_pb2.Passage) -> dict[str, Any]:
    return {
        "id": p.id,
        "text": p.text,
        "doc_key": p.doc_key,
        "doc_title": p.doc_title,
        "doc_kind": p.doc_kind,
        "doc_version": p.doc_version,
        "game": p.game,
        "page_start": p.page_start or None,
        "page_end": p.page_end or None,
        "heading_path": list(p.heading_path),
        "rule_id": p.rule_id,
        "section_id": p.section_id,
        "fused_score": round(p.fused_score, 6),
        "ranks": {r.arm: r.rank for r in p.ranks},
        "rerank_score": round(p.rerank_score, 4) if p.has_rerank_score else None,
    }


def _rpc_failure(exc: BaseException) -> tuple[str, str]:
    state, detail = describe(exc)
    return state.value, detail


def _category(status: fusion_pb2.ArmStatus) -> dict[str, Any] | None:
    """A classifying arm's call as the wrench keeps it (None for arms that do not classify)."""
    if not status.HasField("category"):
        return None
    c = status.category
    return {
        "name": c.name or None,
        "best": c.best,
        "confidence": round(c.confidence, 4),
        "threshold": round(c.threshold, 4),
        "sections": list(c.sections),
        "runner_up": c.runner_up,
        "runner_up_confidence": round(c.runner_up_confidence, 4),
    }


def card_dict(c: common_pb2.NamedCard) -> dict[str, Any]:
    """A named card as the wrench keeps it: every field of the contract, empty ones included."""
    return json_format.MessageToDict(
        c, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def _arm_state(value: int) -> str:
    """The contract's StageState enum as the core's state word (STAGE_STATE_OK -> "ok")."""
    return StageState.from_proto_name(common_pb2.StageState.Name(value)).value


@dataclass
class SearchOutcome:
    game: str
    game_name: str
    question: str
    passages: list[common_pb2.Passage] = field(default_factory=list)  # kept, dealt order
    candidates: list[common_pb2.Passage] = field(default_factory=list)  # fused order, with rerank scores
    wrench: dict[str, Any] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)
    trace_id: str = ""
    started: float = 0.0
    search_ms: float = 0.0
    timings: list[dict[str, Any]] = field(default_factory=list)
    deadline: float = 0.0  # time.monotonic() by which the search span must end
    question_vector: list[float] = field(default_factory=list)  # from fusion's embedder; [] when it failed
    cards: list[common_pb2.NamedCard] = field(default_factory=list)  # the cards the question names

    def passages_json(self) -> list[dict[str, Any]]:
        return [passage_dict(p) for p in self.passages]


class Road:
    def __init__(self, url: str | None = None) -> None:
        self.settings = load(RoadSettings)
        self.url = url or self.settings.database_url or db.database_url(start_embedded=False)
        self.pool = db.async_pool(self.url, min_size=1, max_size=4)
        self.catalog = Catalog(self.pool)
        self.channels: dict[str, grpc.aio.Channel] = {}
        self._opened = False
        self._opening = asyncio.Lock()  # the first asks arrive together: open the pool once

    async def open(self) -> None:
        if self._opened:
            return
        async with self._opening:
            if self._opened:
                return
            await self.pool.open(wait=True, timeout=30)
            self.channels = {n: runner.channel(n) for n in ("fusion", "rerank", "answer")}
            self._opened = True

    async def close(self) -> None:
        for ch in self.channels.values():
            await ch.close()
        await self.pool.close()
        self._opened = False

    # -- the search span ------------------------------------------------------------------------------------
    async def search(self, game: str, question: str, *, deadline_s: float | None = None) -> SearchOutcome:
        """Fusion + rerank. ``deadline_s`` caps the whole search span (each stage keeps its own cap too)."""
        await self.open()
        question = clean_question(question, self.settings.rulesage_max_question_chars)
        g = await self.catalog.game(game)
        out = SearchOutcome(g.slug, g.name, question, started=time.perf_counter())
        out.deadline = time.monotonic() + (deadline_s or 1e9)  # per ask: concurrent searches never share it
        tracer = telemetry.tracer()
        t0 = time.perf_counter()
        with tracer.start_as_current_span("search", attributes={"game": g.slug}) as span:
            out.trace_id = telemetry.current_trace_id()
            fused = await self._fuse(out)
            if fused is not None:
                await self._rerank(out, fused)
            span.set_attribute("passages.kept", len(out.passages))
        out.search_ms = (time.perf_counter() - t0) * 1000.0
        out.wrench["search_span_ms"] = round(out.search_ms, 2)
        out.wrench["trace_id"] = out.trace_id
        return out

    @staticmethod
    def _left(out: SearchOutcome, cap: float) -> float:
        return max(0.05, min(cap, out.deadline - time.monotonic()))

    async def _fuse(self, out: SearchOutcome) -> fusion_pb2.FuseResult | None:
        stub = fusion_pb2_grpc.FusionStub(self.channels["fusion"])
        t0 = time.perf_counter()
        try:
            res: fusion_pb2.FuseResult = await stub.Fuse(
                fusion_pb2.FuseRequest(question=out.question, game=out.game),
                timeout=self._left(out, self.settings.rulesage_fusion_deadline_s),
            )
        except grpc.aio.AioRpcError as exc:
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT:
                raise BadQuestion(exc.details() or "bad question") from None
            state, detail = _rpc_failure(exc)
            out.wrench.update(
                fusion={"state": state, "detail": detail},
                arms=[],
                voted=[],
                k=rrf.K,
                ceiling=0.0,
                ceiling_formula="no list voted",
                candidates=[],
                guarantees_fired=[],
                rerank={"state": "skipped", "detail": "nothing to rerank: fusion is missing", "model": ""},
            )
            return None
        out.timings.append({"stage": "road.fuse_call", "ms": round((time.perf_counter() - t0) * 1000, 2)})
        out.candidates = list(res.passages)
        out.question_vector = list(res.question_vector)
        out.cards = list(res.cards)
        out.models["embed"] = res.embed_model
        out.timings.extend({"stage": t.stage, "ms": round(t.ms, 2)} for t in res.timings)
        out.wrench.update(
            fusion={"state": StageState.OK.value, "detail": ""},
            arms=[
                {
                    "arm": a.arm,
                    "state": _arm_state(a.state),
                    "detail": a.detail,
                    "hits": a.hits,
                    "ms": round(a.ms, 2),
                    **({"category": call} if (call := _category(a)) is not None else {}),
                }
                for a in res.arms
            ],
            voted=list(res.voted),
            k=res.k,
            ceiling=res.ceiling,
            ceiling_formula=rrf.ceiling_formula(len(res.voted), res.k),
            aliases=list(res.aliases),
            cards=[card_dict(c) for c in res.cards],
        )
        return res

    async def _rerank(self, out: SearchOutcome, fused: fusion_pb2.FuseResult) -> None:
        stub = rerank_pb2_grpc.RerankerStub(self.channels["rerank"])
        t0 = time.perf_counter()
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
            out.timings.extend({"stage": t.stage, "ms": round(t.ms, 2)} for t in res.timings)
            out.wrench["guarantees_fired"] = list(res.guarantees_fired)
            out.wrench["rerank"] = {"state": StageState.OK.value, "detail": "", "model": res.model}
        except Exception as exc:  # the ask continues with the fused order
            state, detail = _rpc_failure(exc)
            out.passages = deal(list(fused.passages[:KEEP]))
            out.wrench["guarantees_fired"] = []
            out.wrench["rerank"] = {
                "state": state,
                "detail": f"{detail}; kept the fused order's top {KEEP}",
                "model": "",
            }
        out.timings.append({"stage": "road.rerank_call", "ms": round((time.perf_counter() - t0) * 1000, 2)})
        out.wrench["candidates"] = [
            {
                "id": p.id,
                "fused_score": round(p.fused_score, 6),
                "ranks": {r.arm: r.rank for r in p.ranks},
                "rerank_score": round(p.rerank_score, 4) if p.has_rerank_score else None,
            }
            for p in out.candidates
        ]

    # -- the answering model and the stored ruling ----------------------------------------------------------
    async def answer(self, out: SearchOutcome, *, store: bool = True) -> dict[str, Any]:
        """Answer from the kept passages and store the ruling (``store=False``: evaluation runs, not kept)."""
        await self.open()
        tracer = telemetry.tracer()
        found, priors_info = await self._priors(out) if store else ([], dict(_NOT_LOOKED_UP))
        t0 = time.perf_counter()
        with tracer.start_as_current_span("answer", attributes={"game": out.game}):
            verdict, text, citations, info = await self._answer(out, found)
        answer_ms = (time.perf_counter() - t0) * 1000.0
        wrench = dict(out.wrench)
        wrench["answer"] = info
        wrench["priors"] = priors_info
        wrench["answer_ms"] = round(answer_ms, 2)
        wrench["total_ms"] = round((time.perf_counter() - out.started) * 1000.0, 2)
        wrench["timings"] = out.timings
        ruling: dict[str, Any] = {
            "game": out.game,
            "game_name": out.game_name,
            "question": out.question,
            "answer": text,
            "verdict": verdict,
            "citations": citations,
            "passages": out.passages_json(),
            "cards": wrench.get("cards", []),
            "wrench": wrench,
            "models": out.models,
            "trace_id": out.trace_id,
        }
        Ruling.model_validate(ruling)  # the one schema (rulesage.core.models): a renamed key fails here
        if not store:
            return ruling | {"asked_before": found}
        async with self.pool.connection() as conn:
            ruling["id"] = await rulings.save(conn, ruling, question_vec=out.question_vector)
            stored = await rulings.get(conn, ruling["id"])
        return (stored or ruling) | {"asked_before": found}

    async def _priors(self, out: SearchOutcome) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Earlier rulings about the same thing (rulesage.rulings.priors), with the wrench's report. A missing
        question vector or a failed or slow lookup gives none and says why; it never fails the ask."""
        info: dict[str, Any] = {"shown": [], "max_distance": rulings.PRIOR_MAX_DISTANCE}
        if not out.question_vector:
            detail = "no question vector (the embedder did not answer): no earlier rulings looked up"
            return [], info | {"state": StageState.SKIPPED.value, "detail": detail}
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
            return [], info | {"state": state.value, "detail": f"{why}; answered without earlier rulings"}
        finally:
            out.timings.append({"stage": "road.priors", "ms": round((time.perf_counter() - t0) * 1000, 2)})
        detail = f"{len(found)} earlier ruling{'' if len(found) == 1 else 's'} within distance"
        detail += f" {rulings.PRIOR_MAX_DISTANCE:g}"
        return found, info | {
            "state": StageState.OK.value,
            "detail": detail,
            "shown": [p["id"] for p in found],
        }

    async def _answer(
        self, out: SearchOutcome, priors: list[dict[str, Any]] | None = None
    ) -> tuple[str, str, list[dict[str, Any]], dict[str, Any]]:
        if not out.passages:
            why = out.wrench.get("fusion", {}).get("detail") or "no passage was found"
            info: dict[str, Any] = {"state": "skipped", "detail": why, "attempts": 0, "rejections": []}
            if out.wrench.get("fusion", {}).get("state") not in (None, StageState.OK.value):
                return "unavailable", "The search is unavailable right now; nothing was looked up.", [], info
            return "not_in_book", "Not in the book: nothing on this game's shelf speaks to that.", [], info
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
            state, detail = _rpc_failure(exc)
            info = {"state": state, "detail": detail, "attempts": 0, "rejections": []}
            text = "The answer is unavailable right now. The passages found are below; nothing was invented."
            return "unavailable", text, [], info
        out.models["answer"] = res.model
        out.timings.extend({"stage": t.stage, "ms": round(t.ms, 2)} for t in res.timings)
        citations = [
            {
                "passage_id": c.passage_id,
                "quote": c.quote,
                "start": c.start,
                "end": c.end,
                "page": c.page or None,
                "doc_key": c.doc_key,
                "doc_title": c.doc_title,
                "doc_version": c.doc_version,
                "rule_id": c.rule_id,
            }
            for c in res.citations
        ]
        info = {
            "state": StageState.OK.value,
            "detail": "",
            "attempts": res.attempts,
            "rejections": list(res.rejections),
            "confidence": round(res.confidence, 4),
            **(
                {"threshold": round(res.threshold, 4), "threshold_source": res.threshold_source}
                if res.threshold_source
                else {}
            ),
        }
        return VERDICTS.get(res.verdict, "unavailable"), res.answer, citations, info

    async def ask(self, game: str, question: str) -> dict[str, Any]:
        with telemetry.tracer().start_as_current_span("ask", attributes={"game": game}):
            out = await self.search(game, question)
            return await self.answer(out)
