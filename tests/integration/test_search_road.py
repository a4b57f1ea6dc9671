"""The three arms and the referee as real gRPC services over a real Postgres holding real books."""

from __future__ import annotations

import grpc
import pytest

from rulesage.v1 import arm_pb2, arm_pb2_grpc, common_pb2, fusion_pb2, fusion_pb2_grpc

OK = common_pb2.STAGE_STATE_OK

pytestmark = pytest.mark.integration


def fuse(addr: str, question: str, game: str, timeout: float = 30) -> fusion_pb2.FuseResult:
    with grpc.insecure_channel(addr) as ch:
        return fusion_pb2_grpc.FusionStub(ch).Fuse(
            fusion_pb2.FuseRequest(question=question, game=game), timeout=timeout
        )


def test_three_arms_vote_and_the_ceiling_is_derived(search_mesh) -> None:
    res = fuse(search_mesh.addr["fusion"], "how do I win a game of klondike?", "solitaire-klondike")
    assert [a.state for a in res.arms] == [OK, OK, OK, OK]
    # klondike has no category map: the category leg answers, with no list and no call
    category = next(a for a in res.arms if a.arm == "category")
    assert category.hits == 0 and not category.HasField("category")
    assert set(res.voted) == {"lexical", "dense", "aisle"}
    assert len(res.question_vector) == 384
    assert res.k == 60
    assert abs(res.ceiling - 3 / 61) < 1e-12
    assert 0 < len(res.passages) <= 80
    top = res.passages[0]
    assert top.fused_score <= res.ceiling + 1e-9
    assert top.ranks and all(r.rank >= 1 for r in top.ranks)
    # scores are the sum of 1/(60+rank) over the lists that ranked the passage
    assert abs(top.fused_score - sum(1 / (60 + r.rank) for r in top.ranks)) < 1e-9
    # every arm stays in the asked game's family
    assert {p.doc_key for p in res.passages} <= {
        "solitaire-klondike-rules",
        "solitaire-freecell-rules",
        "solitaire-golf-rules",
        "aisleriot-glossary",
    }
    assert any(p.doc_key == "solitaire-klondike-rules" for p in res.passages[:8])


def test_lexical_ors_terms_and_ranks_by_bm25(search_mesh) -> None:
    with grpc.insecure_channel(search_mesh.addr["lexical"]) as ch:
        res = arm_pb2_grpc.ArmStub(ch).Search(
            arm_pb2.ArmRequest(
                question="what does a fate point let me invoke aspects zebra?", game="fate-condensed"
            ),
            timeout=30,
        )
    assert res.hits, "an OR query with one unknown word must still match"
    scores = [h.score for h in res.hits]
    assert scores == sorted(scores, reverse=True)
    assert [h.rank for h in res.hits] == list(range(1, len(res.hits) + 1))


def test_dense_top_80_is_not_cut_by_ef_search(search_mesh) -> None:
    with grpc.insecure_channel(search_mesh.addr["dense"]) as ch:
        emb = arm_pb2_grpc.EmbedderStub(ch).Embed(
            arm_pb2.EmbedRequest(question="stress boxes", game="fate-condensed")
        )
        res = arm_pb2_grpc.ArmStub(ch).Search(
            arm_pb2.ArmRequest(question="stress boxes", game="fate-condensed", vectors=emb.vectors, limit=80)
        )
    assert len(emb.vectors) == 1 and len(emb.vectors[0].values) == 384
    assert len(res.hits) == 80


def test_unknown_game_and_bad_questions_are_invalid_argument(search_mesh) -> None:
    addr = search_mesh.addr["fusion"]
    for question, game, message in [
        ("how do I win?", "no-such-game", "unknown game"),
        ("", "solitaire-klondike", "empty"),
        ("x" * 10_000, "solitaire-klondike", "10,000 characters"),
    ]:
        with pytest.raises(grpc.RpcError) as err:
            fuse(addr, question, game)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in err.value.details()


def test_a_dead_arm_never_fails_the_ask(search_mesh) -> None:
    from services.fusion.server import FusionService

    # nothing listens on port 1: the lexical arm is down for this fusion
    addr = search_mesh.start("fusion-without-lexical", FusionService, RULESAGE_LEXICAL_ADDR="127.0.0.1:1")
    try:
        res = fuse(addr, "how do I win a game of klondike?", "solitaire-klondike")
    finally:
        search_mesh.stop("fusion-without-lexical")
    arms = {a.arm: a for a in res.arms}
    assert arms["lexical"].state == common_pb2.STAGE_STATE_DOWN, arms["lexical"]
    assert "unavailable" in arms["lexical"].detail
    assert arms["dense"].state == OK and arms["aisle"].state == OK
    assert "lexical" not in res.voted
    assert abs(res.ceiling - len(res.voted) / 61) < 1e-12
    assert res.passages
