"""dense: Embedder.Embed (question -> one vector per lane, once per ask) and Arm.Search (pgvector)."""

from __future__ import annotations

import asyncio
import time

import grpc
import numpy as np
from pydantic import Field

from rulesage.config import CommonSettings, ConfigError, load
from rulesage.core import rrf
from rulesage.core.cards import RULING_NEIGHBOURS
from rulesage.core.text import asked_only
from rulesage.dbservice import DbService, vector_of
from rulesage.embed import Embedder, shared_embedder
from rulesage.store import vectors as search
from rulesage.telemetry import Timings
from rulesage.v1 import arm_pb2, arm_pb2_grpc
from services.dense import lanes as lanes_mod

DEFAULT_LIMIT = 80
RULINGS_LANE = "dense.rulings"
ALIAS_TTL_S = 60.0


class DenseSettings(CommonSettings):
    # A question of several sentences whose asking ones say less than the whole (a forum post: situation
    # first, questions last) gets one more lane, "dense.asked": its asking sentences alone.
    rulesage_asked_lane: bool = False
    # The "dense.rulings" lane (a request naming cards): how many of the cards' official rulings are read,
    # dealt a card at a time, and how deep each ruling's own list of nearest passages goes before the lists
    # are fused (RRF) into the lane. Chosen on data/real-dev's MTG posts (README, "The cards' rulings").
    rulesage_rulings_read: int = Field(16, ge=1, le=64)
    rulesage_rulings_depth: int = Field(40, ge=1, le=RULING_NEIGHBOURS)


def embed_lanes(embedder: Embedder, lanes: list[lanes_mod.Lane]) -> list[np.ndarray]:
    """One vector per lane, in order: the card lane read by the card tower (the question tower when none is
    configured), the others by the question tower."""
    kinds = ["cards" if ln.name == lanes_mod.CARDS_LANE else "question" for ln in lanes]
    by_lane: dict[int, np.ndarray] = {}
    for kind in dict.fromkeys(kinds):  # each tower once, in lane order
        at = [i for i, k in enumerate(kinds) if k == kind]
        by_lane.update(zip(at, embedder.embed_questions([lanes[i].text for i in at], kind=kind), strict=True))
    return [by_lane[i] for i in range(len(lanes))]


class DenseService(DbService, arm_pb2_grpc.ArmServicer, arm_pb2_grpc.EmbedderServicer):
    name = "dense"
    service_names = (
        arm_pb2.DESCRIPTOR.services_by_name["Arm"].full_name,
        arm_pb2.DESCRIPTOR.services_by_name["Embedder"].full_name,
    )

    def __init__(self) -> None:
        super().__init__()
        self.embedder: Embedder | None = None
        self.dense_settings = load(DenseSettings)
        self._aliases: dict[int, tuple[float, list[lanes_mod.Alias]]] = {}

    def register(self, server: grpc.aio.Server) -> None:
        arm_pb2_grpc.add_ArmServicer_to_server(self, server)
        arm_pb2_grpc.add_EmbedderServicer_to_server(self, server)

    async def start(self) -> None:
        await super().start()
        # loading (and on first use exporting) the model happens before the service says SERVING
        self.embedder = await asyncio.to_thread(shared_embedder)
        # and the towers' graphs, exported on first use: never on a player's first question
        await asyncio.to_thread(self.embedder.question_graph, "question")
        await asyncio.to_thread(self.embedder.question_graph, "cards")
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT model FROM embedding_space WHERE active")
            row = await cur.fetchone()
        if row and row[0] != self.embedder.identity.model:  # never compare vectors of two models
            raise ConfigError(
                f"bad configuration: the database's vectors were drawn by {row[0]}, but this service "
                f"embeds with {self.embedder.identity.model}: re-embed (rulesage ingest) or set "
                "RULESAGE_EMBED_VARIANT"
            )

    async def aliases(self, family_id: int) -> list[lanes_mod.Alias]:
        cached = self._aliases.get(family_id)
        if cached and time.monotonic() - cached[0] < ALIAS_TTL_S:
            return cached[1]
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT alias, term, evidence FROM aliases WHERE family_id = %s", (family_id,)
            )
            found = [lanes_mod.Alias(r[0], r[1], r[2]) for r in await cur.fetchall()]
        self._aliases[family_id] = (time.monotonic(), found)
        return found

    async def Embed(
        self, request: arm_pb2.EmbedRequest, context: grpc.aio.ServicerContext
    ) -> arm_pb2.EmbedResult:
        assert self.embedder is not None
        question = self.question(request.question)
        timings = Timings(self.name)
        matches: list[lanes_mod.Alias] = []
        if request.game:
            game = await self.game(request.game)
            with timings.stage("dense.aliases", game=game.slug) as span:
                matches = lanes_mod.matching(question, await self.aliases(game.family_id))
                span.set_attribute("aliases.matched", len(matches))
        asked = (asked_only(question) or "") if self.dense_settings.rulesage_asked_lane else ""
        lanes = lanes_mod.lanes(question, matches, request.cards_text.strip(), asked)
        with timings.stage("dense.embed", lanes=len(lanes)) as span:
            vecs = await asyncio.to_thread(embed_lanes, self.embedder, lanes)
            if any(ln.name == lanes_mod.CARDS_LANE for ln in lanes):
                span.set_attribute("embed.cards_model", self.embedder.card_model)
        return arm_pb2.EmbedResult(
            vectors=[
                arm_pb2.Vector(lane=ln.name, text=ln.text, values=v.tolist())
                for ln, v in zip(lanes, vecs, strict=True)
            ],
            aliases=[arm_pb2.AliasMatch(alias=m.alias, term=m.term, evidence=m.evidence) for m in matches],
            model=self.embedder.question_model,
            timings=timings.proto(),
        )

    async def Search(
        self, request: arm_pb2.ArmRequest, context: grpc.aio.ServicerContext
    ) -> arm_pb2.ArmResult:
        game = await self.vector_search(request, context)
        limit = min(request.limit or DEFAULT_LIMIT, search.MAX_LIMIT)
        timings = Timings(self.name)
        result = arm_pb2.ArmResult(arm="dense")

        async def lane(vec: arm_pb2.Vector) -> list[search.Hit]:
            async with self.pool.connection() as conn:
                return await search.nearest(conn, np.asarray(vector_of(vec.values)), game.family_id, limit)

        async def rulings() -> list[rrf.Fused]:
            """The lane of the named cards' rulings: each read ruling's nearest passages, fused by RRF."""
            if not request.card_ids:
                return []
            with timings.stage("dense.rulings", cards=len(request.card_ids)) as span:
                async with self.pool.connection() as conn:
                    per = await search.nearest_to_rulings(
                        conn,
                        list(request.card_ids),
                        game.family_id,
                        self.dense_settings.rulesage_rulings_read,
                        self.dense_settings.rulesage_rulings_depth,
                    )
                span.set_attribute("rulings.read", len(per))
                lists = {f"{card}:{ord_}": ids for (card, ord_), ids in per.items()}
                return rrf.fuse(lists, rrf.K, limit)

        with timings.stage("dense.search", game=game.slug, lanes=len(request.vectors)) as span:
            ruled = asyncio.ensure_future(rulings())  # beside the question's lanes
            try:
                per_lane = await asyncio.gather(*(lane(v) for v in request.vectors))
            except BaseException:
                ruled.cancel()
                raise
            by_ruling = await ruled
            span.set_attribute("candidates.out", sum(len(h) for h in per_lane))
        for vec, hits in zip(request.vectors, per_lane, strict=True):
            result.lanes.append(vec.lane)
            result.hits.extend(
                arm_pb2.ArmHit(passage_id=h.passage_id, rank=i, score=h.score, lane=vec.lane)
                for i, h in enumerate(hits, 1)
            )
        if by_ruling:
            result.lanes.append(RULINGS_LANE)
            result.hits.extend(
                arm_pb2.ArmHit(passage_id=f.passage_id, rank=i, score=f.score, lane=RULINGS_LANE)
                for i, f in enumerate(by_ruling, 1)
            )
        result.timings.extend(timings.proto())
        return result
