"""Ligatures, soft hyphens, tab-split words and line-end hyphenation."""

from __future__ import annotations

from rulesage.ingest.extract.cleanup import Dehyphenator, clean_chars


def test_ligatures_and_soft_hyphens() -> None:
    assert clean_chars("\ufb01nd the \ufb02ask, e\ufb00ect") == "find the flask, effect"
    assert clean_chars("spell\u00adcasting") == "spellcasting"


def test_tab_split_words_and_hyphen_runs() -> None:
    # The SRD writes '\t\r \xa0' between words and '-\xad\u2010\u2011' for one hyphen.
    assert clean_chars("Moving\t\r \xa0a\t\r \xa0Grappled") == "Moving a Grappled"
    assert clean_chars("three-\u00ad\u2010\u2011quarters cover") == "three-quarters cover"


def test_line_end_hyphenation_uses_the_books_vocabulary() -> None:
    book = ["a two-handed sword", "you are attacking now", "a good time"]
    d = Dehyphenator(book)
    assert d.join(["you make an attack-", "ing roll"]) == "you make an attacking roll"
    assert d.join(["wield a two-", "handed weapon"]) == "wield a two-handed weapon"
    # Neither form seen, but both halves are words of the book: a compound keeps its hyphen.
    assert d.join(["a good-", "time"]) == "a good-time"
    # Neither half a known word: the typesetter's hyphen goes.
    assert d.join(["the contin-", "uation"]) == "the continuation"
    assert d.join(["ends with a dash -", "and goes on"]) == "ends with a dash - and goes on"


def test_page_marks_follow_the_join() -> None:
    d = Dehyphenator([])
    text, marks = d.join_paged([("first page ends", 4), ("second page starts", 5)])
    assert text == "first page ends second page starts"
    assert marks == [(len("first page ends "), 5)]
