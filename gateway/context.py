"""What every route shares: settings, the guard, limits, the pool, the screening, the templates; and the ask
checks the page and the API both make."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import Depends, HTTPException, Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from gateway import shelf, wrench
from gateway.asking import RoadHandle
from gateway.screening import Screening
from gateway.security import ADMIN_COOKIE, Guard, SharedRateLimiter
from gateway.settings import GatewaySettings
from rulesage import rulings
from rulesage.admission import Gate, Saturated
from rulesage.core.questions import BadQuestion, clean_question

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent


@dataclass
class Ctx:
    settings: GatewaySettings
    guard: Guard
    ask_limiter: SharedRateLimiter
    login_limiter: SharedRateLimiter
    pool: Any
    screening: Screening
    templates: Jinja2Templates
    road: RoadHandle
    admission: Gate


def ctx(request: Request) -> Ctx:
    return request.app.state.ctx  # type: ignore[no-any-return]


def session_id(request: Request) -> str:
    return str(getattr(request.state, "session_id", ""))


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _date(value: Any) -> str:
    try:
        return datetime.fromisoformat(str(value)).strftime("%-d %b %Y, %H:%M")
    except ValueError:
        return str(value)


def _score(value: Any, places: int = 6) -> str:
    return "—" if value is None else f"{float(value):.{places}f}"


def make_templates() -> Jinja2Templates:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,  # every page: whatever a user wrote is escaped; no template marks user text |safe
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["ms"] = wrench.format_ms
    env.filters["score"] = _score
    env.filters["pages"] = lambda p: wrench.page_label(p.get("page_start"), p.get("page_end"))
    env.filters["date"] = _date
    return Jinja2Templates(env=env)


def render(request: Request, name: str, status: int = 200, **values: Any) -> Response:
    c = ctx(request)
    sid = session_id(request)
    base = {
        "csrf": c.guard.csrf_token(sid) if sid else "",
        "max_chars": c.settings.rulesage_max_question_chars,
        "path": request.url.path,
    }
    response = c.templates.TemplateResponse(request, name, {**base, **values}, status_code=status)
    return response


class AskError(Exception):
    """An ask the gateway refuses, with the status and the plain message the player sees."""

    def __init__(self, status: int, message: str, retry_after: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


async def check_ask(c: Ctx, client: str, game: str, question: str) -> tuple[dict[str, Any], str]:
    """Rate limit, then the question's length and the game; returns (game, trimmed question)."""
    verdict = await c.ask_limiter.hit(client)
    if not verdict.allowed:
        raise AskError(
            429,
            f"Too many questions from you just now ({c.ask_limiter.spec}). "
            f"Please try again in {verdict.retry_after_s} seconds.",
            verdict.retry_after_s,
        )
    try:
        question = clean_question(question, c.settings.rulesage_max_question_chars)
    except BadQuestion as exc:
        raise AskError(400, str(exc)) from None
    async with c.pool.connection() as conn:
        found = await shelf.game(conn, game)
    if found is None:
        raise AskError(404, "There is no such game on the shelf.")
    return found, question


def as_ask_error(exc: BaseException) -> AskError | None:
    """The road's BadQuestion as a 400 with its own message; None for anything else."""
    if isinstance(exc, BadQuestion):
        return AskError(400, str(exc) or "That question cannot be asked.")
    return None


@contextlib.asynccontextmanager
async def admitted(c: Ctx) -> AsyncIterator[None]:
    """A turn on the road, or AskError 503 with Retry-After when the queue is full or the wait too long."""
    try:
        async with c.admission.slot(c.settings.rulesage_ask_queue_wait_s):
            yield
    except Saturated as exc:
        raise AskError(
            503, f"RuleSage is busy answering other players ({exc}). Please ask again shortly.", retry_after=5
        ) from None


async def ask(c: Ctx, game: str, question: str) -> dict[str, Any]:
    """The whole road (search + answer + store), then the doorman in the background."""
    try:
        async with admitted(c):
            ruling = (await c.road.get().ask(game, question)).to_json()
    except AskError:
        raise
    except Exception as exc:
        mapped = as_ask_error(exc)
        if mapped:
            raise mapped from None
        raise
    c.screening.schedule(str(ruling["id"]), str(ruling.get("question", question)))
    return ruling


def is_admin(c: Ctx, request: Request, *, cookie: bool) -> bool:
    """Whether the request carries the admin's credentials: the bearer token, or (pages only, ``cookie``)
    the admin cookie of this session. HTTP 403 when no admin token is configured: the queue is closed."""
    if not c.guard.admin_open:
        raise HTTPException(403, "The review queue is closed: no admin token is configured.")
    if cookie and c.guard.admin_cookie_ok(session_id(request), request.cookies.get(ADMIN_COOKIE)):
        return True
    return c.guard.bearer_ok(request.headers.get("authorization"))


def require_api_admin(request: Request) -> None:
    """The JSON API's admin check, as a dependency: the bearer token or 401."""
    if not is_admin(ctx(request), request, cookie=False):
        raise HTTPException(401, "The review queue needs the admin token (Authorization: Bearer ...).")


AdminDep = Annotated[None, Depends(require_api_admin)]


async def asked_before(conn: Any, rid: str) -> list[dict[str, Any]]:
    """A ruling's "asked before" list as of now (rulesage.rulings.asked_before); [] when the lookup fails:
    the page and the JSON of a ruling never fail because of its earlier rulings."""
    try:
        return await rulings.asked_before(conn, rid)
    except Exception:
        log.exception("asked before: lookup failed for %s", rid)
        return []
