"""A forum post tells its situation first and asks last: its asked sentences, found apart from the rest."""

from __future__ import annotations

from rulesage.core.text import asked_apart, asked_only, asked_sentence, sentences_of

POST = "My wizard is grappled by an ogre. I cast Misty Step. Do I escape? And can it follow me?"


def test_the_asked_sentence_is_a_posts_last_question() -> None:
    assert asked_sentence(POST) == "And can it follow me?"
    assert asked_sentence("Can I move twice") == "Can I move twice"  # no question mark: the last sentence
    assert asked_apart(POST) == "And can it follow me?"
    assert asked_apart(" Can I move twice? ") is None  # the question is its asked sentence: nothing apart


def test_asked_only_keeps_every_asking_sentence_and_leaves_the_situation_out() -> None:
    assert sentences_of(POST)[:2] == ["My wizard is grappled by an ogre.", "I cast Misty Step."]
    assert asked_only(POST) == "Do I escape? And can it follow me?"
    # nothing asks, or nothing but asking: no lane of its own
    assert asked_only("My wizard is grappled. I cast Misty Step.") is None
    assert asked_only("Do I escape? Can it follow me?") is None
    assert asked_only("  Can I move twice?  ") is None
    assert asked_only("") is None
