"""fusion.Fuse: lexical at once, dense and aisle as soon as the question's vectors are ready, all under one
deadline; RRF over every list that came back; passages hydrated for the stages downstream.
A failed or late arm is reported in the result and never fails the ask."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

from rulesage import runner
from rulesage.config import CommonSettings, load
from rulesage.dbservice import DbService, guarded
from rulesage.telemetry import ARM_FAILURES, Timings, tracer
from rulesage.v1 import arm_pb2, arm_pb2_grpc, common_pb2, fusion_pb2, fusion_pb2_grpc
from services.fusion import rrf

HYDRATE_SQL = """
SELECT p.id, p.text, d.key, d.title, d.kind, d.version, coalesce(g.slug, ''), p.page_start, p.page_end,
       p.heading_path, coalesce(p.rule_id, ''), coalesce(p.section_id, 0), coalesce(d.amends, '')
FROM passages p
JOIN documents d ON d.id = p.document_id
LEFT JOIN games g ON g.id = d.game_id
WHERE p.id = ANY(%s)
"""


class FusionSettings(CommonSettings):
    # Ceiling on the time the arms get (the caller's own deadline is honoured when shorter), seconds.
    rulesage_arm_deadline_s: float = 3.0


@dataclass
class ArmOutcome:
    arm: str
    state: str  # ok | failed | timeout | skipped
    detail: str = ""
    result: arm_pb2.ArmResult | None = None
    ms: float = 0.0


def _describe(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "timeout", "no answer before the deadline"
    if isinstance(exc, grpc.aio.AioRpcError):
        if exc.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
            return "timeout", "no answer before the deadline"
        return "failed", f"{exc.code().name}: {exc.details()}"
    return "failed", f"{type(exc).__name__}: {exc}"


async def _timed(arm: str, make_call: Callable[[], Any]) -> ArmOutcome:
    """Run one arm call inside its own span (attribute ``arm``) so the SRE sees which arm each call was."""
    t0 = time.perf_counter()
    try:
        with tracer().start_as_current_span("fusion.arm", attributes={"arm": arm}):
            result = await make_call()
        return ArmOutcome(arm, "ok", getattr(result, "note", ""), result, (time.perf_counter() - t0) * 1000)
    except Exception as exc:
        state, detail = _describe(exc)
        ARM_FAILURES.labels(arm, state).inc()
        return ArmOutcome(arm, state, detail, None, (time.perf_counter() - t0) * 1000)


class FusionService(DbService, fusion_pb2_grpc.FusionServicer):
    name = "fusion"
    service_names = (fusion_pb2.DESCRIPTOR.services_by_name["Fusion"].full_name,)

    def __init__(self) -> None:
        super().__init__()
        self.fusion_settings = load(FusionSettings)
        self.addresses = {arm: runner.address(arm) for arm in ("lexical", "dense", "aisle")}
        self.channels: dict[str, grpc.aio.Channel] = {}

    def register(self, server: grpc.aio.Server) -> None:
        fusion_pb2_grpc.add_FusionServicer_to_server(self, server)

    async def start(self) -> None:
        await super().start()
        self.channels = {arm: runner.channel(arm) for arm in self.addresses}

    async def stop(self) -> None:
        for ch in self.channels.values():
            await ch.close()
        await super().stop()

    def _arm(self, name: str) -> arm_pb2_grpc.ArmStub:
        return arm_pb2_grpc.ArmStub(self.channels[name])

    async def hydrate(self, fused: list[rrf.Fused]) -> list[common_pb2.Passage]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(HYDRATE_SQL, ([f.passage_id for f in fused],))
            rows = {r[0]: r for r in await cur.fetchall()}
        out = []
        for f in fused:
            r = rows.get(f.passage_id)
            if r is None:  # retired between search and hydration
                continue
            out.append(
                common_pb2.Passage(
                    id=r[0],
                    text=r[1],
                    doc_key=r[2],
                    doc_title=r[3],
                    doc_kind=r[4],
                    doc_version=r[5],
                    game=r[6],
                    page_start=r[7] or 0,
                    page_end=r[8] or 0,
                    heading_path=list(r[9] or []),
                    rule_id=r[10],
                    section_id=r[11],
                    amends=r[12],
                    fused_score=f.score,
                    ranks=[common_pb2.ArmRank(arm=a, rank=k) for a, k in sorted(f.ranks.items())],
                )
            )
        return out

    async def Fuse(
        self, request: fusion_pb2.FuseRequest, context: grpc.aio.ServicerContext
    ) -> fusion_pb2.FuseResult:
        async def work() -> fusion_pb2.FuseResult:
            question = self.question(request.question)
            game = await self.game(request.game)
            limit = request.limit or rrf.LIMIT
            remaining = context.time_remaining()
            budget = self.fusion_settings.rulesage_arm_deadline_s
            if remaining is not None:
                budget = max(0.05, min(budget, remaining - 0.25))
            deadline = time.monotonic() + budget
            timings = Timings(self.name)
            arm_req = arm_pb2.ArmRequest(question=question, game=game.slug)

            def left() -> float:
                return max(0.01, deadline - time.monotonic())

            with timings.stage("fusion.arms", game=game.slug) as span:
                lexical = asyncio.ensure_future(
                    _timed("lexical", lambda: self._arm("lexical").Search(arm_req, timeout=left()))
                )
                embed = await _timed(
                    "dense",
                    lambda: arm_pb2_grpc.EmbedderStub(self.channels["dense"]).Embed(
                        arm_pb2.EmbedRequest(question=question, game=game.slug), timeout=left()
                    ),
                )
                outcomes: list[ArmOutcome] = []
                embed_result: Any = embed.result
                if embed.state == "ok" and embed_result is not None:
                    vreq = arm_pb2.ArmRequest(question=question, game=game.slug, vectors=embed_result.vectors)
                    dense_out, aisle_out, lex_out = await asyncio.gather(
                        _timed("dense", lambda: self._arm("dense").Search(vreq, timeout=left())),
                        _timed("aisle", lambda: self._arm("aisle").Search(vreq, timeout=left())),
                        lexical,
                    )
                    dense_out.ms += embed.ms
                    outcomes = [lex_out, dense_out, aisle_out]
                else:
                    why = f"question embedding failed: {embed.detail}"
                    outcomes = [
                        await lexical,
                        ArmOutcome("dense", embed.state, why, None, embed.ms),
                        ArmOutcome("aisle", "skipped", why),
                    ]
                span.set_attribute("arms.ok", sum(o.state == "ok" for o in outcomes))

            lists: dict[str, list[int]] = {}
            for o in outcomes:
                if o.state != "ok" or o.result is None:
                    continue
                for lane in o.result.lanes:
                    lists[lane] = [
                        h.passage_id for h in sorted(o.result.hits, key=lambda h: h.rank) if h.lane == lane
                    ]
            voted = [lane for lane, ids in lists.items() if ids]
            with timings.stage("fusion.rrf", lists=len(voted)):
                fused = rrf.fuse({lane: lists[lane] for lane in voted}, rrf.K, limit)
            with timings.stage("fusion.hydrate", candidates=len(fused)):
                passages = await self.hydrate(fused)

            result = fusion_pb2.FuseResult(
                passages=passages,
                voted=voted,
                k=rrf.K,
                ceiling=rrf.ceiling(len(voted)),
                aliases=[f"{a.alias} -> {a.term}" for a in (embed_result.aliases if embed_result else [])],
                embed_model=embed_result.model if embed_result else "",
            )
            for o in outcomes:
                hits = len(o.result.hits) if o.result is not None else 0
                result.arms.append(
                    fusion_pb2.ArmStatus(arm=o.arm, state=o.state, detail=o.detail, hits=hits, ms=o.ms)
                )
                if o.result is not None:
                    result.timings.extend(o.result.timings)
            if embed_result is not None:
                result.timings.extend(embed_result.timings)
            result.timings.extend(timings.proto())
            return result

        return await guarded(context, work)
