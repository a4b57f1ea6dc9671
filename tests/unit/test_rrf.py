"""Reciprocal-rank fusion: the arithmetic, the per-list ranks, the derived ceiling."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from rulesage.core import rrf


def test_rank_one_is_worth_one_over_k_plus_one() -> None:
    fused = rrf.fuse({"lexical": [7]})
    assert fused[0].score == 1 / 61
    assert fused[0].ranks == {"lexical": 1}


def test_consensus_beats_enthusiasm() -> None:
    # #3 in both roaming arms (2/63) beats #1 in one arm only (1/61)
    fused = rrf.fuse({"lexical": [1, 2, 3], "dense": [4, 5, 3]})
    assert fused[0].passage_id == 3
    assert abs(fused[0].score - 2 / 63) < 1e-12
    assert fused[0].ranks == {"lexical": 3, "dense": 3}


def test_two_first_places_reach_two_over_sixty_one() -> None:
    fused = rrf.fuse({"lexical": [9], "dense": [9], "aisle": [1]})
    assert abs(fused[0].score - 2 / 61) < 1e-12
    assert round(fused[0].score, 6) == 0.032787


def test_ceiling_is_derived_from_the_lists_that_voted() -> None:
    assert rrf.ceiling(2) == 2 / 61
    assert abs(rrf.ceiling(3) - 0.04918) < 1e-5
    assert rrf.ceiling_formula(3) == "3/(60+1) = 0.04918"


def test_cut_to_limit_and_duplicates_vote_once() -> None:
    fused = rrf.fuse({"a": [*list(range(100)), 0]}, limit=80)
    assert len(fused) == 80
    assert fused[0].ranks == {"a": 1}


lists = st.dictionaries(
    st.sampled_from(["lexical", "dense", "dense.expanded", "dense.canonical", "aisle"]),
    st.lists(st.integers(0, 60), max_size=40, unique=True),
    max_size=5,
)


@given(lists)
def test_fusion_does_not_depend_on_the_order_of_the_lists(ls: dict[str, list[int]]) -> None:
    items = list(ls.items())
    random.Random(0).shuffle(items)
    a = rrf.fuse(ls)
    b = rrf.fuse(dict(items))
    assert [(f.passage_id, f.score, f.ranks) for f in a] == [(f.passage_id, f.score, f.ranks) for f in b]


@given(lists)
def test_no_score_exceeds_the_ceiling(ls: dict[str, list[int]]) -> None:
    voted = sum(1 for ids in ls.values() if ids)
    for f in rrf.fuse(ls):
        assert f.score <= rrf.ceiling(voted) + 1e-12
        assert all(r >= 1 for r in f.ranks.values())


def test_a_list_that_only_repeats_another_is_an_echo() -> None:
    dense = list(range(1, 81))
    assert rrf.echoes({"dense": dense, "aisle": dense[:8]}) == {"aisle": "dense"}
    # a near-prefix within the slack, same order: still an echo
    assert rrf.echoes({"dense": dense, "aisle": [1, 2, 4, 5, 6, 7, 8, 9]}) == {"aisle": "dense"}
    # its own order, or a candidate the other did not bring: a real second opinion
    assert rrf.echoes({"dense": dense, "aisle": [2, 1, 3, 4, 5, 6, 7, 8]}) == {}
    assert rrf.echoes({"dense": dense, "aisle": [1, 2, 3, 4, 5, 6, 7, 500]}) == {}
    assert rrf.echoes({"lexical": [5, 9, 2], "dense": dense}) == {}
    # two identical lists: the later one is the echo, never both
    assert rrf.echoes({"a": [1, 2, 3], "b": [1, 2, 3]}) == {"b": "a"}
