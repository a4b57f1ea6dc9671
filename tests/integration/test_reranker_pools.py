"""The head's training pools drawn from the served election: the fusion service's own order, degraded asks
kept apart, and training groups built on those pools."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import grpc
import pytest

from rulesage import db
from rulesage.core.text import supports
from rulesage.v1 import common_pb2, fusion_pb2, fusion_pb2_grpc
from training.questions import Question, build_groups
from training.reranker.pools import collect, load_pools

GAME = "solitaire-klondike"
ASKED = "how do I win a game of klondike?"


def served(addr: str, question: str) -> list[common_pb2.Passage]:
    with grpc.insecure_channel(addr) as ch:
        res = fusion_pb2_grpc.FusionStub(ch).Fuse(
            fusion_pb2.FuseRequest(question=question, game=GAME), timeout=30
        )
    return list(res.passages)


def served_ids(addr: str, question: str) -> list[int]:
    return [int(p.id) for p in served(addr, question)]


def question(text: str, quote: str = "", doc: str = "") -> Question:
    return Question(GAME, doc, None, quote, text, "questions")


def test_pools_are_the_fusion_services_order(
    search_mesh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for k, v in search_mesh.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("DATABASE_URL", search_mesh.url)
    out = tmp_path / "pools.jsonl"
    rows = [question(ASKED), question("what may be moved onto an empty tableau column?")]
    counts = asyncio.run(collect(rows, out, depth=5, concurrency=2))
    assert counts == {"pools": 2, "degraded": 0, "refused": 0}
    pools = load_pools(out)
    fused = served(search_mesh.addr["fusion"], ASKED)[:5]
    assert pools[(GAME, ASKED)] == [int(p.id) for p in fused]
    assert all(len(ids) == 5 for ids in pools.values())
    # each candidate's votes as the wrench shows them: the lists that ranked it, and its fused score
    rec = next(r for r in map(json.loads, out.read_text().splitlines()) if r["question"] == ASKED)
    assert rec["ranks"] == [{r.arm: r.rank for r in p.ranks} for p in fused]
    assert all(rec["ranks"])  # every candidate was ranked by some list
    assert rec["fused"] == pytest.approx([p.fused_score for p in fused], abs=1e-6)
    assert rec["cards"] == 0  # a Klondike question names no MTG card


def test_an_ask_whose_fusion_fell_back_trains_nothing(
    search_mesh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULESAGE_FUSION_ADDR", "127.0.0.1:1")  # nothing listens there
    monkeypatch.setenv("DATABASE_URL", search_mesh.url)
    out = tmp_path / "pools.jsonl"
    counts = asyncio.run(collect([question(ASKED)], out, depth=48, concurrency=1))
    assert counts["degraded"] == 1 and counts["pools"] == 0
    rec = json.loads(out.read_text())
    assert rec["degraded"] == ["fusion"] and "ids" not in rec
    assert load_pools(out) == {}


def test_groups_on_served_pools_take_the_best_placed_holder(search_mesh) -> None:
    with db.connect(search_mesh.url, autocommit=True) as conn:
        doc, text = conn.execute(
            "SELECT d.key, p.text FROM live_passages p JOIN documents d ON d.id = p.document_id"
            " JOIN games g ON g.id = d.game_id WHERE g.slug = %s AND length(p.text) > 200"
            " ORDER BY p.id LIMIT 1",
            (GAME,),
        ).fetchone()
        quote = " ".join(text.split()[:12])
        asked = question("which cards may I move first when the deal is done?", quote, doc)
        ids = served_ids(search_mesh.addr["fusion"], asked.question)
        holders = {
            pid
            for pid, body in conn.execute(
                "SELECT p.id, p.text FROM live_passages p JOIN documents d ON d.id = p.document_id"
                " WHERE d.key = %s",
                (doc,),
            ).fetchall()
            if supports(body, quote)
        }
        assert holders
        # A served pool with the quote's passage placed third, behind two that do not hold it.
        others = [i for i in ids if i not in holders][:6]
        pool = [*others[:2], min(holders), *others[2:]]
        unseen = question("a question the pools never saw", quote, doc)
        groups, counts, indexes = build_groups(
            conn,
            [asked, unseen],
            negatives=4,
            pseudo=5,
            seed=1,
            pool_depth=48,
            pools={(GAME, asked.question): pool},
        )
    assert counts["no-served-pool"] == 1 and counts["positive-in-served-pool"] == 1
    assert len(groups) == 1  # no pseudo-query: it has no served pool
    g = groups[0]
    passages = indexes[g.family_id].passages
    assert [passages[i].id for i in g.pool] == pool
    assert passages[g.positive].id == min(holders)
    assert [passages[i].id for i in g.negatives] == others[:4]
