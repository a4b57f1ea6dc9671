"""lexical.Search: a thin servicer around bm25.search."""

from __future__ import annotations

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
        with timings.stage("lexical.search", game=game.slug, limit=limit) as span:
            async with self.pool.connection() as conn:
                hits = await bm25.search(conn, question, game.family_id, limit)
            span.set_attribute("candidates.out", len(hits))
        return arm_pb2.ArmResult(
            arm="lexical",
            lanes=["lexical"],
            hits=[
                arm_pb2.ArmHit(passage_id=h.passage_id, rank=i, score=h.score, lane="lexical")
                for i, h in enumerate(hits, 1)
            ],
            timings=timings.proto(),
        )
