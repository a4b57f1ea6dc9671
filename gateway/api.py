"""The JSON API: mirrors each page. FastAPI writes its OpenAPI document at /openapi.json (docs at /docs)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Form, HTTPException, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, Field
from starlette.responses import Response

from gateway import asking, shelf, wrench
from gateway.context import (
    AdminDep,
    AskError,
    Ctx,
    admitted,
    as_ask_error,
    ask,
    asked_before,
    check_ask,
    client_address,
    ctx,
    session_id,
)
from rulesage import rulings
from rulesage.core.cards import name_key
from rulesage.core.models import (
    CardSearch,
    Games,
    Queue,
    RatingResult,
    RetireResult,
    ReviewResult,
    RulingPublic,
    Wall,
)
from rulesage.store import cards as card_store

log = logging.getLogger(__name__)
router = APIRouter(prefix="/api")


class AskBody(BaseModel):
    game: str = Field(max_length=200, description="The game's slug, from GET /api/games.")
    question: str = Field(
        max_length=20_000, description="The rules question (at most 1,500 characters by default)."
    )


class RatingBody(BaseModel):
    score: int = Field(ge=1, le=3, description="1 wrong, 2 partly right, 3 right.")


class ReviewBody(BaseModel):
    reason: str = Field(default="", max_length=500)


class RetireBody(BaseModel):
    reason: str = Field(
        min_length=1, max_length=500, description="Why it was retired: shown on the ruling's page."
    )


def _ask_error(exc: AskError) -> JSONResponse:
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
    return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)


@router.get("/games", summary="The shelf: games, optionally filtered by name or family", response_model=Games)
async def list_games(
    request: Request,
    q: Annotated[str, Query(max_length=100)] = "",
    family: Annotated[str, Query(max_length=100)] = "",
) -> dict[str, Any]:
    async with ctx(request).pool.connection() as conn:
        return {"games": await shelf.games(conn, q, family)}


CARD_QUERY_MIN = 2  # one letter starts a thousand names: the search waits for a second


@router.get(
    "/cards",
    summary="Cards of a game's card table by name (prefix or near spelling), for the page's autocomplete",
    response_model=CardSearch,
    responses={404: {"description": "unknown game"}, 422: {"description": "too short or too long"}},
)
async def find_cards(
    request: Request,
    q: Annotated[str, Query(max_length=100, description="What was typed of a card's name.")],
    game: Annotated[
        str, Query(max_length=200, description="The game's slug; may be left out while one game has cards.")
    ] = "",
    limit: Annotated[int, Query(ge=1, le=50)] = 10,
) -> dict[str, Any]:
    if len(name_key(q)) < CARD_QUERY_MIN:
        raise HTTPException(422, f"Type at least {CARD_QUERY_MIN} letters of a card's name.")
    async with ctx(request).pool.connection() as conn:
        if not game:
            with_cards = await card_store.games_with_cards(conn)
            if len(with_cards) != 1:
                named = ", ".join(with_cards) or "none"
                raise HTTPException(422, f"Name the game (games with a card table: {named}).")
            game = with_cards[0]
        g = await shelf.game(conn, game)
        if g is None:
            raise HTTPException(404, f"There is no game {game!r} on the shelf.")
        if not g["cards"]:
            return {"game": game, "q": q, "cards": [], "note": "This game has no card table."}
        found = await card_store.search(conn, g["id"], q, limit)
    return {
        "game": game,
        "q": q,
        "cards": [
            {"name": c.name, "type_line": c.type_line, "mana_cost": c.mana_cost, "similarity": c.similarity}
            for c in found
        ],
    }


@router.post("/ask", summary="Ask a rules question; returns the stored ruling with its id and wrench")
async def api_ask(request: Request, body: AskBody) -> Response:
    c = ctx(request)
    try:
        _, question = await check_ask(c, client_address(request), body.game, body.question)
        ruling = await ask(c, body.game, question)
    except AskError as exc:
        return _ask_error(exc)
    return JSONResponse(ruling, status_code=201, headers={"Location": f"/rulings/{ruling['id']}"})


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


@router.post(
    "/ask/stream",
    summary="Ask from the page: server-sent events 'passages' (found first), then 'ruling' or 'error'",
)
async def api_ask_stream(
    request: Request,
    game: Annotated[str, Form(max_length=200)],
    question: Annotated[str, Form(max_length=20_000)],
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    c = ctx(request)
    if not c.guard.csrf_ok(session_id(request), csrf):
        return JSONResponse({"error": "This form has expired. Reload the page and try again."}, 403)
    try:
        _, question = await check_ask(c, client_address(request), game, question)
    except AskError as exc:
        return _ask_error(exc)
    return StreamingResponse(
        _stream(c, game, question),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def _stream(c: Ctx, game: str, question: str) -> AsyncIterator[bytes]:
    road = c.road.get()
    yield _event("searching", {"game": game})
    try:
        async with admitted(c):  # a turn on the road (or a 'busy' error event)
            async for chunk in _search_then_answer(c, road, game, question):
                yield chunk
    except AskError as exc:
        yield _event("error", {"message": exc.message})


async def _search_then_answer(c: Ctx, road: Any, game: str, question: str) -> AsyncIterator[bytes]:
    try:
        outcome = await road.search(game, question)
        yield _event(
            "passages",
            {"passages": asking.found_passages(outcome), "search_span_ms": asking.search_span_ms(outcome)},
        )
        answering = asyncio.ensure_future(road.answer(outcome))
        while True:  # a comment line every few seconds keeps proxies from closing a quiet stream
            done, _ = await asyncio.wait({answering}, timeout=5)
            if done:
                break
            yield b": still writing\n\n"
        ruling = answering.result().to_json()
    except Exception as exc:
        mapped = as_ask_error(exc)
        if mapped is None:
            log.exception("ask failed")
        message = mapped.message if mapped else "Something went wrong while answering. Please try again."
        yield _event("error", {"message": message})
        return
    c.screening.schedule(str(ruling["id"]), str(ruling.get("question", question)))
    yield _event("ruling", {"id": ruling["id"], "url": f"/rulings/{ruling['id']}"})


@router.get(
    "/rulings/{rid}",
    summary="One ruling: answer, citations, passages, wrench, rating",
    response_model=RulingPublic,
)
async def get_ruling(request: Request, rid: str) -> dict[str, Any]:

    c = ctx(request)
    async with c.pool.connection() as conn:
        ruling = await rulings.get(conn, rid) if len(rid) <= 64 else None
        if ruling is None:
            raise HTTPException(404, "No ruling has that address.")
        ruling["rating"] = await rulings.rating(conn, rid)
        ruling["asked_before"] = await asked_before(conn, rid)
    view = wrench.view(ruling, c.settings.rulesage_trace_url)
    ruling["wrench_derived"] = {
        "voted": view["voted"],
        "ceiling": view["ceiling"],
        "ceiling_formula": view["ceiling_formula"],
        "top_fused": view["top_fused"],
        "above_ceiling": view["above_ceiling"],
        "trace_link": view["trace_link"],
    }
    return ruling


@router.post(
    "/rulings/{rid}/rating",
    summary="Rate a ruling 1-3; returns its Bayesian mean (with the admin token: a judge's rating)",
    response_model=RatingResult,
)
async def rate(request: Request, rid: str, body: RatingBody) -> dict[str, Any]:

    c = ctx(request)
    # With the admin's bearer token the rating is a judge's; otherwise a browser rates as its session and a
    # client without a session cookie rates as its address.
    if c.guard.bearer_ok(request.headers.get("authorization")):
        return await _judge(c, rid, body.score)
    fresh = getattr(request.state, "fresh_session", True)
    rater = c.guard.client_key("ip:" + client_address(request) if fresh else session_id(request))
    async with c.pool.connection() as conn:
        result = await rulings.rate(conn, rid, body.score, rater)
    if result is None:
        raise HTTPException(404, "No ruling has that address.")
    return {"id": rid, "rating": result}


@router.get("/wall", summary="Cleared rulings only, newest first, paginated", response_model=Wall)
async def wall(request: Request, page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> dict[str, Any]:

    c = ctx(request)
    size = c.settings.rulesage_wall_page_size
    async with c.pool.connection() as conn:
        total = await rulings.wall_count(conn)
        items = await rulings.wall(conn, limit=size, offset=(page - 1) * size)
    return {"rulings": items, "page": page, "pages": max(1, math.ceil(total / size)), "total": total}


@router.get("/admin/queue", summary="Held and pending rulings (admin token)", response_model=Queue)
async def admin_queue(request: Request, _: AdminDep) -> dict[str, Any]:

    c = ctx(request)
    async with c.pool.connection() as conn:
        return {"rulings": await rulings.queue(conn)}


async def _judge(c: Ctx, rid: str, score: int) -> dict[str, Any]:
    async with c.pool.connection() as conn:
        result = await rulings.rate(conn, rid, score, rulings.JUDGE_CLIENT, judge=True)
    if result is None:
        raise HTTPException(404, "No ruling has that address.")
    return {"id": rid, "rating": result}


@router.post(
    "/admin/rulings/{rid}/judge",
    summary="A judge's 1-3 rating (admin token): the latest one is the ruling's effective score",
    response_model=RatingResult,
)
async def admin_judge(request: Request, rid: str, body: RatingBody, _: AdminDep) -> dict[str, Any]:
    return await _judge(ctx(request), rid, body.score)


@router.post(
    "/admin/rulings/{rid}/retire",
    summary="Retire a ruling (admin token): never offered as asked before again, readable at its permalink",
    response_model=RetireResult,
)
async def admin_retire(request: Request, rid: str, body: RetireBody, _: AdminDep) -> dict[str, Any]:
    c = ctx(request)
    if not body.reason.strip():
        raise HTTPException(422, "A retirement needs a reason.")
    async with c.pool.connection() as conn:
        if not await rulings.retire(conn, rid, body.reason):
            raise HTTPException(404, "No ruling has that address.")
        ruling = await rulings.get(conn, rid)
    assert ruling is not None
    return {"id": rid, "retired_at": ruling["retired_at"], "retired_reason": ruling["retired_reason"]}


@router.post(
    "/admin/rulings/{rid}/{action}",
    summary="Clear a ruling for the wall, or keep it held",
    response_model=ReviewResult,
)
async def admin_review(
    request: Request,
    rid: str,
    action: Literal["clear", "hold"],
    _: AdminDep,
    body: Annotated[ReviewBody | None, Body()] = None,
) -> dict[str, Any]:

    c = ctx(request)
    state, default = rulings.REVIEW_ACTIONS[action]
    reason = (body.reason if body else "") or default
    async with c.pool.connection() as conn:
        if not await rulings.review(conn, rid, state, reason):
            raise HTTPException(404, "No ruling has that address.")
    return {"id": rid, "public_state": state, "public_reason": reason}
