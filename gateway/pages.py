"""Server-rendered pages: the shelf, a game's ask box, the permalink with its wrench, the wall, the queue."""

from __future__ import annotations

import math
from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from gateway import shelf, wrench
from gateway.context import (
    AskError,
    Ctx,
    ask,
    asked_before,
    check_ask,
    client_address,
    ctx,
    is_admin,
    render,
    session_id,
)
from gateway.security import ADMIN_COOKIE
from gateway.wrench import doorman_report
from rulesage import rulings

router = APIRouter(include_in_schema=False)

RATING_LABELS = {1: "Wrong", 2: "Partly right", 3: "Right"}


def _csrf_or_403(c: Ctx, request: Request, token: str | None) -> None:
    if not c.guard.csrf_ok(session_id(request), token):
        raise HTTPException(
            403, "This form has expired or did not come from this site. Reload the page and try again."
        )


def _see_other(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


@router.get("/")
async def shelf_page(
    request: Request,
    q: Annotated[str, Query(max_length=100)] = "",
    family: Annotated[str, Query(max_length=100)] = "",
) -> Response:
    c = ctx(request)
    async with c.pool.connection() as conn:
        games = await shelf.games(conn, q, family)
        families = await shelf.families(conn)
        recent = await rulings.wall(conn, limit=5)
    return render(request, "shelf.html", games=games, families=families, q=q, family=family, recent=recent)


async def _game_page(request: Request, slug: str, status: int = 200, **extra: Any) -> Response:
    c = ctx(request)
    async with c.pool.connection() as conn:
        game = await shelf.game(conn, slug)
        if game is None:
            raise HTTPException(404, "There is no such game on the shelf.")
        recent = await rulings.wall(conn, limit=8, game=slug)
    values = {"error": "", "question": "", **extra}
    return render(request, "game.html", status=status, game=game, recent=recent, **values)


@router.get("/games/{slug}")
async def game_page(request: Request, slug: str) -> Response:
    return await _game_page(request, slug)


@router.post("/games/{slug}/ask")
async def ask_form(
    request: Request,
    slug: str,
    question: Annotated[str, Form(max_length=20_000)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    c = ctx(request)
    _csrf_or_403(c, request, csrf)
    try:
        await check_ask(c, client_address(request), slug, question)
        ruling = await ask(c, slug, question.strip())
    except AskError as exc:
        response = await _game_page(request, slug, exc.status, error=exc.message, question=question)
        if exc.retry_after:
            response.headers["Retry-After"] = str(exc.retry_after)
        return response
    return _see_other(f"/rulings/{ruling['id']}")


@router.get("/rulings/{rid}")
async def ruling_page(request: Request, rid: str) -> Response:
    c = ctx(request)
    async with c.pool.connection() as conn:
        ruling = await rulings.get(conn, rid) if len(rid) <= 64 else None
        if ruling is None:
            raise HTTPException(404, "No ruling has that address.")
        rating = await rulings.rating(conn, rid)
        priors = await asked_before(conn, rid)
    view = wrench.view(ruling, c.settings.rulesage_trace_url)
    response = render(
        request,
        "ruling.html",
        ruling=ruling,
        wrench=view,
        rating=rating,
        priors=priors,
        rating_labels=RATING_LABELS,
        rated=request.query_params.get("rated") == "1",
    )
    if ruling["public_state"] != "cleared":
        response.headers["X-Robots-Tag"] = "noindex"
    return response


@router.post("/rulings/{rid}/rating")
async def rate_form(
    request: Request,
    rid: str,
    score: Annotated[int, Form(ge=1, le=3)],
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    c = ctx(request)
    _csrf_or_403(c, request, csrf)
    async with c.pool.connection() as conn:
        result = await rulings.rate(conn, rid, score, c.guard.client_key(session_id(request)))
    if result is None:
        raise HTTPException(404, "No ruling has that address.")
    return _see_other(f"/rulings/{rid}?rated=1#rating")


@router.get("/wall")
async def wall_page(request: Request, page: Annotated[int, Query(ge=1, le=100_000)] = 1) -> Response:
    c = ctx(request)
    size = c.settings.rulesage_wall_page_size
    async with c.pool.connection() as conn:
        total = await rulings.wall_count(conn)
        items = await rulings.wall(conn, limit=size, offset=(page - 1) * size)
    pages = max(1, math.ceil(total / size))
    return render(request, "wall.html", rulings=items, page=page, pages=pages, total=total)


@router.get("/about/doorman")
async def about_doorman(request: Request) -> Response:
    c = ctx(request)
    async with c.pool.connection() as conn:
        latest = await rulings.latest_doorman(conn)
    return render(request, "about_doorman.html", report=doorman_report(), latest=latest)


# The review queue --------------------------------------------------------------------------------------


def _admin(c: Ctx, request: Request) -> bool:
    return is_admin(c, request, cookie=True)


@router.get("/admin/login")
async def login_page(request: Request) -> Response:
    c = ctx(request)
    if _admin(c, request):
        return _see_other("/admin/queue")
    return render(request, "login.html", error="")


@router.post("/admin/login")
async def login(
    request: Request,
    token: Annotated[str, Form(max_length=1000)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    c = ctx(request)
    _admin(c, request)
    _csrf_or_403(c, request, csrf)
    client = client_address(request)
    blocked = await c.login_limiter.peek(client)
    if not blocked.allowed:  # checked before the token: a right guess past the limit does not get in
        message = f"Too many wrong tokens. Try again in {blocked.retry_after_s} seconds."
        return render(request, "login.html", status=429, error=message)
    if not c.guard.token_ok(token):
        await c.login_limiter.hit(client)
        return render(request, "login.html", status=401, error="That token is not right.")
    response = _see_other("/admin/queue")
    response.set_cookie(
        ADMIN_COOKIE,
        c.guard.admin_cookie(session_id(request)),
        httponly=True,
        samesite="strict",
        secure=c.settings.rulesage_secure_cookies,
        path="/admin",
        max_age=12 * 3600,
    )
    return response


@router.post("/admin/logout")
async def logout(request: Request, csrf: Annotated[str, Form(max_length=200)] = "") -> Response:
    c = ctx(request)
    _csrf_or_403(c, request, csrf)
    response = _see_other("/")
    response.delete_cookie(ADMIN_COOKIE, path="/admin")
    return response


@router.get("/admin/queue")
async def queue_page(request: Request) -> Response:
    c = ctx(request)
    if not _admin(c, request):
        return render(request, "login.html", status=401, error="The review queue needs the admin token.")
    async with c.pool.connection() as conn:
        items = await rulings.queue(conn)
    return render(request, "queue.html", rulings=items, done=request.query_params.get("done", ""))


@router.get("/admin/rulings/{rid}")
async def judge_page(request: Request, rid: str) -> Response:
    """A judge's tools for one ruling: rate it as the judge (overrides the crowd) or retire it."""
    c = ctx(request)
    if not _admin(c, request):
        return render(request, "login.html", status=401, error="The judge's tools need the admin token.")
    async with c.pool.connection() as conn:
        ruling = await rulings.get(conn, rid) if len(rid) <= 64 else None
        if ruling is None:
            raise HTTPException(404, "No ruling has that address.")
        rating = await rulings.rating(conn, rid)
    return render(
        request,
        "judge.html",
        ruling=ruling,
        rating=rating,
        rating_labels=RATING_LABELS,
        done=request.query_params.get("done", ""),
    )


def _judge_guard(c: Ctx, request: Request, csrf: str) -> None:
    if not _admin(c, request):
        raise HTTPException(401, "The judge's tools need the admin token.")
    _csrf_or_403(c, request, csrf)


@router.post("/admin/rulings/{rid}/judge")
async def judge_form(
    request: Request,
    rid: str,
    score: Annotated[int, Form(ge=1, le=3)],
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    c = ctx(request)
    _judge_guard(c, request, csrf)
    async with c.pool.connection() as conn:
        result = await rulings.rate(conn, rid, score, rulings.JUDGE_CLIENT, judge=True)
    if result is None:
        raise HTTPException(404, "No ruling has that address.")
    return _see_other(f"/admin/rulings/{rid}?done=judge")


@router.post("/admin/rulings/{rid}/retire")
async def retire_form(
    request: Request,
    rid: str,
    reason: Annotated[str, Form(max_length=500)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    c = ctx(request)
    _judge_guard(c, request, csrf)
    if not reason.strip():
        raise HTTPException(400, "Say why the ruling is retired: the reason is shown on its page.")
    async with c.pool.connection() as conn:
        if not await rulings.retire(conn, rid, reason):
            raise HTTPException(404, "No ruling has that address.")
    return _see_other(f"/admin/rulings/{rid}?done=retire")


@router.post("/admin/rulings/{rid}/{action}")
async def review_form(
    request: Request, rid: str, action: str, csrf: Annotated[str, Form(max_length=200)] = ""
) -> Response:
    c = ctx(request)
    if action not in rulings.REVIEW_ACTIONS:
        raise HTTPException(404, "Not found.")
    if not _admin(c, request):
        raise HTTPException(401, "The review queue needs the admin token.")
    _csrf_or_403(c, request, csrf)
    state, reason = rulings.REVIEW_ACTIONS[action]
    async with c.pool.connection() as conn:
        if not await rulings.review(conn, rid, state, reason):
            raise HTTPException(404, "No ruling has that address.")
    return _see_other(f"/admin/queue?done={action}")
