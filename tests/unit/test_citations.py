"""The citation check: one-to-one canonicalisation, byte-exact stored spans, and what is refused."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rulesage.core.text import canonical_chars
from services.answer.citations import (
    MIN_ANSWER_CHARS,
    MIN_QUOTE_CHARS,
    NOT_IN_BOOK_TEXT,
    MalformedAnswer,
    RawAnswer,
    RawQuote,
    Rejection,
    ShownPassage,
    ValidatedAnswer,
    Verdict,
    answer_schema,
    parse_answer,
    validate,
)

TRAMPLE = ShownPassage(
    id=7,
    text=(
        "The controller of an attacking creature with trample first assigns damage to the creature(s) "
        "blocking it. Once all those blocking creatures are assigned lethal damage, any excess damage is "
        "assigned as its controller chooses among those blocking creatures and the player the "
        "creature\u2019s attacking\u2014it can\u2019t be assigned\u00a0elsewhere."
    ),
    doc_key="mtg-cr",
    doc_title="Magic: The Gathering Comprehensive Rules",
    doc_version="2022-04-29",
    page_start=153,
    page_end=154,
    rule_id="702.19b",
)
OTHER = ShownPassage(
    id=8, text="Vigilance is a static ability.\nAttacking doesn't cause it to tap.", page_start=3
)
ANSWER = "Yes: once every blocker has lethal damage, the rest can go to the player."


def ok(quote: str, pid: int = 7, answer: str = ANSWER) -> ValidatedAnswer | Rejection:
    return validate(RawAnswer((RawQuote(pid, quote),), answer, Verdict.ANSWERED), [TRAMPLE, OTHER])


def test_straight_apostrophe_matches_curly_and_the_source_span_is_stored() -> None:
    typed = "the player the creature's attacking"
    got = ok(typed)
    assert isinstance(got, ValidatedAnswer)
    (c,) = got.citations
    assert (
        c.quote == "the player the creature\u2019s attacking"
    )  # the book's curly apostrophe, not the model's
    assert TRAMPLE.text[c.start : c.end] == c.quote


def test_curly_quote_typed_for_a_straight_one_is_stored_straight() -> None:
    got = validate(
        RawAnswer((RawQuote(8, "Attacking doesn\u2019t cause it to tap."),), ANSWER, Verdict.ANSWERED),
        [OTHER],
    )
    assert isinstance(got, ValidatedAnswer)
    assert got.citations[0].quote == "Attacking doesn't cause it to tap."


@pytest.mark.parametrize("dash", ["-", "\u2013", "\u2212", "\u2010"])
def test_any_dash_matches_the_em_dash(dash: str) -> None:
    got = ok(f"attacking{dash}it can't be assigned")
    assert isinstance(got, ValidatedAnswer)
    assert got.citations[0].quote == "attacking\u2014it can\u2019t be assigned"


def test_plain_space_matches_a_no_break_space_and_stores_the_no_break_space() -> None:
    got = ok("it can't be assigned elsewhere.")
    assert isinstance(got, ValidatedAnswer)
    assert "\u00a0" in got.citations[0].quote


@pytest.mark.parametrize(
    "quote",
    [
        "any excess damage is assigned as the controller chooses",  # one word changed
        "Any Excess Damage is assigned as its controller chooses",  # case
        "excess damage any is assigned as its controller chooses",  # word order
        "damage beyond lethal may be assigned to the defending player",  # paraphrase
    ],
)
def test_paraphrase_case_and_word_order_are_rejected(quote: str) -> None:
    got = ok(quote)
    assert isinstance(got, Rejection)
    assert "not verbatim" in got.reason
    assert got.passage_id == 7


def test_line_breaks_must_match() -> None:
    got = ok("Vigilance is a static ability. Attacking doesn't", pid=8)
    assert isinstance(got, Rejection)
    assert isinstance(ok("Vigilance is a static ability.\nAttacking doesn't", pid=8), ValidatedAnswer)


def test_invented_passage_id_is_rejected() -> None:
    got = ok("The controller of an attacking creature with trample", pid=99)
    assert isinstance(got, Rejection)
    assert "not shown" in got.reason


def test_a_quote_from_another_shown_passage_is_rejected() -> None:
    got = ok("Vigilance is a static ability.", pid=7)
    assert isinstance(got, Rejection)


def test_one_bad_quote_rejects_the_whole_answer() -> None:
    raw = RawAnswer(
        (RawQuote(7, "first assigns damage to the creature(s)"), RawQuote(7, "the defender picks")),
        ANSWER,
        Verdict.ANSWERED,
    )
    got = validate(raw, [TRAMPLE])
    assert isinstance(got, Rejection)
    assert got.quote == "the defender picks"


def test_no_citation_is_rejected() -> None:
    got = validate(RawAnswer((), ANSWER, Verdict.ANSWERED), [TRAMPLE])
    assert isinstance(got, Rejection)
    assert "no citation" in got.reason


def test_short_answer_is_rejected_and_the_floor_is_inclusive() -> None:
    short = "x" * (MIN_ANSWER_CHARS - 1)
    assert isinstance(ok("first assigns damage", answer=short), Rejection)
    assert isinstance(ok("first assigns damage", answer="y" * MIN_ANSWER_CHARS), ValidatedAnswer)


def test_a_tiny_quote_proves_nothing() -> None:
    assert isinstance(ok("trample"), Rejection)


def test_wrapping_quote_marks_and_spaces_are_tolerated() -> None:
    got = ok('  "first assigns damage to the creature(s)"  ')
    assert isinstance(got, ValidatedAnswer)
    assert got.citations[0].quote == "first assigns damage to the creature(s)"


def test_stamps_come_from_the_passage_not_the_model() -> None:
    payload = {
        "quotes": [{"passage_id": 7, "quote": "first assigns damage", "page": 999, "rule_id": "1.1"}],
        "answer": ANSWER,
        "verdict": "answered",
        "doc_version": "forged",
    }
    got = validate(parse_answer(json.dumps(payload)), [TRAMPLE])
    assert isinstance(got, ValidatedAnswer)
    c = got.citations[0]
    assert (c.page, c.doc_key, c.doc_version, c.rule_id) == (153, "mtg-cr", "2022-04-29", "702.19b")


def test_not_in_book_needs_no_citation_and_keeps_none() -> None:
    raw = RawAnswer((RawQuote(99, "invented words here"),), "The rules say you win.", Verdict.NOT_IN_BOOK)
    got = validate(raw, [TRAMPLE])
    assert isinstance(got, ValidatedAnswer)
    assert got.verdict is Verdict.NOT_IN_BOOK
    assert got.citations == ()
    assert got.answer == NOT_IN_BOOK_TEXT  # the program's words, never the model's


def test_duplicate_quotes_are_stored_once() -> None:
    q = RawQuote(7, "first assigns damage to the creature(s)")
    got = validate(RawAnswer((q, q), ANSWER, Verdict.ANSWERED), [TRAMPLE])
    assert isinstance(got, ValidatedAnswer)
    assert len(got.citations) == 1


def test_a_validated_answer_cannot_be_built_by_hand() -> None:
    with pytest.raises(TypeError):
        ValidatedAnswer(Verdict.ANSWERED, ANSWER, (), None)


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        "[]",
        '{"quotes": [], "answer": "x", "verdict": "maybe"}',
        '{"quotes": {}, "answer": "x", "verdict": "answered"}',
        '{"quotes": [{"passage_id": "seven", "quote": "x"}], "answer": "x", "verdict": "answered"}',
        '{"quotes": [], "answer": 3, "verdict": "answered"}',
    ],
)
def test_malformed_output_is_refused(payload: str) -> None:
    with pytest.raises(MalformedAnswer):
        parse_answer(payload)


def test_schema_orders_quotes_answer_verdict_and_offers_lookup_only_when_asked() -> None:
    plain = answer_schema([3, 1])
    assert list(plain["properties"]) == ["quotes", "answer", "verdict"]
    assert plain["properties"]["quotes"]["items"]["properties"]["passage_id"]["enum"] == [1, 3]
    assert "source" not in json.dumps(plain) and "page" not in json.dumps(plain)
    assert next(iter(answer_schema([1], with_lookup=True)["properties"])) == "lookup_rules"


# -- property: canonicalisation maps one character to one, so the stored span is the source's own ----------
SPECIAL = "\u2018\u2019\u201c\u201d\u2013\u2014\u2212\u00a0\u202f-'\" "
text_st = st.text(alphabet=st.sampled_from(list("abcXYZ.,\n") + list(SPECIAL)), min_size=1, max_size=80)


@settings(max_examples=300, deadline=None)
@given(text=text_st)
def test_canonical_chars_preserves_length(text: str) -> None:
    assert len(canonical_chars(text)) == len(text)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), body=text_st)
def test_any_retyped_substring_is_found_and_stored_byte_exact(data: st.DataObject, body: str) -> None:
    text = "Rule: " + body + " end of rule."
    i = data.draw(st.integers(0, len(text) - MIN_QUOTE_CHARS))
    j = data.draw(st.integers(i + MIN_QUOTE_CHARS, len(text)))
    # the model retypes each character either as the book has it or in its canonical (ASCII) form
    retyped = "".join(canonical_chars(ch) if data.draw(st.booleans()) else ch for ch in text[i:j])
    got = validate(RawAnswer((RawQuote(1, retyped),), ANSWER, Verdict.ANSWERED), [ShownPassage(1, text)])
    if len(retyped.strip()) < MIN_QUOTE_CHARS:
        assert isinstance(got, Rejection)
        return
    assert isinstance(got, ValidatedAnswer)
    (c,) = got.citations
    assert c.quote == text[c.start : c.end]  # the source's own characters
    assert canonical_chars(c.quote) == canonical_chars(retyped.strip())
