"""The gateway app factory: ``create_app()`` for tests and for ``python -m gateway``.

Middleware gives every browser a session cookie (for CSRF tokens) and every response strict security headers
(a same-origin content security policy: no inline script, nothing from another host). Exception handlers
return a plain message: no stack trace reaches a page or a JSON body.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.staticfiles import StaticFiles
from psycopg_pool import PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from gateway import api, pages
from gateway.asking import RoadHandle
from gateway.context import HERE, Ctx, ctx, make_templates, render
from gateway.screening import Screening
from gateway.security import SESSION_COOKIE, Guard, SharedRateLimiter, new_session_id, valid_session_id
from gateway.settings import GatewaySettings, load_settings
from rulesage import db, mesh
from rulesage.admission import Gate

log = logging.getLogger(__name__)

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
GENERIC_ERROR = "Something went wrong on our side. Please try again in a moment."


def create_app(
    settings: GatewaySettings | None = None,
    *,
    database_url: str | None = None,
    doorman_address: str | None = None,
) -> FastAPI:
    """Build the app. Settings default to the environment; the database to rulesage.db.database_url();
    the doorman to mesh.address("doorman") (RULESAGE_DOORMAN_ADDR)."""
    settings = settings or load_settings()
    url = database_url or db.database_url()
    # the pages' queries and the road's (catalog, priors, the stored ruling) share it: 8 + the road's 4
    pool = db.async_pool(url, min_size=1, max_size=12)
    screening = Screening(
        pool,
        doorman_address or mesh.address("doorman"),
        timeout_s=settings.rulesage_doorman_timeout_s,
        sweep_interval_s=settings.rulesage_sweep_interval_s,
        sweep_grace_s=settings.rulesage_sweep_grace_s,
    )

    road = RoadHandle(pool)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await pool.open(wait=False)
        await screening.start()
        try:
            yield
        finally:
            await screening.stop()
            await road.close()
            await pool.close()

    app = FastAPI(
        title="RuleSage",
        summary="Board-game rulings that quote the book.",
        version="1",
        lifespan=lifespan,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/openapi.json",
    )
    app.state.ctx = Ctx(
        settings=settings,
        guard=Guard(settings.rulesage_session_secret, settings.rulesage_admin_token),
        # shared by every replica (Postgres), keyed on the player's address (see RULESAGE_FORWARDED_ALLOW_IPS)
        ask_limiter=SharedRateLimiter(pool, "ask", settings.rulesage_ask_rate),
        login_limiter=SharedRateLimiter(pool, "login", settings.rulesage_login_rate),
        pool=pool,
        screening=screening,
        templates=make_templates(),
        road=road,
        admission=Gate(settings.rulesage_ask_concurrency, settings.rulesage_ask_queue),
    )

    @app.middleware("http")
    async def session_and_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        sid = request.cookies.get(SESSION_COOKIE)
        fresh = not valid_session_id(sid)
        request.state.session_id = new_session_id() if fresh else sid
        request.state.fresh_session = fresh
        response = await call_next(request)
        if fresh:
            response.set_cookie(
                SESSION_COOKIE,
                request.state.session_id,
                httponly=True,
                samesite="lax",
                secure=settings.rulesage_secure_cookies,
                max_age=30 * 24 * 3600,
            )
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if request.url.path.startswith(("/api/", "/admin")):
            response.headers.setdefault("Cache-Control", "no-store")
        return response

    _install_error_handlers(app)
    app.include_router(api.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/healthz", summary="Liveness and the database's reachability")
    async def healthz(request: Request) -> JSONResponse:
        try:
            async with ctx(request).pool.connection(timeout=3) as conn:
                await conn.execute("SELECT 1")
        except Exception:
            return JSONResponse({"status": "degraded", "database": "unreachable"}, status_code=503)
        return JSONResponse({"status": "ok", "database": "ok"})

    return app


def _wants_json(request: Request) -> bool:
    return request.url.path.startswith("/api/") or request.url.path == "/healthz"


def _error(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    if _wants_json(request):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    try:
        response = render(request, "error.html", status=status, status_code=status, message=message)
    except Exception:  # the error page itself failed: plain text, still no trace
        log.exception("error page failed")
        response = Response(message, status_code=status, media_type="text/plain; charset=utf-8")
    for k, v in (headers or {}).items():
        response.headers[k] = v
    return response


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = exc.detail if isinstance(exc.detail, str) else "Request refused."
        if exc.status_code == 404 and detail == "Not Found":
            detail = "There is nothing at this address."
        if exc.status_code == 405:
            detail = "That method is not allowed here."
        return _error(request, exc.status_code, detail, dict(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        problems = []
        for err in exc.errors()[:5]:
            where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "form"))
            problems.append(f"{where or 'request'}: {err.get('msg', 'invalid')}")
        return _error(request, 422, "The request was not understood: " + "; ".join(problems) + ".")

    @app.exception_handler(psycopg.DataError)
    async def unstorable(request: Request, exc: psycopg.DataError) -> Response:
        # e.g. a NUL byte, which Postgres text cannot hold: the request is bad, not the service
        return _error(
            request, 400, "The request holds characters that cannot be stored or searched (a NUL byte?)."
        )

    @app.exception_handler(psycopg.OperationalError)
    @app.exception_handler(PoolTimeout)
    async def database_down(request: Request, exc: Exception) -> Response:
        log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
        return _error(
            request,
            503,
            "The database is unavailable right now; please try again shortly.",
            {"Retry-After": "5"},
        )

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _error(request, 500, GENERIC_ERROR)
