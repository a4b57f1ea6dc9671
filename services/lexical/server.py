"""lexical.Search: a thin servicer around bm25.search. With the text of the cards a question names, a
second lane ("lexical.cards") searches the question followed by that text."""

from __future__ import annotations

import asyncio

import grpc

from rulesage.dbservice import DbService
from rulesage.telemetry import Timings
from rulesage.v1 import arm_pb2, arm_pb2_grpc
from services.lexical import bm25

DEFAULT_LIMIT = 80


class LexicalService(DbService, arm_pb2_grpc.ArmServicer):
    name = "lexical"
    service_names = (arm_pb2.DESCRIPTOR.services_by_name["Arm"].full_name,)

    def register(self, server: grpc.aio.Server) -> None:
        arm_pb2_grpc.add_ArmServicer_to_server(self, server)

    async def Search(
        self, request: arm_pb2.ArmRequest, context: grpc.aio.ServicerContext
    ) -> arm_pb2.ArmResult:
        question = self.question(request.question)
        game = await self.game(request.game)
        limit = min(request.limit or DEFAULT_LIMIT, 200)
        timings = Timings(self.name)
        queries = {"lexical": question}
        if request.cards_text.strip():
            queries["lexical.cards"] = f"{question} {request.cards_text.strip()}"

        async def lane(text: str) -> list[bm25.Hit]:
            async with self.pool.connection() as conn:
                return list(await bm25.search(conn, text, game.family_id, limit))

        with timings.stage("lexical.search", game=game.slug, limit=limit, lanes=len(queries)) as span:
            found = await asyncio.gather(*(lane(q) for q in queries.values()))
            span.set_attribute("candidates.out", sum(len(h) for h in found))
        return arm_pb2.ArmResult(
            arm="lexical",
            lanes=list(queries),
            hits=[
                arm_pb2.ArmHit(passage_id=h.passage_id, rank=i, score=h.score, lane=name)
                for name, hits in zip(queries, found, strict=True)
                for i, h in enumerate(hits, 1)
            ],
            timings=timings.proto(),
        )
