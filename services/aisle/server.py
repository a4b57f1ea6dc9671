"""aisle.Search: the asked game's own documents (and its family's), ranked by meaning within each."""

from __future__ import annotations

import grpc
import numpy as np

from rulesage.dbservice import DbService, book_words, vector_of
from rulesage.store import vectors as search
from rulesage.telemetry import Timings
from rulesage.v1 import arm_pb2, arm_pb2_grpc
from services.aisle import select


class AisleService(DbService, arm_pb2_grpc.ArmServicer):
    name = "aisle"
    service_names = (arm_pb2.DESCRIPTOR.services_by_name["Arm"].full_name,)

    def register(self, server: grpc.aio.Server) -> None:
        arm_pb2_grpc.add_ArmServicer_to_server(self, server)

    async def documents(self, game_id: int, family_id: int) -> list[select.Document]:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT id, key, kind, game_id IS NOT NULL FROM documents"
                " WHERE game_id = %s OR (game_id IS NULL AND family_id = %s)",
                (game_id, family_id),
            )
            return [select.Document(r[0], r[1], r[2], bool(r[3])) for r in await cur.fetchall()]

    async def Search(
        self, request: arm_pb2.ArmRequest, context: grpc.aio.ServicerContext
    ) -> arm_pb2.ArmResult:
        game = await self.vector_search(request, context)
        # the book's own words serve the aisle best: the canonical lane when an alias matched
        vector = np.asarray(vector_of(book_words(request.vectors).values))
        timings = Timings(self.name)
        result = arm_pb2.ArmResult(arm="aisle")
        with timings.stage("aisle.search", game=game.slug) as span:
            docs = select.choose_documents(await self.documents(game.id, game.family_id))
            if not any(d.own for d in docs):
                result.note = f"{game.slug} has no ingested documents of its own"
                span.set_attribute("candidates.out", 0)
                result.timings.extend(timings.proto())
                return result

            async with self.pool.connection() as conn:
                best = await search.nearest_per_document(
                    conn, vector, [d.id for d in docs], select.PER_DOCUMENT
                )
            ballot = select.ballot(
                [[select.Hit(h.passage_id, h.score, d.id) for h in best.get(d.id, [])] for d in docs]
            )
            span.set_attribute("documents", len(docs))
            span.set_attribute("candidates.out", len(ballot))
        result.lanes.append("aisle")
        result.hits.extend(
            arm_pb2.ArmHit(passage_id=h.passage_id, rank=i, score=h.score, lane="aisle")
            for i, h in enumerate(ballot, 1)
        )
        result.timings.extend(timings.proto())
        return result
