"""Asking through the gateway: rate limits, the length cap, unknown games, the ask road end to end (with the
mesh's fusion/rerank/answer services deliberately unreachable, so the road degrades inside the ruling), the
streamed ask, and the doorman screening a fresh ruling in the background."""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from tests.support.gateway_fixtures import seed_shelf, throwaway_database

pytestmark = pytest.mark.integration
GAME = "dnd-5e-srd"


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with throwaway_database() as u:
        seed_shelf(u)
        yield u


@pytest.fixture()
def dead_mesh(monkeypatch: pytest.MonkeyPatch) -> str:
    """Point the road's services and the doorman at a port nothing listens on."""
    addr = f"127.0.0.1:{_dead_port()}"
    for name in ("FUSION", "RERANK", "ANSWER", "DOORMAN"):
        monkeypatch.setenv(f"RULESAGE_{name}_ADDR", addr)
    return addr


def _client(url: str, doorman: str, rate: str = "100/minute") -> TestClient:
    s = GatewaySettings(rulesage_ask_rate=rate, rulesage_sweep_interval_s=0, rulesage_session_secret="t")
    return TestClient(create_app(s, database_url=url, doorman_address=doorman))


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert m
    return m.group(1)


def _wait_state(c: TestClient, rid: str, timeout: float = 20) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        ruling = c.get(f"/api/rulings/{rid}").json()
        if ruling["public_state"] != "pending" or time.monotonic() > deadline:
            return ruling
        time.sleep(0.1)


def test_asks_are_rate_limited_per_client(url: str, dead_mesh: str) -> None:
    with _client(url, dead_mesh, rate="2/minute") as c:
        codes = [c.post("/api/ask", json={"game": GAME, "question": ""}).status_code for _ in range(3)]
        assert codes == [400, 400, 429]
        refused = c.post("/api/ask", json={"game": GAME, "question": "Does reach matter?"})
        assert refused.status_code == 429
        assert "Too many questions" in refused.json()["error"]
        assert 1 <= int(refused.headers["retry-after"]) <= 61
        page = c.get(f"/games/{GAME}").text
        form = c.post(f"/games/{GAME}/ask", data={"question": "Does reach matter?", "csrf": _csrf(page)})
        assert form.status_code == 429 and "Too many questions" in form.text


def test_question_length_is_capped_with_a_clear_message(url: str, dead_mesh: str) -> None:
    with _client(url, dead_mesh) as c:
        resp = c.post("/api/ask", json={"game": GAME, "question": "x" * 1501})
        assert resp.status_code == 400
        assert resp.json() == {
            "error": "Your question is 1,501 characters long; the limit is 1,500. Please shorten it."
        }
        assert c.post("/api/ask", json={"game": GAME, "question": "   "}).json() == {
            "error": "The question is empty: please type a question about the game's rules."
        }
        page = c.get(f"/games/{GAME}").text
        long_q = "<b>x</b>" * 200
        form = c.post(f"/games/{GAME}/ask", data={"question": long_q, "csrf": _csrf(page)})
        assert form.status_code == 400 and "the limit is 1,500" in form.text
        assert "&lt;b&gt;x&lt;/b&gt;" in form.text and "<b>x</b>" not in form.text  # kept, escaped


def test_unknown_game_and_missing_csrf(url: str, dead_mesh: str) -> None:
    with _client(url, dead_mesh) as c:
        assert c.post("/api/ask", json={"game": "no-such-game", "question": "Hi?"}).status_code == 404
        assert c.post(f"/games/{GAME}/ask", data={"question": "Hi?"}).status_code == 403
        assert c.post("/api/ask/stream", data={"game": GAME, "question": "Hi?"}).status_code == 403


def test_an_ask_degrades_inside_the_ruling_and_the_doorman_down_holds_it(url: str, dead_mesh: str) -> None:
    with _client(url, dead_mesh) as c:
        resp = c.post("/api/ask", json={"game": GAME, "question": "Can I attack twice with two weapons?"})
        assert resp.status_code == 201, resp.text
        ruling = resp.json()
        rid = ruling["id"]
        assert resp.headers["location"] == f"/rulings/{rid}"
        assert ruling["verdict"] == "unavailable"
        assert ruling["wrench"]["fusion"]["state"] == "down"
        assert ruling["wrench"]["search_span_ms"] >= 0
        settled = _wait_state(c, rid)
        assert settled["public_state"] == "held"
        assert settled["public_reason"].startswith("doorman unavailable")
        assert rid not in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        page = c.get(f"/rulings/{rid}").text
        assert "Answer unavailable" in page and "Held for review" in page


def test_the_page_form_posts_and_redirects_without_javascript(url: str, dead_mesh: str) -> None:
    with _client(url, dead_mesh) as c:
        page = c.get(f"/games/{GAME}").text
        resp = c.post(
            f"/games/{GAME}/ask",
            data={"question": "Is a natural 20 always a hit?", "csrf": _csrf(page)},
            follow_redirects=False,
        )
        assert resp.status_code == 303 and resp.headers["location"].startswith("/rulings/")
        assert "Is a natural 20 always a hit?" in c.get(resp.headers["location"]).text


def test_the_streamed_ask_sends_passages_first_then_the_ruling(url: str, dead_mesh: str) -> None:
    with _client(url, dead_mesh) as c:
        page = c.get(f"/games/{GAME}").text
        with c.stream(
            "POST",
            "/api/ask/stream",
            data={"game": GAME, "question": "How far can I jump?", "csrf": _csrf(page)},
        ) as resp:
            assert resp.status_code == 200
            assert resp.headers["content-type"].startswith("text/event-stream")
            body = "".join(resp.iter_text())
        events = [
            (m.group(1), json.loads(m.group(2))) for m in re.finditer(r"event: (\w+)\ndata: (.*)\n\n", body)
        ]
        assert [name for name, _ in events] == ["searching", "passages", "ruling"]
        assert events[1][1]["passages"] == []  # the mesh is down: nothing found, said so rather than failing
        rid = events[2][1]["id"]
        assert events[2][1]["url"] == f"/rulings/{rid}"
        assert c.get(f"/api/rulings/{rid}").json()["question"] == "How far can I jump?"
