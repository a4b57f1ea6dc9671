"""The card table over a real Postgres and real gRPC services: ingest (idempotent, updated in place, a bad
table failing alone), the cards a question names joining the search as lanes of their own, and the name
search behind the page's autocomplete. The shelf is tests/fixtures/cards-shelf.toml: a small card game
written for the tests, and a game without cards."""

from __future__ import annotations

import gzip
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from fastapi.testclient import TestClient

from gateway.app import create_app
from gateway.settings import GatewaySettings
from rulesage.ingest import cards as card_table
from rulesage.ingest.pipeline import ingest_shelf
from rulesage.v1 import fusion_pb2, fusion_pb2_grpc
from tests.integration.conftest import ROOT, Mesh, env, fresh_database

pytestmark = pytest.mark.integration
SHELF = ROOT / "tests" / "fixtures" / "cards-shelf.toml"
QUESTION = "I cast Grasp of Gloom on the Iron Golem. Does it die, or can it be regenerated?"


def cards_of(url: str) -> dict[str, tuple[str, str]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT name, oracle, digest FROM cards ORDER BY name").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def copy_shelf(tmp: Path) -> Path:
    """The card shelf in a folder of its own, so a test may change its files."""
    shutil.copytree(SHELF.parent / "cards", tmp / "cards")
    text = SHELF.read_text().replace("../../demo/", str(ROOT / "demo") + "/")
    (tmp / "shelf.toml").write_text(text)
    return tmp / "shelf.toml"


def write_table(path: Path, rows: list[dict[str, object]]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def read_rows(path: Path) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(x) for x in fh if x.strip()]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with fresh_database("rs_cards_") as u:
        summary = ingest_shelf(u, SHELF, progress=False)
        assert not summary.failed, summary.failed
        assert (summary.card_tables, summary.cards, summary.cards_written) == (1, 6, 6)
        assert summary.rulings_embedded == 3  # every ruling's vector, drawn once
        yield u


def search_mesh(url: str, **fusion_env: str) -> Mesh:
    """The four arms and fusion over ``url``; ``fusion_env`` sets fusion's settings."""
    from services.aisle.server import AisleService
    from services.category.server import CategoryService
    from services.dense.server import DenseService
    from services.fusion.server import FusionService
    from services.lexical.server import LexicalService

    m = Mesh(url)
    try:
        for name, factory in (
            ("lexical", LexicalService),
            ("dense", DenseService),
            ("aisle", AisleService),
            ("category", CategoryService),
        ):
            m.start(name, factory)
        m.start("fusion", FusionService, **fusion_env)
    except BaseException:
        m.close()
        raise
    return m


@pytest.fixture(scope="module")
def mesh(url: str) -> Iterator[Mesh]:
    m = search_mesh(url)
    try:
        yield m
    finally:
        m.close()


def fuse(addr: str, question: str, game: str = "duel") -> fusion_pb2.FuseResult:
    with grpc.insecure_channel(addr) as ch:
        return fusion_pb2_grpc.FusionStub(ch).Fuse(
            fusion_pb2.FuseRequest(question=question, game=game), timeout=30
        )


def test_ingest_stores_cards_names_and_rulings(url: str) -> None:
    with psycopg.connect(url) as conn:
        names = dict(conn.execute("SELECT key, plain FROM card_names").fetchall())
        rulings = conn.execute(
            "SELECT c.name, r.ord, r.text FROM card_rulings r JOIN cards c ON c.id = r.card_id ORDER BY 1, 2"
        ).fetchall()
    assert names["grasp of gloom"] is False and names["garruk wildspeaker"] is False
    assert names["garruk"] is False  # the one Garruk: its short name counts too
    # ordinary words count only where a question marks them, whatever the book says
    assert names["shock"] is True and names["darkness"] is True
    assert [r[0] for r in rulings] == ["Grasp of Gloom", "Skull Plating", "Skull Plating"]


def test_an_unchanged_table_is_not_read_again_and_a_changed_one_updates_in_place(tmp_path: Path) -> None:
    shelf = copy_shelf(tmp_path)
    table = tmp_path / "cards" / "duel-cards.jsonl.gz"
    with fresh_database("rs_cards_upd_") as u:
        first = ingest_shelf(u, shelf, progress=False)
        assert first.cards_written == 6
        before = cards_of(u)
        again = ingest_shelf(u, shelf, progress=False)
        assert (again.card_tables, again.cards, again.cards_written) == (1, 6, 0)
        assert (again.rulings_embedded, again.rulings_neighboured) == (0, 0)
        assert cards_of(u) == before

        rows = read_rows(table)
        rows = [r for r in rows if r["name"] != "Darkness"]  # a card dropped
        rows[0]["oracle"] = "Target creature gets -5/-5 until end of turn."  # a card changed
        rows[0]["rulings"] = ["A creature with toughness 0 or less goes to the discard pile.", "Second."]
        rows.append({"name": "Fresh Card", "type": "Instant", "oracle": "Draw a card.", "rulings": []})
        write_table(table, rows)
        changed = ingest_shelf(u, shelf, progress=False)
        assert not changed.failed
        assert (changed.cards, changed.cards_written) == (6, 2)  # the changed card and the new one
        assert changed.rulings_embedded == 2  # the changed card's rulings alone are drawn again
        assert changed.rulings_neighboured == 4  # and every ruling's nearest passages
        with psycopg.connect(u) as conn:
            unstamped = conn.execute(
                "SELECT count(*) FROM card_rulings r LEFT JOIN embedding_space s ON s.id = r.space_id"
                " WHERE r.embedding IS NULL OR NOT coalesce(s.active, false)"
            ).fetchone()
        assert unstamped == (0,)
        after = cards_of(u)
        assert "Darkness" not in after and "Fresh Card" in after
        assert after["Grasp of Gloom"][0].endswith("-5/-5 until end of turn.")
        assert after["Iron Golem"] == before["Iron Golem"]  # an unchanged card is not rewritten
        with psycopg.connect(u) as conn:
            assert not conn.execute("SELECT 1 FROM card_names WHERE key = 'darkness'").fetchall()

        # a new release of the book: the rulings keep their vectors and find their nearest passages again
        book = tmp_path / "cards" / "duel-rules.md"
        book.write_text(book.read_text() + "\n## Tokens\n\nA token is a creature made by an effect.\n")
        released = ingest_shelf(u, shelf, progress=False)
        assert released.documents == 1
        assert (released.rulings_embedded, released.rulings_neighboured) == (0, 4)
        with psycopg.connect(u) as conn:
            live = {r[0] for r in conn.execute("SELECT id FROM live_passages")}
            near = [r[0] for r in conn.execute("SELECT near FROM card_rulings")]
        assert near and all(n and set(n) <= live for n in near)


def test_a_table_without_rulings_loads_and_draws_none(tmp_path: Path) -> None:
    shelf = copy_shelf(tmp_path)
    table = tmp_path / "cards" / "duel-cards.jsonl.gz"
    write_table(table, [{**r, "rulings": []} for r in read_rows(table)])
    with fresh_database("rs_cards_norulings_") as u:
        summary = ingest_shelf(u, shelf, progress=False)
        assert not summary.failed, summary.failed
        assert (summary.cards, summary.rulings_embedded, summary.rulings_neighboured) == (6, 0, 0)
        again = ingest_shelf(u, shelf, progress=False)
        assert not again.failed and (again.rulings_embedded, again.rulings_neighboured) == (0, 0)


def test_a_bad_table_fails_alone_and_the_stored_one_stays(tmp_path: Path) -> None:
    shelf = copy_shelf(tmp_path)
    table = tmp_path / "cards" / "duel-cards.jsonl.gz"
    with fresh_database("rs_cards_bad_") as u:
        assert not ingest_shelf(u, shelf, progress=False).failed
        before = cards_of(u)
        for damage, why in (
            (b"not gzip at all", "not a readable gzip"),
            (gzip.compress(b'{"name": "A"}\n{"oops"\n'), "line 2: not JSON"),
            (gzip.compress(b'{"type": "Instant"}\n'), "line 1: no name"),
            (gzip.compress(b'{"name": "A", "rulings": "one"}\n'), "'rulings' must be a list"),
            (gzip.compress(b""), "holds no card"),
        ):
            table.write_bytes(damage)
            summary = ingest_shelf(u, shelf, progress=False)
            assert [(k, why in e) for k, _, e in summary.failed] == [("duel:cards", True)], summary.failed
            assert summary.documents == 0  # the books are untouched
            assert cards_of(u) == before
        with psycopg.connect(u) as conn:
            recorded = conn.execute("SELECT key, error FROM ingest_failures").fetchall()
        assert any(k == "duel:cards" for k, _ in recorded)


def test_nicknames_must_name_cards_of_the_table(url: str, tmp_path: Path) -> None:
    folder = tmp_path / "nicknames"
    folder.mkdir()
    (folder / "duel.toml").write_text('[nicknames]\ngloom = "Grasp of Gloom"\nghost = "No Such Card"\n')
    with psycopg.connect(url) as conn:
        game_id, family_id = conn.execute("SELECT id, family_id FROM games WHERE slug = 'duel'").fetchone()  # type: ignore[misc]
        table = SHELF.parent / "cards" / "duel-cards.jsonl.gz"
        with pytest.raises(card_table.CardTableError, match="No Such Card"), conn.transaction():
            card_table.load(conn, game_id, "duel", table, family_id, nicknames=folder)
        (folder / "duel.toml").write_text('[nicknames]\ngloom = "Grasp of Gloom"\n')
        try:
            with conn.transaction():
                loaded = card_table.load(conn, game_id, "duel", table, family_id, nicknames=folder)
            assert loaded.nicknames == ["gloom"]
            kind = conn.execute("SELECT kind FROM card_names WHERE key = 'gloom'").fetchone()
            assert kind == ("nickname",)
        finally:  # back to the shipped (empty) nicknames for the other tests
            with conn.transaction():
                card_table.load(conn, game_id, "duel", table, family_id)


def test_named_cards_join_the_search_as_lanes_of_their_own(mesh: Mesh) -> None:
    res = fuse(mesh.addr["fusion"], QUESTION)
    assert [c.name for c in res.cards] == ["Grasp of Gloom", "Iron Golem"]
    grasp = res.cards[0]
    assert grasp.written == "Grasp of Gloom" and grasp.how == "name" and grasp.searched
    assert grasp.oracle == "Target creature gets -4/-4 until end of turn."
    assert grasp.rulings and "state check" in grasp.rulings[0]
    assert res.cards[1].type_line == "Artifact Creature — Golem" and res.cards[1].pt == "3/3"
    assert {"lexical", "lexical.cards", "dense", "dense.cards"} <= set(res.voted)
    assert abs(res.ceiling - len(res.voted) / 61) < 1e-12
    lanes = {r.arm for p in res.passages for r in p.ranks}
    assert {"lexical.cards", "dense.cards"} <= lanes
    timings = {t.stage for t in res.timings}
    assert "fusion.cards" in timings


def test_the_named_cards_rulings_vote_for_the_rules_they_speak_of(mesh: Mesh, url: str) -> None:
    # Grasp of Gloom's one ruling speaks of the state check; the question never names it
    res = fuse(mesh.addr["fusion"], QUESTION)
    assert "dense.rulings" in res.voted
    lane = sorted(
        ((r.rank, p.id) for p in res.passages for r in p.ranks if r.arm == "dense.rulings"),
        key=lambda x: x[0],
    )
    with psycopg.connect(url) as conn:
        state_check = conn.execute(
            "SELECT id FROM passages WHERE text LIKE %s", ("%the game first performs the state check%",)
        ).fetchall()
    assert len(state_check) == 1 and lane[0] == (1, state_check[0][0])
    assert any(t.stage == "dense.rulings" for t in res.timings)
    # a card without rulings adds no lane of them
    golem = fuse(mesh.addr["fusion"], "Can the Iron Golem block?")
    assert [c.name for c in golem.cards] == ["Iron Golem"]
    assert "dense.cards" in golem.voted and "dense.rulings" not in golem.voted


def test_no_card_no_lane_and_a_game_without_a_table_is_searched_as_before(mesh: Mesh) -> None:
    res = fuse(mesh.addr["fusion"], "What happens when a creature's toughness is 0?")
    assert not res.cards and not any(v.endswith(".cards") for v in res.voted)
    golf = fuse(mesh.addr["fusion"], "Can I cast Grasp of Gloom in golf?", game="solitaire-golf")
    assert not golf.cards and not any(v.endswith(".cards") for v in golf.voted)
    # an ordinary word that is a card's name, unmarked, is no card; marked, it is
    assert not fuse(mesh.addr["fusion"], "Does darkness stop a shock?").cards
    assert [c.name for c in fuse(mesh.addr["fusion"], "Does [[Darkness]] stop [[Shock]]?").cards] == [
        "Darkness",
        "Shock",
    ]


def test_forty_named_cards_are_all_shown_and_the_first_few_searched(mesh: Mesh) -> None:
    names = [
        "Grasp of Gloom",
        "Iron Golem",
        "Skull Plating",
        "[[Shock]]",
        "[[Darkness]]",
        "Garruk Wildspeaker",
    ]
    res = fuse(mesh.addr["fusion"], "Rank these: " + ", ".join(names * 7) + "?")
    assert len(res.cards) == 6  # each card once
    assert [c.searched for c in res.cards] == [True] * 4 + [False] * 2
    assert res.cards[5].name == "Garruk, Wildspeaker" and res.cards[5].written == "Garruk Wildspeaker"


@pytest.mark.parametrize(
    ("settings", "lanes"),
    [
        ({"RULESAGE_CARD_SEARCH": "off"}, set()),
        ({"RULESAGE_CARD_SEARCH": "replace"}, {"lexical.cards", "dense.cards", "dense.rulings"}),
        ({"RULESAGE_CARD_RULINGS": "false"}, {"lexical.cards", "dense.cards"}),
    ],
)
def test_the_card_search_mode_is_one_setting(url: str, settings: dict[str, str], lanes: set[str]) -> None:
    m = search_mesh(url, **settings)
    mode = settings.get("RULESAGE_CARD_SEARCH", "lanes")
    try:
        res = fuse(m.addr["fusion"], QUESTION)
    finally:
        m.close()
    assert [c.name for c in res.cards] == ["Grasp of Gloom", "Iron Golem"]  # found and shown either way
    assert all(c.searched == (mode != "off") for c in res.cards)
    assert {v for v in res.voted if v.endswith((".cards", ".rulings"))} == lanes
    if mode == "replace":  # the cards' lanes vote instead of the question's own
        assert "lexical" not in res.voted and "dense" not in res.voted and "aisle" in res.voted


@pytest.fixture(scope="module")
def client(url: str) -> Iterator[TestClient]:
    with env(RULESAGE_DOORMAN_ADDR="127.0.0.1:9"):
        s = GatewaySettings(rulesage_sweep_interval_s=0, rulesage_session_secret="t")
        with TestClient(create_app(s, database_url=url, doorman_address="127.0.0.1:9")) as c:
            yield c


def test_api_cards_finds_names_by_prefix_and_near_spelling(client: TestClient) -> None:
    r = client.get("/api/cards", params={"q": "gras", "game": "duel"})
    assert r.status_code == 200
    assert r.json()["cards"][0] == {
        "name": "Grasp of Gloom",
        "type_line": "Instant",
        "mana_cost": "B",
        "similarity": r.json()["cards"][0]["similarity"],
    }
    near = client.get("/api/cards", params={"q": "Skul Platting", "game": "duel"}).json()
    assert near["cards"][0]["name"] == "Skull Plating"
    # the one game with a card table is the default
    assert client.get("/api/cards", params={"q": "iron"}).json()["cards"][0]["name"] == "Iron Golem"
    # punctuation, SQL wildcards included, is no part of a name's key
    assert client.get("/api/cards", params={"q": "%_%", "game": "duel"}).status_code == 422
    wild = client.get("/api/cards", params={"q": "gr%", "game": "duel"}).json()["cards"]
    assert wild == client.get("/api/cards", params={"q": "gr", "game": "duel"}).json()["cards"]


def test_api_cards_bad_input_gets_a_clear_answer(client: TestClient) -> None:
    one = client.get("/api/cards", params={"q": "g", "game": "duel"})
    assert one.status_code == 422 and "at least 2 letters" in one.json()["error"]
    assert client.get("/api/cards", params={"q": "x" * 101, "game": "duel"}).status_code == 422
    unknown = client.get("/api/cards", params={"q": "grasp", "game": "no-such-game"})
    assert unknown.status_code == 404 and "no-such-game" in unknown.json()["error"]
    none = client.get("/api/cards", params={"q": "grasp", "game": "solitaire-golf"}).json()
    assert none["cards"] == [] and "no card table" in none["note"]
    assert (
        client.get("/api/cards", params={"q": "Fresh Card From Next Year", "game": "duel"}).json()["cards"]
        == []
    )


def test_the_game_page_offers_the_card_finder_only_where_there_are_cards(client: TestClient) -> None:
    duel = client.get("/games/duel").text
    assert 'id="card-finder"' in duel and "6 in the card table" in duel
    assert 'id="card-finder"' not in client.get("/games/solitaire-golf").text


def test_fusion_reads_a_reloaded_table_after_its_ttl(tmp_path: Path) -> None:
    shelf = copy_shelf(tmp_path)
    table = tmp_path / "cards" / "duel-cards.jsonl.gz"
    with fresh_database("rs_cards_ttl_") as u:
        assert not ingest_shelf(u, shelf, progress=False).failed
        m = search_mesh(u, RULESAGE_CARD_NAMES_TTL_S="0.05")
        try:
            question = "Does Fresh Card draw before Iron Golem attacks?"
            assert [c.name for c in fuse(m.addr["fusion"], question).cards] == ["Iron Golem"]
            rows = [*read_rows(table), {"name": "Fresh Card", "type": "Instant", "oracle": "Draw a card."}]
            write_table(table, rows)
            assert not ingest_shelf(u, shelf, progress=False).failed
            time.sleep(0.1)
            assert [c.name for c in fuse(m.addr["fusion"], question).cards] == ["Fresh Card", "Iron Golem"]
        finally:
            m.close()


def test_the_question_tower_trains_on_the_card_lane_the_dense_arm_embeds(mesh: Mesh, url: str) -> None:
    """The tower's card-lane rows are built as served: the cards fusion names and searches, their text as
    fusion writes it, the lane's text as the dense arm embeds it."""
    from rulesage.core.cards import search_text
    from rulesage.v1 import arm_pb2, arm_pb2_grpc
    from training.query.data import cards_lanes
    from training.questions import Question

    res = fuse(mesh.addr["fusion"], QUESTION)
    cards_text = search_text((c.name, c.type_line, c.oracle) for c in res.cards if c.searched)
    with grpc.insecure_channel(mesh.addr["dense"]) as ch:
        embedded = arm_pb2_grpc.EmbedderStub(ch).Embed(
            arm_pb2.EmbedRequest(question=QUESTION, game="duel", cards_text=cards_text), timeout=30
        )
    served = {v.lane: v.text for v in embedded.vectors}

    def asked(game: str, text: str) -> Question:
        return Question(game, "rules", None, "a quote", text, "questions")

    plain = "Who goes first in a duel?"
    with psycopg.connect(url) as conn:
        built = cards_lanes(
            conn, [asked("duel", QUESTION), asked("duel", plain), asked("solitaire-golf", QUESTION)]
        )
    assert built == {QUESTION: served["dense.cards"]}
    assert "Target creature gets -4/-4 until end of turn." in built[QUESTION]
