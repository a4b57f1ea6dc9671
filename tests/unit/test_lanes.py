"""Alias lanes: expanded keeps the player's words, canonical swaps in the book's term; no alias, one lane."""

from __future__ import annotations

from services.dense.lanes import Alias, lanes, matching

ALIASES = [Alias("warlord", "hero", "a Warlord is a type of Hero"), Alias("thief", "rogue")]


def test_no_alias_means_one_lane() -> None:
    assert lanes("how far can I move?", matching("how far can I move?", ALIASES)) == [
        lanes("how far can I move?", [])[0]
    ]
    assert lanes("how far can I move?", [])[0].name == "dense"


def test_alias_opens_expanded_and_canonical_lanes() -> None:
    q = "Is there a specific base size for a Warlord on horse?"
    found = matching(q, ALIASES)
    assert [a.alias for a in found] == ["warlord"]
    expanded, canonical = lanes(q, found)
    assert expanded.name == "dense.expanded" and expanded.text == q + " [warlord (hero)]"
    assert canonical.name == "dense.canonical"
    assert canonical.text == "Is there a specific base size for a hero on horse?"


def test_whole_words_only_and_plurals() -> None:
    assert matching("can two Warlords share a base?", ALIASES)[0].term == "hero"
    assert matching("my thief sneaks", ALIASES)[0].term == "rogue"
    assert matching("the warlordship", ALIASES) == []


def test_a_posts_asking_sentences_vote_in_a_lane_after_the_questions_own() -> None:
    post = "My warlord rides a horse. Is there a specific base size for him?"
    asked = "Is there a specific base size for him?"
    names = [ln.name for ln in lanes(post, matching(post, ALIASES), "", asked)]
    assert names == ["dense.expanded", "dense.canonical", "dense.asked"]
    plain = lanes(post, [], "Hero: a unit.", asked)
    assert [ln.name for ln in plain] == ["dense", "dense.cards", "dense.asked"]
    assert plain[-1].text == asked and plain[0].text == post
    assert [ln.name for ln in lanes(post, [], "", "")] == ["dense"]
