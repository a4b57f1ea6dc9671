"""Errata claims: which rules a passage targets, its old/new wording, and when a link hides a passage."""

from __future__ import annotations

import datetime as dt

from rulesage.ingest.errata import (
    confirm,
    content_words,
    expand_rules,
    heading_rules,
    parse_date,
    quotes,
    read_claim,
    still_carries_old,
)

OLD_HIDEAWAY = (
    '702.75a Hideaway represents a static ability and a triggered ability. "Hideaway" means "This '
    'permanent enters the battlefield tapped" and "When this permanent enters the battlefield, look at the '
    "top four cards of your library. Exile one of them face down and put the rest on the bottom of your "
    'library in any order."'
)
NEW_HIDEAWAY = (
    '702.75a Hideaway is a triggered ability. "Hideaway N" means "When this permanent enters the '
    "battlefield, look at the top N cards of your library. Exile one of them face down and put the rest on "
    'the bottom of your library in a random order."'
)
ERRATA_HIDEAWAY = (
    "Hideaway has been updated. 702.75a now contains the new definition of hideaway. With this change, "
    '"Hideaway N" means "When this permanent enters the battlefield, look at the top N cards of your '
    'library. Exile one of them face down and put the rest on the bottom of your library in a random order."'
)


def test_rule_ranges_expand() -> None:
    assert expand_rules("702.75", "a", "b") == ["702.75a", "702.75b"]
    assert expand_rules("702.138", "c", "d") == ["702.138c", "702.138d"]
    assert expand_rules("612.7", None, None) == ["612.7"]
    assert heading_rules(("Changes", "Hideaway", "702.75a-b")) == ["702.75a", "702.75b"]
    assert heading_rules(("Changes", "Other rules changes", "612.7")) == ["612.7"]
    assert heading_rules(("Changes", "Hideaway")) == []


def test_claim_from_heading_and_text() -> None:
    claim = read_claim(ERRATA_HIDEAWAY, ("Rules Changes", "Hideaway", "702.75a-b"))
    assert claim.rules == ["702.75a", "702.75b"]
    assert claim.topic == "Hideaway"
    assert not claim.addition
    assert any(q.startswith("When this permanent enters") for q in claim.new_quotes)
    assert claim.old_quotes == []


def test_text_mentions_only_count_with_the_word_rule() -> None:
    claim = read_claim("Per rule 702.19b, trample now applies. Costs follow 601.2b.", ("FAQ",))
    assert claim.rules == ["702.19b"]
    assert read_claim("See rules 601.2f-h for costs.", ("FAQ",)).rules == ["601.2f", "601.2g", "601.2h"]


def test_new_rule_is_an_addition() -> None:
    claim = read_claim(
        "This new rule in the section about counters explains shield counters.", ("x", "122.1c")
    )
    assert claim.addition
    assert read_claim("A new subrule disambiguates these cases.", ("x", "702.138c-d")).addition
    assert not read_claim("This rule has been updated to cover that.", ("x", "201.6")).addition


def test_old_and_new_quotes_by_cue() -> None:
    old, new = quotes(
        'The rule used to read "a pawn moves two squares" and now reads "a pawn moves one square".'
    )
    assert old == ["a pawn moves two squares"]
    assert new == ["a pawn moves one square"]
    old, new = quotes('Replace "draw two cards" with "draw three cards". "Hi" is too short.')
    assert old == ["draw two cards"] and new == ["draw three cards"]


def test_page_references() -> None:
    assert read_claim("On page 42 and p. 7, the table is wrong.", ()).pages == [7, 42]


def test_confirmation_needs_shared_topic_words() -> None:
    claim = read_claim(ERRATA_HIDEAWAY, ("Hideaway", "702.75a-b"))
    ok, why = confirm(claim, ERRATA_HIDEAWAY, OLD_HIDEAWAY)
    assert ok and "hideaway" in why
    loyalty = "122.1c The number of loyalty counters on a planeswalker indicates how much loyalty it has."
    shield = "This new rule explains the replacement effects that affect permanents with shield counters."
    assert not confirm(read_claim(shield, ("Shield Counters", "122.1c")), shield, loyalty)[0]


def test_old_wording_is_hidden_until_the_book_prints_the_new() -> None:
    claim = read_claim(ERRATA_HIDEAWAY, ("Hideaway", "702.75a-b"))
    # the old release does not hold the whole new wording (even though long runs of words are shared)
    assert still_carries_old(claim, OLD_HIDEAWAY, None, None, rewritten=False)
    # a release that prints the new wording is left alone
    assert not still_carries_old(claim, NEW_HIDEAWAY, None, None, rewritten=False)


def test_dates_and_rewrites_release_the_flag() -> None:
    claim = read_claim("This rule has been generalized.", ("Other", "612.7"))
    errata = dt.date(2022, 4, 20)
    assert still_carries_old(claim, "612.7. One card sets a name.", dt.date(2022, 2, 18), errata, False)
    assert not still_carries_old(claim, "612.7. One card sets a name.", dt.date(2022, 4, 29), errata, False)
    assert not still_carries_old(claim, "612.7. Some cards set a name.", None, errata, rewritten=True)
    addition = read_claim("This new rule explains shield counters.", ("x", "122.1c"))
    assert not still_carries_old(addition, "122.1c loyalty", dt.date(2022, 2, 18), errata, False)


def test_old_quote_found_always_hides() -> None:
    claim = read_claim('This used to read "heroes roll two dice when they fight".', ("Fighting",))
    assert still_carries_old(claim, "Heroes roll two dice when they fight.", dt.date(2030, 1, 1), None, True)


def test_parse_date() -> None:
    assert parse_date("2022-04-29") == dt.date(2022, 4, 29)
    assert parse_date("comprehensive-rules-changes-2022-04-20.md") == dt.date(2022, 4, 20)
    assert parse_date("MagicCompRules_20220218.txt") == dt.date(2022, 2, 18)
    assert parse_date("v2") is None and parse_date(None) is None


def test_content_words_singularise_and_drop_stopwords() -> None:
    assert content_words("The shield counters and a Counter") == {"shield", "counter"}
