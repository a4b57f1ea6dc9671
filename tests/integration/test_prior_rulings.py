"""Prior rulings against a real Postgres (a throwaway database): the judge's rating over the crowd's
Bayesian mean, the exclusion rule, retiring, which earlier rulings are offered as "asked before" (same game,
answered, cleared, not retired, well rated, near enough, never the ruling itself), the road's lookup when it
has no vector or fails, and the list on the ruling page and in the JSON."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from rulesage import db, rulings
from rulesage.road import Road, SearchOutcome
from tests.support.gateway_fixtures import sample_ruling, seed_shelf, store, throwaway_database

pytestmark = pytest.mark.integration
TOKEN = "judge-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
GAME = "dnd-5e-srd"
MODEL = "all-MiniLM-L6-v2"  # sample_ruling's models.embed


def unit(angle: float, dims: int = 384) -> list[float]:
    """A unit vector at ``angle`` from the first axis: its cosine distance to unit(0) is 1 - cos(angle)."""
    return [math.cos(angle), math.sin(angle)] + [0.0] * (dims - 2)


def at(distance: float) -> list[float]:
    return unit(math.acos(1.0 - distance))


@pytest.fixture()
def url() -> Iterator[str]:
    with throwaway_database() as u:
        seed_shelf(u)
        yield u


def _client(url: str) -> TestClient:
    s = GatewaySettings(rulesage_admin_token=TOKEN, rulesage_sweep_interval_s=0, rulesage_session_secret="t")
    return TestClient(create_app(s, database_url=url, doorman_address="127.0.0.1:9"))


def _save(url: str, question: str, vec: list[float], state: str = "cleared", **overrides: Any) -> str:
    return asyncio.run(store(url, sample_ruling(question=question, **overrides), state, "test", vec))


async def _rate(url: str, rid: str, scores: Sequence[int], judge: Sequence[int] = ()) -> dict[str, Any]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        out: dict[str, Any] = await rulings.rating(conn, rid)
        for i, score in enumerate(scores):
            out = await rulings.rate(conn, rid, score, f"reader-{i}") or {}
        for score in judge:
            out = await rulings.rate(conn, rid, score, rulings.JUDGE_CLIENT, judge=True) or {}
        return out


async def _priors(url: str, vec: list[float], **kw: Any) -> list[dict[str, Any]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        return await rulings.priors(conn, GAME, vec, MODEL, **kw)


def test_the_judge_overrides_the_crowd_and_low_calls_with_five_votes_are_excluded(url: str) -> None:
    rid = _save(url, "Judged question?", at(0.1))
    five_ones = asyncio.run(_rate(url, rid, [1, 1, 1, 1, 1]))
    assert (five_ones["mean"], five_ones["count"], five_ones["sum"]) == (1.375, 5, 5)  # (6 + 5) / (3 + 5)
    assert five_ones["effective"] == 1.375 and not five_ones["judged"] and five_ones["excluded"]
    with _client(url) as c:
        assert c.post(f"/api/admin/rulings/{rid}/judge", json={"score": 3}).status_code == 401
        judged = c.post(f"/api/admin/rulings/{rid}/judge", json={"score": 3}, headers=AUTH).json()["rating"]
        assert judged["effective"] == 3.0 and judged["judged"] and judged["judge_score"] == 3
        assert (judged["mean"], judged["count"], judged["sum"]) == (1.375, 5, 5)  # the crowd's, unchanged
        assert not judged["excluded"]
        # the admin's bearer token on the public rating route is a judge's rating too; the latest one counts
        latest = c.post(f"/api/rulings/{rid}/rating", json={"score": 1}, headers=AUTH).json()["rating"]
        assert latest["effective"] == 1.0 and latest["judge_score"] == 1 and latest["count"] == 5
        assert latest["excluded"]
        assert c.get(f"/api/rulings/{rid}").json()["rating"] == latest
        assert c.post("/api/admin/rulings/nope/judge", json={"score": 2}, headers=AUTH).status_code == 404
        page = c.get(f"/rulings/{rid}").text
        assert "1.00" in page and "judge-mark" in page
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT score FROM ratings WHERE ruling_id = %s AND judge ORDER BY id", (rid,)
        ).fetchall()
    assert [r[0] for r in rows] == [3, 1]  # every judge rating is kept; the latest is the score


def test_priors_are_the_nearest_well_rated_answered_cleared_rulings_of_the_game(url: str) -> None:
    near = _save(url, "near", at(0.10))
    judged_up = _save(url, "crowd says wrong, the judge says right", at(0.20))
    asyncio.run(_rate(url, judged_up, [1, 1, 1, 1, 1], judge=[3]))
    second = _save(url, "second", at(0.30))
    fourth = _save(url, "fourth, past the limit of three", at(0.35))
    # each of these is near enough but may not be offered
    refused = {
        "too far": _save(url, "too far", at(0.50)),
        "held": _save(url, "held", at(0.05), state="held"),
        "pending": _save(url, "pending", at(0.05), state="pending"),
        "not in the book": _save(url, "not in the book", at(0.05), verdict="not_in_book"),
        "another game": _save(url, "another game", at(0.0), game="catan"),
        "another model": _save(url, "another model", at(0.0), models={"embed": "other-embedder"}),
        "another dimension": _save(url, "another dimension", at(0.0)[:128]),
        "no vector": _save(url, "no vector", []),
        "retired": _save(url, "retired", at(0.05)),
        "excluded": _save(url, "excluded by five low votes", at(0.05)),
        "judged down": _save(url, "a judge says wrong", at(0.05)),
        "below 2.0": _save(url, "one reader says wrong", at(0.05)),
    }
    asyncio.run(_rate(url, refused["excluded"], [1, 1, 1, 1, 1]))
    asyncio.run(_rate(url, refused["judged down"], [3, 3], judge=[1]))
    asyncio.run(_rate(url, refused["below 2.0"], [1]))  # (6 + 1) / 4 = 1.75
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT question_vec IS NULL FROM rulings WHERE id = %s", (refused["no vector"],)
        ).fetchone() == (True,)
    asyncio.run(_retire(url, refused["retired"], "the errata changed this"))

    found = asyncio.run(_priors(url, unit(0.0)))
    assert [p["id"] for p in found] == [near, judged_up, second], [p["question"] for p in found]
    assert [p["distance"] for p in found] == pytest.approx([0.10, 0.20, 0.30], abs=1e-3)
    assert found[1]["rating"]["judged"] and found[1]["rating"]["effective"] == 3.0
    assert all(p["kind"] == "earlier_ruling" and p["url"] == f"/rulings/{p['id']}" for p in found)
    more = asyncio.run(_priors(url, unit(0.0), limit=10))
    assert [p["id"] for p in more] == [near, judged_up, second, fourth]
    assert not set(refused.values()) & {p["id"] for p in more}
    assert asyncio.run(_priors(url, [])) == []  # no vector: no priors

    # a stored ruling's own list: never itself, only rulings made before it
    asked = _save(url, "the new question", unit(0.0))
    later = _save(url, "asked after it", at(0.01))
    with _client(url) as c:
        listed = [p["id"] for p in c.get(f"/api/rulings/{asked}").json()["asked_before"]]
        assert listed == [near, judged_up, second]
        assert later not in listed and asked not in listed
        assert asked in [p["id"] for p in c.get(f"/api/rulings/{later}").json()["asked_before"]]


async def _retire(url: str, rid: str, reason: str) -> bool:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        return await rulings.retire(conn, rid, reason)


def test_asked_before_on_the_page_and_in_the_api_and_retiring_takes_a_ruling_out(url: str) -> None:
    earlier = _save(url, "Does a goblin leaving my reach provoke an attack?", at(0.2))
    judged = _save(url, "Can I take a swing at a goblin that runs away?", at(0.3))
    asyncio.run(_rate(url, judged, [], judge=[3]))
    rid = _save(url, "If a goblin walks away from me, do I get a free attack?", unit(0.0))
    with _client(url) as c:
        data = c.get(f"/api/rulings/{rid}").json()
        prior = data["asked_before"]
        assert [p["id"] for p in prior] == [earlier, judged]
        assert prior[0]["question"] == "Does a goblin leaving my reach provoke an attack?"
        assert prior[0]["url"] == f"/rulings/{earlier}" and prior[0]["kind"] == "earlier_ruling"
        assert prior[0]["rating"]["effective"] == 2.0 and prior[0]["rating"]["count"] == 0
        assert prior[1]["rating"]["judged"] and prior[1]["rating"]["judge_score"] == 3
        html = c.get(f"/rulings/{rid}").text
        section = html[html.index('id="asked-before"') :]
        section = section[: section.index("</section>")]
        assert "Asked before on RuleSage" in section and "not the book" in section
        assert f'href="/rulings/{earlier}"' in section and f'href="/rulings/{judged}"' in section
        assert "Does a goblin leaving my reach provoke an attack?" in section
        assert section.count("judge-mark") == 1 and "(0 votes)" in section
        assert html.index('id="asked-before"') > html.index('id="cites-h"')  # after the book's citations

        # retiring needs the token and a reason; the retired ruling stays readable and says why
        assert c.post(f"/api/admin/rulings/{earlier}/retire", json={"reason": "x"}).status_code == 401
        bad = c.post(f"/api/admin/rulings/{earlier}/retire", json={"reason": ""}, headers=AUTH)
        assert bad.status_code == 422
        blank = c.post(f"/api/admin/rulings/{earlier}/retire", json={"reason": "   "}, headers=AUTH)
        assert blank.status_code == 422
        assert c.post("/api/admin/rulings/nope/retire", json={"reason": "x"}, headers=AUTH).status_code == 404
        assert earlier in [r["id"] for r in c.get("/api/wall").json()["rulings"]]
        done = c.post(
            f"/api/admin/rulings/{earlier}/retire", json={"reason": "superseded by the errata"}, headers=AUTH
        ).json()
        assert done["id"] == earlier and done["retired_reason"] == "superseded by the errata"
        assert done["retired_at"]
        assert [p["id"] for p in c.get(f"/api/rulings/{rid}").json()["asked_before"]] == [judged]
        assert earlier not in c.get(f"/rulings/{rid}").text
        retired = c.get(f"/rulings/{earlier}")
        assert retired.status_code == 200 and 'id="retired"' in retired.text
        assert "was retired on" in retired.text and "superseded by the errata" in retired.text
        assert c.get(f"/api/rulings/{earlier}").json()["retired_reason"] == "superseded by the errata"
        assert earlier not in [r["id"] for r in c.get("/api/wall").json()["rulings"]]


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([0-9a-f]{64})"', html)
    assert m
    return m.group(1)


def test_the_judges_page_rates_and_retires_behind_the_login_and_csrf(url: str) -> None:
    rid = _save(url, "Judge me on the page?", at(0.1))
    with _client(url) as c:
        assert c.get(f"/admin/rulings/{rid}").status_code == 401
        assert c.post(f"/admin/rulings/{rid}/judge", data={"score": "1"}).status_code == 401
        token = _csrf(c.get("/admin/login").text)
        c.post("/admin/login", data={"token": TOKEN, "csrf": token})
        page = c.get(f"/admin/rulings/{rid}")
        assert page.status_code == 200 and "Rate as the judge" in page.text
        assert c.post(f"/admin/rulings/{rid}/judge", data={"score": "1"}).status_code == 403  # no CSRF
        csrf = _csrf(page.text)
        ok = c.post(f"/admin/rulings/{rid}/judge", data={"score": "1", "csrf": csrf}, follow_redirects=False)
        assert ok.status_code == 303
        rating = c.get(f"/api/rulings/{rid}").json()["rating"]
        assert rating["judged"] and rating["effective"] == 1.0 and rating["count"] == 0
        assert c.post(f"/admin/rulings/{rid}/retire", data={"csrf": csrf, "reason": " "}).status_code == 400
        gone = c.post(
            f"/admin/rulings/{rid}/retire",
            data={"csrf": csrf, "reason": "wrong call"},
            follow_redirects=False,
        )
        assert gone.status_code == 303
        assert "wrong call" in c.get(f"/rulings/{rid}").text
        assert asyncio.run(_priors(url, unit(0.0))) == []


def _outcome(vec: list[float]) -> SearchOutcome:
    out = SearchOutcome(GAME, "D&D", "If a goblin walks away from me, do I get a free attack?")
    out.question_vector = vec
    out.models["embed"] = MODEL
    return out


def test_the_roads_lookup_degrades_and_never_fails_the_ask(url: str) -> None:
    prior = _save(url, "near", at(0.1))

    async def lookups() -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
        road = Road(url)
        await road.open()
        try:

            async def lookup(vec: list[float]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
                found, info = await road._priors(_outcome(vec))
                return found, info.to_json()

            results = [await lookup(unit(0.0))]
            results.append(await lookup([]))  # the embedder did not answer
            results.append(await lookup([math.nan] * 384))  # Postgres refuses the vector
            road.settings.rulesage_priors_deadline_s = 1e-6
            results.append(await lookup(unit(0.0)))
            return results
        finally:
            await road.close()

    ok, no_vector, failed, slow = asyncio.run(lookups())
    assert [p["id"] for p in ok[0]] == [prior] and ok[1]["state"] == "ok" and ok[1]["shown"] == [prior]
    assert no_vector == ([], no_vector[1]) and no_vector[1]["state"] == "skipped"
    assert "no question vector" in no_vector[1]["detail"]
    assert failed[0] == [] and failed[1]["state"] == "failed" and "answered without" in failed[1]["detail"]
    assert slow[0] == [] and slow[1]["state"] == "timeout"
    for _, info in (ok, no_vector, failed, slow):
        assert info["max_distance"] == rulings.PRIOR_MAX_DISTANCE


def test_the_threshold_keeps_a_paraphrase_and_drops_another_question(url: str) -> None:
    """Real all-MiniLM-L6-v2 question embeddings against PRIOR_MAX_DISTANCE."""
    from rulesage.embed import shared_embedder

    embedder = shared_embedder()
    questions = [
        "If my checker gets hit, where does it go and how do I bring it back?",
        "Is a natural 20 always a hit?",
        "Can I attack twice with two weapons?",
        "How far can I jump?",
    ]
    asked = "Does rolling a 20 on an attack always hit?"
    vecs = embedder.embed_queries([*questions, asked])
    ids = [_save(url, q, [float(x) for x in v]) for q, v in zip(questions, vecs[:-1], strict=True)]
    found = asyncio.run(_priors(url, [float(x) for x in vecs[-1]]))
    assert [p["id"] for p in found] == [ids[1]], [(p["question"], p["distance"]) for p in found]
    assert found[0]["distance"] < rulings.PRIOR_MAX_DISTANCE


def test_the_ask_without_a_mesh_stores_no_vector_and_shows_no_priors(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _save(url, "If a goblin walks away from me, do I get a free attack?", unit(0.0))
    for name in ("FUSION", "RERANK", "ANSWER", "DOORMAN"):
        monkeypatch.setenv(f"RULESAGE_{name}_ADDR", "127.0.0.1:9")
    with _client(url) as c:
        resp = c.post(
            "/api/ask",
            json={"game": GAME, "question": "If a goblin walks away from me, do I get a free attack?"},
        )
        assert resp.status_code == 201, resp.text
        ruling = resp.json()
        assert ruling["wrench"]["priors"]["state"] == "skipped" and ruling["asked_before"] == []
        assert c.get(f"/api/rulings/{ruling['id']}").json()["asked_before"] == []
        assert "no question vector" in c.get(f"/rulings/{ruling['id']}").text
    with db.connection(url) as conn:
        row = conn.execute("SELECT question_vec FROM rulings WHERE id = %s", (ruling["id"],)).fetchone()
    assert row == (None,)
