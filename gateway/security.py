"""Sessions, CSRF tokens, the admin token and per-client rate limits.

- Every browser gets an opaque random session id in an HttpOnly cookie. A form's CSRF token is
  HMAC(secret, "csrf:" + session id): a page on another site can neither read it nor forge it.
- The review queue opens only when RULESAGE_ADMIN_TOKEN is set. The JSON API takes it as a Bearer header;
  the pages exchange it once (login form) for a cookie bound to the session: HMAC(token, "admin:" + sid).
  Every comparison is hmac.compare_digest.
- Asks and wrong admin tokens are rate limited per client address (moving window). In the gateway the counts
  live in Postgres (SharedRateLimiter), so every replica reads the same bucket: a player gets the configured
  limit however many replicas the autoscaler runs. RateLimiter keeps them in one process's memory (tests,
  tools).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
import secrets
import time
from dataclasses import dataclass
from typing import Any

import limits
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

SESSION_COOKIE = "rs_session"
ADMIN_COOKIE = "rs_admin"


def new_session_id() -> str:
    return secrets.token_urlsafe(24)


def valid_session_id(value: str | None) -> bool:
    return bool(value) and 16 <= len(value or "") <= 64 and all(c.isalnum() or c in "-_" for c in value or "")


class Guard:
    def __init__(self, secret: str, admin_token: str) -> None:
        self._secret = secret.encode() if secret else secrets.token_bytes(32)
        self._admin = admin_token.encode()

    def csrf_token(self, session_id: str) -> str:
        return hmac.new(self._secret, b"csrf:" + session_id.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session_id: str, token: str | None) -> bool:
        if not session_id or not token:
            return False
        return hmac.compare_digest(self.csrf_token(session_id).encode(), token.encode())

    @property
    def admin_open(self) -> bool:
        """False when no admin token is configured: the queue is then closed to everyone."""
        return bool(self._admin)

    def token_ok(self, presented: str | None) -> bool:
        if not self._admin or not presented:
            return False
        return hmac.compare_digest(presented.encode(), self._admin)

    def bearer_ok(self, authorization: str | None) -> bool:
        scheme, _, token = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and self.token_ok(token.strip())

    def admin_cookie(self, session_id: str) -> str:
        return hmac.new(self._admin, b"admin:" + session_id.encode(), hashlib.sha256).hexdigest()

    def admin_cookie_ok(self, session_id: str, value: str | None) -> bool:
        if not self._admin or not session_id or not value:
            return False
        return hmac.compare_digest(self.admin_cookie(session_id).encode(), value.encode())

    def client_key(self, session_id: str) -> str:
        """A stable, non-reversible rater id for a session (ratings store no raw cookie)."""
        return hmac.new(self._secret, b"rater:" + session_id.encode(), hashlib.sha256).hexdigest()[:32]


@dataclass(frozen=True)
class Limit:
    allowed: bool
    retry_after_s: int


class RateLimiter:
    """Per-client moving-window limits (e.g. "6/minute"); every listed window must have room."""

    def __init__(self, spec: str) -> None:
        self.items = limits.parse_many(spec)
        self.spec = spec
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    def peek(self, client: str) -> Limit:
        """Whether ``client`` has room left, without spending any."""
        for item in self.items:
            if not self._limiter.test(item, client):
                stats = self._limiter.get_window_stats(item, client)
                return Limit(False, max(1, int(stats.reset_time - time.time()) + 1))
        return Limit(True, 0)

    def hit(self, client: str) -> Limit:
        verdict = self.peek(client)
        if verdict.allowed:
            for item in self.items:
                self._limiter.hit(item, client)
        return verdict


class SharedRateLimiter:
    """The same moving windows as RateLimiter, counted in Postgres (table rate_hits) so that every gateway
    replica shares them. A check and its hit hold a transaction-scoped advisory lock on (bucket, client), so
    two replicas cannot both let the last request of a window through. Fails closed: if Postgres is down the
    request fails (503), it is never let through uncounted."""

    def __init__(self, pool: Any, bucket: str, spec: str) -> None:
        self.pool = pool
        self.bucket = bucket
        self.spec = spec
        self.items = limits.parse_many(spec)
        self.windows = [(item.amount, float(item.get_expiry())) for item in self.items]
        self.longest_s = max(w for _, w in self.windows)

    async def _check(self, conn: Any, client: str) -> Limit:
        for amount, window_s in self.windows:
            cur = await conn.execute(
                "SELECT at FROM rate_hits WHERE bucket = %s AND client = %s"
                " AND at > clock_timestamp() - make_interval(secs => %s) ORDER BY at DESC OFFSET %s LIMIT 1",
                (self.bucket, client, window_s, amount - 1),
            )
            row = await cur.fetchone()
            if row is not None:  # `amount` hits inside the window: full until the oldest of them ages out
                cur = await conn.execute(
                    "SELECT extract(epoch FROM (%s + make_interval(secs => %s)) - clock_timestamp())",
                    (row[0], window_s),
                )
                left = (await cur.fetchone())[0]
                return Limit(False, max(1, math.ceil(float(left))))
        return Limit(True, 0)

    async def peek(self, client: str) -> Limit:
        async with self.pool.connection() as conn:
            return await self._check(conn, client)

    async def hit(self, client: str) -> Limit:
        async with self.pool.connection() as conn, conn.transaction():
            await conn.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"rate:{self.bucket}:{client}",)
            )
            verdict = await self._check(conn, client)
            if verdict.allowed:
                await conn.execute(
                    "INSERT INTO rate_hits (bucket, client) VALUES (%s, %s)", (self.bucket, client)
                )
            await conn.execute(
                "DELETE FROM rate_hits WHERE bucket = %s AND client = %s"
                " AND at < clock_timestamp() - make_interval(secs => %s)",
                (self.bucket, client, self.longest_s),
            )
            if random.random() < 0.01:  # now and then, everyone's expired rows too
                await conn.execute(
                    "DELETE FROM rate_hits WHERE at < clock_timestamp() - make_interval(secs => %s)",
                    (max(self.longest_s, 86400.0),),
                )
        return verdict
