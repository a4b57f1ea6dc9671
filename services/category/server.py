"""category.Search: the question put in one of the game's categories (rulesage.core.categories), then the
passages of that category's sections, ranked by the question's vector, as one voting list.

A game without a map, or a question the classifier is unsure of, gets no list: the leg stays out of the
election and the ceiling is that of the other arms. Its call (category, confidence, threshold, runner-up)
is returned either way for the wrench.
"""

from __future__ import annotations

import grpc
import numpy as np
from pydantic import Field

from rulesage.catalog import Game
from rulesage.config import CommonSettings, load
from rulesage.core import categories
from rulesage.dbservice import DbService, book_words, vector_of
from rulesage.store import categories as store
from rulesage.telemetry import Timings
from rulesage.v1 import arm_pb2, arm_pb2_grpc

LANE = "category"


class CategorySettings(CommonSettings):
    # Off: the leg answers with no list (a game's map is still loaded at ingest).
    rulesage_category_leg: bool = True
    # Abstain under this confidence (rulesage.core.categories.THRESHOLD; measured by
    # training/category/calibrate.py on the training questions).
    rulesage_category_threshold: float = Field(categories.THRESHOLD, gt=0, le=1)
    # Passages the leg's list carries at most.
    rulesage_category_limit: int = Field(40, ge=1, le=200)
    # Games (comma-separated slugs) whose call is made and shown but casts no vote. MTG by default: measured
    # on both gold sets, its vote cost one gold-dev question of recall@8 and gained none (README, "Category
    # leg"); D&D 5e and Blades lost nothing at either k.
    rulesage_category_off: str = "mtg"

    def votes_for(self, game: str) -> bool:
        return game not in {g.strip() for g in self.rulesage_category_off.split(",") if g.strip()}


class CategoryService(DbService, arm_pb2_grpc.ArmServicer):
    name = "category"
    service_names = (arm_pb2.DESCRIPTOR.services_by_name["Arm"].full_name,)

    def __init__(self) -> None:
        super().__init__()
        self.leg = load(CategorySettings)

    def register(self, server: grpc.aio.Server) -> None:
        arm_pb2_grpc.add_ArmServicer_to_server(self, server)

    async def Search(
        self, request: arm_pb2.ArmRequest, context: grpc.aio.ServicerContext
    ) -> arm_pb2.ArmResult:
        game = await self.vector_search(request, context)
        result = arm_pb2.ArmResult(arm=self.name)
        timings = Timings(self.name)
        with timings.stage("category.search", game=game.slug) as span:
            await self._search(request, game, result, timings)
            span.set_attribute("category", result.category.name)
            span.set_attribute("candidates.out", len(result.hits))
        result.timings.extend(timings.proto())
        return result

    async def _search(
        self, request: arm_pb2.ArmRequest, game: Game, result: arm_pb2.ArmResult, timings: Timings
    ) -> None:
        if not self.leg.rulesage_category_leg:
            result.note = "the category leg is switched off (RULESAGE_CATEGORY_LEG)"
            return
        # the book's words serve the classifier as they serve the aisle: the canonical lane on an alias match
        vector = np.asarray(vector_of(book_words(request.vectors).values))
        with timings.stage("category.classify") as span:
            async with self.pool.connection() as conn:
                pairs = await store.text_scores(conn, game.id, vector)
            if not pairs:
                result.note = f"{game.slug} has no category map"
                return
            made = categories.call(categories.scores(pairs), self.leg.rulesage_category_threshold)
            span.set_attribute("confidence", round(made.confidence, 4))
        result.category.CopyFrom(
            arm_pb2.Category(
                name=made.name or "",
                best=made.best,
                confidence=made.confidence,
                threshold=made.threshold,
                runner_up=made.runner_up,
                runner_up_confidence=made.runner_up_confidence,
            )
        )
        if made.name is None:
            result.note = (
                f"unsure: {made.best} at {made.confidence:.2f} is under the threshold {made.threshold:.2f}"
            )
            return
        if not self.leg.votes_for(game.slug):
            result.note = (
                f"called {made.name}, but the leg casts no vote for {game.slug} (RULESAGE_CATEGORY_OFF)"
            )
            return
        limit = min(request.limit or self.leg.rulesage_category_limit, self.leg.rulesage_category_limit)
        with timings.stage("category.sections", category=made.name):
            async with self.pool.connection() as conn:
                mapped = await store.category(conn, game.id, made.name)
                hits = await store.passages(conn, mapped.category_id, vector, limit) if mapped else []
        if mapped is not None:
            result.category.sections.extend(mapped.sections)
        if hits:
            result.lanes.append(LANE)
            result.hits.extend(
                arm_pb2.ArmHit(passage_id=pid, rank=i, score=score, lane=LANE)
                for i, (pid, score) in enumerate(hits, 1)
            )
        else:
            result.note = f"{made.name}'s sections hold no live passage"
