"""The category leg in a real Fuse: a game with a map gets a classified list that votes (the ceiling becomes
4/(k+1)); a game without a map, or a call under the threshold, gets no list and the ceiling stays 3/(k+1).
The map is loaded by the real ingest (``--categories`` folder) into the session's mini-shelf database and
removed afterwards, so the other tests see the shelf as it was."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from rulesage.db import connect
from rulesage.ingest.pipeline import ingest_shelf
from rulesage.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc
from tests.integration.conftest import MINI_SHELF

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "tests" / "fixtures" / "categories" / "fate-condensed.toml"
GAME = "fate-condensed"
OK = common_pb2.STAGE_STATE_OK


def _drop_map(url: str) -> None:
    with connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM categories c USING games g WHERE g.id = c.game_id AND g.slug = %s", (GAME,))
        conn.execute(
            "DELETE FROM category_maps m USING games g WHERE g.id = m.game_id AND g.slug = %s", (GAME,)
        )


@pytest.fixture(scope="module")
def mapped(shelf_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("maps")
    shutil.copy(MAP, folder / f"{GAME}.toml")
    summary = ingest_shelf(shelf_url, MINI_SHELF, progress=False, categories_dir=folder)
    assert not summary.failed, summary.failed
    assert summary.category_maps == 1 and summary.category_passages > 0
    try:
        yield shelf_url
    finally:
        _drop_map(shelf_url)


def fuse(addr: str, question: str, game: str) -> fusion_pb2.FuseResult:
    with grpc.insecure_channel(addr) as ch:
        return fusion_pb2_grpc.FusionStub(ch).Fuse(
            fusion_pb2.FuseRequest(question=question, game=game), timeout=30
        )


ASPECTS = "Can I invoke the same aspect twice and pay two fate points?"


def fuse_with_category(search_mesh, question: str, **settings: str) -> fusion_pb2.FuseResult:  # type: ignore[no-untyped-def]
    """One Fuse through a category arm of its own, started with ``settings``, and a fusion that asks it."""
    from services.category.server import CategoryService
    from services.fusion.server import FusionService

    arm = search_mesh.start("category-own", CategoryService, **settings)
    try:
        addr = search_mesh.start("fusion-own", FusionService, RULESAGE_CATEGORY_ADDR=arm)
        try:
            return fuse(addr, question, GAME)
        finally:
            search_mesh.stop("fusion-own")
    finally:
        search_mesh.stop("category-own")


def _category(res: fusion_pb2.FuseResult) -> fusion_pb2.ArmStatus:
    return next(a for a in res.arms if a.arm == "category")


def test_a_mapped_game_gets_a_classified_list_that_votes(mapped: str, search_mesh) -> None:
    res = fuse(search_mesh.addr["fusion"], ASPECTS, GAME)
    arm = _category(res)
    assert arm.state == OK and arm.hits > 0, arm
    assert arm.category.name == "aspects_and_fate_points", arm.category
    assert arm.category.confidence >= arm.category.threshold > 0
    assert list(arm.category.sections) == ["Aspects and Fate Points"]
    assert "category" in res.voted and len(res.voted) == 4
    assert abs(res.ceiling - 4 / 61) < 1e-12
    ranked = [p for p in res.passages if any(r.arm == "category" for r in p.ranks)]
    assert ranked, "the leg's passages carry its ranks"
    # every passage the leg voted for lies in the mapped section
    assert all(p.heading_path[0] == "Aspects and Fate Points" for p in ranked), [
        p.heading_path for p in ranked
    ]
    assert all(p.fused_score <= res.ceiling + 1e-9 for p in res.passages)


def test_a_game_without_a_map_fuses_as_before(mapped: str, search_mesh) -> None:
    res = fuse(search_mesh.addr["fusion"], "how do I win a game of klondike?", "solitaire-klondike")
    arm = _category(res)
    assert arm.state == OK and arm.hits == 0 and not arm.HasField("category")
    assert "no category map" in arm.detail or arm.detail == ""
    assert "category" not in res.voted and abs(res.ceiling - 3 / 61) < 1e-12


def test_an_unsure_call_stays_out_of_the_election_and_says_so(mapped: str, search_mesh) -> None:
    res = fuse_with_category(search_mesh, ASPECTS, RULESAGE_CATEGORY_THRESHOLD="1.0")
    arm = _category(res)
    assert arm.state == OK and arm.hits == 0
    assert arm.category.name == "" and arm.category.threshold == 1.0
    assert arm.category.best == "aspects_and_fate_points"
    assert 0 < arm.category.confidence < 1.0
    assert arm.category.runner_up and arm.category.runner_up != "aspects_and_fate_points"
    assert "category" not in res.voted and abs(res.ceiling - 3 / 61) < 1e-12


def test_a_map_naming_a_missing_section_is_rejected_and_the_stored_map_stays(
    mapped: str, tmp_path: Path
) -> None:
    bad = MAP.read_text(encoding="utf-8").replace('sections = ["Advancement"]', 'sections = ["Advancment"]')
    (tmp_path / f"{GAME}.toml").write_text(bad, encoding="utf-8")
    summary = ingest_shelf(mapped, MINI_SHELF, progress=False, categories_dir=tmp_path)
    assert summary.category_maps == 0
    ((key, _path, error),) = summary.failed
    assert key == f"{GAME}:categories"
    assert "advancement: section 'Advancment'" in error and "select no passage" in error
    with connect(mapped) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT c.name FROM categories c JOIN games g ON g.id = c.game_id"
                " WHERE g.slug = %s ORDER BY 1",
                (GAME,),
            ).fetchall()
        ]
        failures = conn.execute("SELECT count(*) FROM ingest_failures WHERE key = %s", (key,)).fetchone()[0]
    assert names == ["advancement", "aspects_and_fate_points", "conflicts_and_harm"]
    assert failures == 1
    # the good map again: loaded, and the failure record cleared
    shutil.copy(MAP, tmp_path / f"{GAME}.toml")
    again = ingest_shelf(mapped, MINI_SHELF, progress=False, categories_dir=tmp_path)
    assert again.category_maps == 1 and not again.failed
    with connect(mapped) as conn:
        assert conn.execute("SELECT count(*) FROM ingest_failures WHERE key = %s", (key,)).fetchone()[0] == 0


def test_a_game_switched_off_is_called_and_shown_but_casts_no_vote(mapped: str, search_mesh) -> None:
    res = fuse_with_category(search_mesh, ASPECTS, RULESAGE_CATEGORY_OFF=f"mtg, {GAME}")
    arm = _category(res)
    assert arm.state == OK and arm.hits == 0
    assert arm.category.name == "aspects_and_fate_points"
    assert "casts no vote for fate-condensed" in arm.detail
    assert "category" not in res.voted and abs(res.ceiling - 3 / 61) < 1e-12
