"""fusion.Fuse: every registered arm (rulesage.mesh) asked through one fan-out (rulesage.arms): those that
need no vectors at once, the others as soon as the question's vectors are ready, all under one deadline; RRF
over every list that came back; passages hydrated for the stages downstream. A failed or late arm is reported
in the result and never fails the ask."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Literal

import grpc
from pydantic import Field

from rulesage.arms import ArmClient
from rulesage.config import CommonSettings, load
from rulesage.core import cards as card_core
from rulesage.core import rrf
from rulesage.core.models import StageState
from rulesage.dbservice import DbService
from rulesage.passages import to_pb
from rulesage.store import cards as card_store
from rulesage.store import passages
from rulesage.telemetry import Timings
from rulesage.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc


class FusionSettings(CommonSettings):
    # Ceiling on the time the arms get (the caller's own deadline is honoured when shorter), seconds.
    rulesage_arm_deadline_s: float = Field(3.0, gt=0)
    # One ballot per opinion: a list that only repeats another list's candidates in the same order (the
    # aisle over a one-book family re-ranks the dense arm's own, rulesage.core.rrf.echoes) casts no vote.
    # Off by default: measured on both gold sets it cost 3 points of fused recall@8 (README). The wrench
    # names every echo either way.
    rulesage_fusion_one_ballot: bool = False
    # What the cards a question names say joins the search (games with a card table):
    #   lanes    the lanes "lexical.cards" and "dense.cards" vote beside the question's own;
    #   replace  they vote instead of the question's own lexical and dense lanes;
    #   off      the cards are found and shown, never searched.
    # Measured on both gold sets' MTG questions (README, "The card table").
    rulesage_card_search: Literal["lanes", "replace", "off"] = "lanes"
    # The searched cards' official rulings vote too, as the dense arm's lane "dense.rulings" (the passages
    # nearest what each ruling says). Off: the cards' text alone joins the search, as before the lane.
    rulesage_card_rulings: bool = True
    # How long a game's card names are used before the table is looked at again (a reloaded one is then
    # read again), seconds.
    rulesage_card_names_ttl_s: float = Field(300.0, gt=0)


CARD_LANES = {"lexical.cards": "lexical", "dense.cards": "dense"}


class FusionService(DbService, fusion_pb2_grpc.FusionServicer):
    name = "fusion"
    service_names = (fusion_pb2.DESCRIPTOR.services_by_name["Fusion"].full_name,)

    def __init__(self) -> None:
        super().__init__()
        self.fusion_settings = load(FusionSettings)
        self.arms = ArmClient()
        # game id -> (when last looked at, the table's sha256 or "", its index)
        self._card_names: dict[int, tuple[float, str, card_core.CardIndex | None]] = {}

    def register(self, server: grpc.aio.Server) -> None:
        fusion_pb2_grpc.add_FusionServicer_to_server(self, server)

    async def start(self) -> None:
        await super().start()
        self.arms.open()

    async def stop(self) -> None:
        await self.arms.close()
        await super().stop()

    async def card_index(self, game_id: int) -> card_core.CardIndex | None:
        """The game's card names, ready to match (None: the game has no card table). Looked at again after
        the TTL, and rebuilt only when the table was reloaded since (its sha256 changed)."""
        cached = self._card_names.get(game_id)
        now = time.monotonic()
        if cached and now - cached[0] < self.fusion_settings.rulesage_card_names_ttl_s:
            return cached[2]
        async with self.pool.connection() as conn:
            table = await card_store.table(conn, game_id)
            sha = table.sha256 if table is not None else ""
            if cached and cached[1] == sha:
                index = cached[2]
            elif table is None:
                index = None
            else:
                index = card_core.CardIndex.build(await card_store.names(conn, game_id))
        self._card_names[game_id] = (now, sha, index)
        return index

    async def named_cards(self, question: str, game_id: int) -> tuple[list[common_pb2.NamedCard], list[int]]:
        """The cards the question names, with their text and rulings, the first few marked searched; and the
        searched cards' ids."""
        index = await self.card_index(game_id)
        if index is None:
            return [], []
        mentions = index.find(question)
        async with self.pool.connection() as conn:
            found = await card_store.cards(conn, [m.card_id for m in mentions])
        out: list[common_pb2.NamedCard] = []
        searched_ids: list[int] = []
        searching = self.fusion_settings.rulesage_card_search != "off"
        for m in mentions:
            c = found.get(m.card_id)
            if c is None:  # the table was reloaded since the names were cached
                continue
            fields = {k: v for k, v in asdict(c).items() if k != "id"}
            searched = searching and len(out) < card_core.SEARCHED_CARDS
            out.append(common_pb2.NamedCard(**fields, written=m.written, how=m.how, searched=searched))
            if searched:
                searched_ids.append(c.id)
        return out, searched_ids

    async def hydrate(self, fused: list[rrf.Fused]) -> list[common_pb2.Passage]:
        async with self.pool.connection() as conn:
            rows = await passages.hydrate(conn, [f.passage_id for f in fused])
        out = []
        for f in fused:
            r = rows.get(f.passage_id)
            if r is None:  # retired between search and hydration
                continue
            out.append(to_pb(r, f))
        return out

    async def Fuse(
        self, request: fusion_pb2.FuseRequest, context: grpc.aio.ServicerContext
    ) -> fusion_pb2.FuseResult:
        question = self.question(request.question)
        game = await self.game(request.game)
        limit = request.limit or rrf.LIMIT
        remaining = context.time_remaining()
        budget = self.fusion_settings.rulesage_arm_deadline_s
        if remaining is not None:
            budget = max(0.05, min(budget, remaining - 0.25))
        deadline = time.monotonic() + budget
        timings = Timings(self.name)
        with timings.stage("fusion.cards", game=game.slug) as span:
            named, searched_ids = await self.named_cards(question, game.id)
            span.set_attribute("cards.named", len(named))
        searched = [c for c in named if c.searched]
        cards_text = card_core.search_text((c.name, c.type_line, c.oracle) for c in searched)
        card_ids = searched_ids if self.fusion_settings.rulesage_card_rulings else []
        with timings.stage("fusion.arms", game=game.slug) as span:
            fan = await self.arms.fan_out(
                question, game.slug, deadline, cards_text=cards_text, card_ids=card_ids
            )
            span.set_attribute("arms.ok", sum(o.state is StageState.OK for o in fan.outcomes))
        lists = fan.lists()
        echo = rrf.echoes(lists)
        silenced = echo if self.fusion_settings.rulesage_fusion_one_ballot else {}
        if self.fusion_settings.rulesage_card_search == "replace":
            # the cards' lanes vote instead of the question's own (only where they came back)
            silenced = {**silenced, **{own: card for card, own in CARD_LANES.items() if card in lists}}
        voted = [lane for lane in lists if lane not in silenced]
        with timings.stage("fusion.rrf", lists=len(voted)):
            fused = rrf.fuse({lane: lists[lane] for lane in voted}, rrf.K, limit)
        with timings.stage("fusion.hydrate", candidates=len(fused)):
            passages = await self.hydrate(fused)

        result = fusion_pb2.FuseResult(
            passages=passages,
            voted=voted,
            k=rrf.K,
            ceiling=rrf.ceiling(len(voted)),
            aliases=[f"{a.alias} -> {a.term}" for a in (fan.embed.aliases if fan.embed else [])],
            embed_model=fan.embed.model if fan.embed else "",
            question_vector=fan.question_vector(),
            cards=named,
        )
        for o in fan.outcomes:
            hits = len(o.result.hits) if o.result is not None else 0
            lanes = list(o.result.lanes) if o.result is not None else []
            repeated = [
                f"{lane} repeats {echo[lane]}'s order" + ("; no second ballot" if lane in silenced else "")
                for lane in lanes
                if lane in echo
            ]
            if repeated:
                o.detail = "; ".join(filter(None, [o.detail, *repeated]))
            status = fusion_pb2.ArmStatus(
                arm=o.arm,
                state=common_pb2.StageState.Value(o.state.proto_name),
                detail=o.detail,
                hits=hits,
                ms=o.ms,
            )
            if o.result is not None and o.result.HasField("category"):
                status.category.CopyFrom(o.result.category)
            result.arms.append(status)
            if o.result is not None:
                result.timings.extend(o.result.timings)
        if fan.embed is not None:
            result.timings.extend(fan.embed.timings)
        result.timings.extend(timings.proto())
        return result
