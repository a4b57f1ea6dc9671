"""The gateway against a real Postgres (a throwaway database): pages, API, escaping, errors, ratings."""

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

XSS_QUESTION = '<script>alert("q")</script><img src=x onerror=alert(1)> can the robber "move"?'
XSS_ANSWER = "Yes.</p><script>alert('a')</script>\n\n<iframe src=//evil></iframe>"
XSS_QUOTE = "<b onmouseover=alert(2)>robber</b>"


def settings(**overrides: object) -> GatewaySettings:
    base: dict[str, object] = {
        "rulesage_sweep_interval_s": 0,
        "rulesage_session_secret": "test-secret",
        "rulesage_trace_url": "http://traces.local/trace/{trace_id}",
        "rulesage_wall_page_size": 2,
    }
    return GatewaySettings(**{**base, **overrides})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database() as u:
        seed_shelf(u)
        yield u


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[TestClient]:
    with TestClient(create_app(settings(), database_url=url, doorman_address="127.0.0.1:9")) as c:
        yield c


def _store(url: str, state: str = "cleared", **overrides: object) -> str:
    return asyncio.run(store(url, sample_ruling(**overrides), state, "test"))


def test_healthz_and_security_headers(client: TestClient) -> None:
    resp = client.get("/healthz")
    assert resp.status_code == 200 and resp.json() == {"status": "ok", "database": "ok"}
    page = client.get("/")
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "rs_session" in client.cookies


def test_shelf_lists_and_filters_games(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    for name in ("Catan", "Fate Core System", "Dungeons &amp; Dragons 5th Edition (SRD 5.1)"):
        assert name in page.text
    filtered = client.get("/", params={"q": "cat"}).text
    assert 'href="/games/catan"' in filtered and 'href="/games/fate-core"' not in filtered
    assert client.get("/", params={"q": "%"}).text.count('class="card game-card"') == 0
    games = client.get("/api/games", params={"family": "fate"}).json()["games"]
    assert [g["slug"] for g in games] == ["fate-core"] and games[0]["books"] == 1


def test_game_page_has_the_ask_box_and_books(client: TestClient) -> None:
    page = client.get("/games/catan")
    assert page.status_code == 200
    assert 'action="/games/catan/ask"' in page.text and 'maxlength="1500"' in page.text
    assert re.search(r'name="csrf" value="[0-9a-f]{64}"', page.text)
    assert "Catan rulebook" in page.text
    assert client.get("/games/no-such-game").status_code == 404


def test_permalink_shows_answer_citations_and_the_wrench(client: TestClient, url: str) -> None:
    rid = _store(url)
    page = client.get(f"/rulings/{rid}")
    assert page.status_code == 200
    html = page.text
    assert "If a goblin walks away from me, do I get a free attack?" in html
    assert "System Reference Document 5.1" in html and "p. 92" in html
    assert "3/(60+1) = 0.04918" in html  # derived, not the stored 0.0328
    assert "0.0328 " not in html
    assert "rerank.score" in html and "88 ms" in html and "2.6 s" in html
    assert "4bf92f3577b34da6a3ce929d0e0e4736" in html
    assert 'href="http://traces.local/trace/4bf92f3577b34da6a3ce929d0e0e4736"' in html
    assert "rulebook top passage kept" in html
    assert "The category leg abstained: its best guess, opportunity_attacks, had confidence" in html
    data = client.get(f"/api/rulings/{rid}").json()
    assert data["id"] == rid and data["wrench"]["voted"] == ["lexical", "dense", "aisle"]
    assert data["wrench_derived"]["ceiling_formula"] == "3/(60+1) = 0.04918"
    assert data["rating"] == {
        "mean": 2.0,
        "count": 0,
        "sum": 0,
        "effective": 2.0,
        "judged": False,
        "judge_score": None,
        "excluded": False,
    }
    assert data["asked_before"] == [] and data["retired_at"] is None


def test_the_page_says_the_deciding_quote_once(client: TestClient, url: str) -> None:
    """The extractive answer leads with the deciding sentence and its page; its card keeps the source only,
    and the supporting quote the answer does not print gets the full card."""
    base = sample_ruling()
    deciding, support = (c["quote"] for c in base["citations"])
    answer = f"The book says — System Reference Document 5.1, p. 92: “{deciding}”"
    rid = _store(url, answer=answer)
    html = client.get(f"/rulings/{rid}").text.split('id="read-h"')[0]  # the answer and its cards
    assert html.count(deciding) == 1, "the deciding sentence is printed once"
    assert html.count(support) >= 1 and f"<blockquote>{support}</blockquote>" in html
    assert "Quoted above:" in html and html.count('class="citation quoted-above"') == 1
    assert html.count('class="page"') >= 2, "both cards keep their page"


def test_the_wrench_shows_the_category_call_and_its_sections(client: TestClient, url: str) -> None:
    wrench = sample_ruling()["wrench"]
    call = {
        "name": "opportunity_attacks",
        "best": "opportunity_attacks",
        "confidence": 0.87,
        "threshold": 0.5,
        "sections": ["Combat > Actions in Combat"],
        "runner_up": "movement",
        "runner_up_confidence": 0.09,
    }
    arms = [a if a["arm"] != "category" else {**a, "hits": 12, "category": call} for a in wrench["arms"]]
    rid = _store(url, wrench={**wrench, "arms": arms, "voted": [*wrench["voted"], "category"]})
    html = client.get(f"/rulings/{rid}").text
    assert "Classified as <strong>opportunity_attacks</strong>" in html
    assert "runner-up movement" in html and "Sections: Combat &gt; Actions in Combat" in html
    assert "4/(60+1) = 0.06557" in html
    data = client.get(f"/api/rulings/{rid}").json()
    (cat,) = [a["category"] for a in data["wrench"]["arms"] if a["arm"] == "category"]
    assert cat["name"] == "opportunity_attacks" and cat["confidence"] == 0.87


def test_user_text_is_escaped_on_the_wall_and_the_permalink(client: TestClient, url: str) -> None:
    rid = _store(
        url,
        question=XSS_QUESTION,
        answer=XSS_ANSWER,
        citations=[{**sample_ruling()["citations"][0], "quote": XSS_QUOTE, "doc_title": "<i>Book</i>"}],
    )
    for path in (f"/rulings/{rid}", "/wall", "/", "/games/dnd-5e-srd"):
        html = client.get(path).text
        assert "<script>alert" not in html, path
        assert "<img src=x" not in html and "<iframe" not in html and "<b onmouseover" not in html, path
        assert "&lt;script&gt;alert(" in html, path
    permalink = client.get(f"/rulings/{rid}").text
    assert "&lt;b onmouseover=alert(2)&gt;robber&lt;/b&gt;" in permalink
    assert "&lt;i&gt;Book&lt;/i&gt;" in permalink
    assert client.get(f"/api/rulings/{rid}").json()["question"] == XSS_QUESTION  # JSON keeps the text as is


def test_wall_shows_cleared_only_newest_first_paginated(url: str) -> None:
    with throwaway_database() as fresh:
        seed_shelf(fresh)
        ids = [_store(fresh, question=f"Cleared question {i}?") for i in range(3)]
        held = _store(fresh, "held", question="Held question?")
        pending = _store(fresh, "pending", question="Pending question?")
        with TestClient(create_app(settings(), database_url=fresh, doorman_address="127.0.0.1:9")) as c:
            first = c.get("/api/wall").json()
            second = c.get("/api/wall", params={"page": 2}).json()
            assert first["total"] == 3 and first["pages"] == 2
            assert [r["id"] for r in first["rulings"] + second["rulings"]] == ids[::-1]
            html = c.get("/wall").text + c.get("/wall?page=2").text
            assert "Held question?" not in html and "Pending question?" not in html
            assert "Cleared question 0?" in html and 'rel="next"' in html
            # A held or pending ruling's permalink works for whoever has it, but says it is not on the wall.
            for rid in (held, pending):
                page = c.get(f"/rulings/{rid}")
                assert page.status_code == 200 and "not on the public wall" in page.text
                assert page.headers["x-robots-tag"] == "noindex"
            assert c.get("/api/wall", params={"page": 0}).status_code == 422


def test_ratings_use_the_bayesian_mean_one_per_client(client: TestClient, url: str) -> None:
    rid = _store(url)
    r1 = client.post(f"/api/rulings/{rid}/rating", json={"score": 3}).json()["rating"]
    crowd = ("mean", "count", "sum", "effective")
    assert [r1[k] for k in crowd] == [2.25, 1, 3, 2.25]  # (2.0x3 + 3) / (3 + 1)
    r2 = client.post(f"/api/rulings/{rid}/rating", json={"score": 1}).json()["rating"]
    assert [r2[k] for k in crowd] == [1.75, 1, 1, 1.75]  # the same client changed its mind
    mine = dict(client.cookies)
    client.cookies.clear()  # another browser: a new session, so another rater
    r3 = client.post(f"/api/rulings/{rid}/rating", json={"score": 3}).json()["rating"]
    client.cookies.clear()
    client.cookies.update(mine)
    assert [r3[k] for k in crowd] == [2.0, 2, 4, 2.0] and not r3["judged"]
    assert client.post(f"/api/rulings/{rid}/rating", json={"score": 4}).status_code == 422
    assert client.post("/api/rulings/nope/rating", json={"score": 2}).status_code == 404
    assert "2.00" in client.get(f"/rulings/{rid}").text


def test_rating_form_needs_the_csrf_token(client: TestClient, url: str) -> None:
    rid = _store(url)
    assert client.post(f"/rulings/{rid}/rating", data={"score": "3"}).status_code == 403
    page = client.get(f"/rulings/{rid}").text
    token = re.search(r'name="csrf" value="([0-9a-f]{64})"', page).group(1)  # type: ignore[union-attr]
    resp = client.post(f"/rulings/{rid}/rating", data={"score": "3", "csrf": token}, follow_redirects=False)
    assert resp.status_code == 303 and resp.headers["location"] == f"/rulings/{rid}?rated=1#rating"
    assert "your rating counts" in client.get(resp.headers["location"]).text


def test_errors_are_plain_messages(client: TestClient) -> None:
    html = client.get("/rulings/does-not-exist")
    assert html.status_code == 404 and "No ruling has that address." in html.text
    api = client.get("/api/rulings/does-not-exist")
    assert api.status_code == 404 and api.json() == {"error": "No ruling has that address."}
    bad = client.post(
        "/api/rulings/x/rating", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert bad.status_code == 422 and set(bad.json()) == {"error"}
    assert client.get("/nowhere").status_code == 404


def test_no_stack_trace_reaches_a_page_or_json(url: str) -> None:
    with throwaway_database() as broken:
        seed_shelf(broken)
        rid = _store(broken)
        with psycopg.connect(broken, autocommit=True) as conn:
            conn.execute("DROP TABLE ratings")  # every ruling read now fails inside the handler
        app = create_app(settings(), database_url=broken, doorman_address="127.0.0.1:9")
        with TestClient(app, raise_server_exceptions=False) as c:
            for path in (f"/rulings/{rid}", f"/api/rulings/{rid}", "/wall", "/api/wall"):
                resp = c.get(path)
                assert resp.status_code == 500, path
                for leak in ("Traceback", "psycopg", "ratings", 'File "', "UndefinedTable"):
                    assert leak not in resp.text, (path, leak)
                assert "Something went wrong on our side" in resp.text


def test_openapi_document_lists_the_api(client: TestClient) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    for p in (
        "/api/ask",
        "/api/rulings/{rid}",
        "/api/games",
        "/api/wall",
        "/api/admin/queue",
        "/api/admin/rulings/{rid}/{action}",
        "/api/rulings/{rid}/rating",
    ):
        assert p in paths, p
