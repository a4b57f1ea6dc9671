"""The review queue's locks: the admin token (closed when unset), the login cookie, CSRF on every form."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import psycopg
import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from tests.support.gateway_fixtures import sample_ruling, seed_shelf, store, throwaway_database

pytestmark = pytest.mark.integration
TOKEN = "correct-horse-battery-staple"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database() as u:
        seed_shelf(u)
        yield u


def _app(url: str, token: str = TOKEN) -> TestClient:
    s = GatewaySettings(rulesage_admin_token=token, rulesage_sweep_interval_s=0, rulesage_login_rate="3/hour")
    return TestClient(create_app(s, database_url=url, doorman_address="127.0.0.1:9"))


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert m, "no CSRF token on the page"
    return m.group(1)


def _held(url: str, question: str) -> str:
    return asyncio.run(store(url, sample_ruling(question=question), "held", "contains an email address"))


def test_without_a_token_configured_the_queue_is_closed(url: str) -> None:
    with _app(url, token="") as c:
        assert c.get("/admin/queue").status_code == 403
        assert c.get("/api/admin/queue").status_code == 403
        assert c.get("/api/admin/queue", headers={"Authorization": "Bearer "}).status_code == 403
        assert c.post("/api/admin/rulings/x/clear", headers={"Authorization": "Bearer "}).status_code == 403
        page = c.get("/admin/login")
        assert page.status_code == 403 and "closed" in page.text


def test_api_refuses_a_missing_or_wrong_token(url: str) -> None:
    rid = _held(url, "API token question?")
    with _app(url) as c:
        assert c.get("/api/admin/queue").status_code == 401
        assert c.get("/api/admin/queue", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/api/admin/queue", headers={"Authorization": TOKEN}).status_code == 401
        assert c.post(f"/api/admin/rulings/{rid}/clear").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        queue = c.get("/api/admin/queue", headers=auth).json()["rulings"]
        assert rid in [r["id"] for r in queue]
        assert rid not in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        done = c.post(f"/api/admin/rulings/{rid}/clear", headers=auth, json={"reason": "fine"}).json()
        assert done == {"id": rid, "public_state": "cleared", "public_reason": "fine"}
        assert rid in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        assert c.post(f"/api/admin/rulings/{rid}/hold", headers=auth).json()["public_state"] == "held"
        assert rid not in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        assert c.post("/api/admin/rulings/nope/clear", headers=auth).status_code == 404
        assert c.post(f"/api/admin/rulings/{rid}/delete", headers=auth).status_code == 422


def test_queue_page_needs_login_and_every_form_needs_csrf(url: str) -> None:
    rid = _held(url, "Held with a form?")
    with _app(url) as c:
        assert c.get("/admin/queue").status_code == 401  # no token: the login form, not the queue
        login_page = c.get("/admin/login").text
        token = _csrf(login_page)
        # login without / with a wrong CSRF token
        assert c.post("/admin/login", data={"token": TOKEN}).status_code == 403
        assert c.post("/admin/login", data={"token": TOKEN, "csrf": "0" * 64}).status_code == 403
        # a wrong admin token
        wrong = c.post("/admin/login", data={"token": "guess", "csrf": token})
        assert wrong.status_code == 401 and "not right" in wrong.text
        assert c.get("/admin/queue").status_code == 401
        ok = c.post("/admin/login", data={"token": TOKEN, "csrf": token}, follow_redirects=False)
        assert ok.status_code == 303 and ok.headers["location"] == "/admin/queue"
        queue = c.get("/admin/queue")
        assert queue.status_code == 200 and "Held with a form?" in queue.text
        # clearing without the CSRF token is refused and changes nothing
        assert c.post(f"/admin/rulings/{rid}/clear").status_code == 403
        assert c.post(f"/admin/rulings/{rid}/clear", data={"csrf": "f" * 64}).status_code == 403
        assert rid not in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        done = c.post(f"/admin/rulings/{rid}/clear", data={"csrf": _csrf(queue.text)}, follow_redirects=False)
        assert done.status_code == 303
        assert rid in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        assert "Held with a form?" in c.get("/wall").text


def test_the_admin_cookie_is_bound_to_its_session(url: str) -> None:
    with _app(url) as c:
        token = _csrf(c.get("/admin/login").text)
        c.post("/admin/login", data={"token": TOKEN, "csrf": token})
        admin_cookie = c.cookies.get("rs_admin")
        assert admin_cookie and c.get("/admin/queue").status_code == 200
        c.cookies.clear()
        c.cookies.set("rs_admin", admin_cookie, path="/admin")  # stolen cookie, another session
        assert c.get("/admin/queue").status_code == 401


def test_wrong_tokens_are_rate_limited(url: str) -> None:
    # the lockout lives in Postgres, shared by replicas and kept across restarts: start from no wrong guesses
    # (an earlier test in this module made one)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM rate_hits WHERE bucket = 'login'")
    with _app(url) as c:
        token = _csrf(c.get("/admin/login").text)
        codes = [
            c.post("/admin/login", data={"token": f"guess{i}", "csrf": token}).status_code for i in range(5)
        ]
        assert codes[:3] == [401, 401, 401] and codes[3:] == [429, 429]
        # past the limit even the right token waits
        assert c.post("/admin/login", data={"token": TOKEN, "csrf": token}).status_code == 429
