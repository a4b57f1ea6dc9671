"""The row checker the training questions are written against (training/books.py)."""

from __future__ import annotations

from training.books import problems

QUOTE = "If you're using regular dice, you read 5 or 6 as +, 1 or 2 as -, and 3 or 4 as 0."
POST = (
    "Starting a Fate Core game this weekend and nobody in our group owns Fudge dice. We only have the "
    "normal six-sided ones from a board game. Can we just use those, and how do we read each face?"
)


def row(**overrides: object) -> dict:
    base = {"game": "fate-core", "doc": "fate-core-srd", "page": None, "quote": QUOTE, "question": POST}
    return {**base, "style": "forum", "source": "written", **overrides}


def test_a_verbatim_quote_with_its_provenance_passes() -> None:
    assert problems(row()) == []
    assert problems(row(source="https://rpg.stackexchange.com/q/1")) == []


def test_the_checker_names_what_is_wrong() -> None:
    assert problems(row(quote="You may roll any dice you like and read them however the table agrees.")) == [
        "quote is not verbatim on that page"
    ]
    assert any("source" in p for p in problems(row(source="a friend")))
    assert any("forum post needs at least" in p for p in problems(row(question="fudge dice?")))
    assert problems(row(doc="no-such-doc")) == ["unknown doc 'no-such-doc'"]


def test_the_eval_only_rules_are_named_never_copied() -> None:
    mtg = {"game": "mtg", "doc": "mtg-cr", "style": "forum", "source": "written", "question": POST}
    assert problems({**mtg, "rule": "702.19b"}) == []
    assert any("not in the Comprehensive Rules" in p for p in problems({**mtg, "rule": "999.99z"}))
    assert any("give 'rule', not 'quote'" in p for p in problems({**mtg, "rule": "702.19b", "quote": QUOTE}))
