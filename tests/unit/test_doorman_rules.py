"""The doorman's pure rules and its fail-one-way screening (no network; the real embedded classifier)."""

from __future__ import annotations

import asyncio

import pytest

from services.doorman import classifier
from services.doorman.judge import parse_reply
from services.doorman.rules import (
    Decision,
    check_length,
    check_links,
    check_personal_data,
    check_spam,
    screen_rules,
)
from services.doorman.screen import Screener

CLEAN = [
    "Can the robber go back to the desert?",
    "Does rule 702.19b apply when a creature has trample, e.g. when blocked by two creatures?",
    "If I roll 2d6 and get 7 at 10:30 in the game, can I trade with 3 players?",
    "How does AC work vs. a +1 sword in 5e? i.e. does the bonus add to hit?",
    "Can I kill the dragon with a sneak attack while it is prone?",
    "The rulebook on page 12 says 1,000,000 gold: is that per player?",
    "Is DEX or STR used for a grapple check?",
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_rules_questions_pass_every_rule(text: str) -> None:
    assert screen_rules(text) is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("email me at jane.doe+games@example.co.uk please", "email"),
        ("write to bob (at) gmail.com", "email"),
        ("call me on +44 20 7946 0958 about catan", "phone"),
        ("my number is 555-123-4567", "phone"),
        ("(555) 123 4567 anytime", "phone"),
    ],
)
def test_personal_data_is_held(text: str, needle: str) -> None:
    reason = check_personal_data(text)
    assert reason is not None and needle in reason


def test_rule_numbers_and_scores_are_not_phone_numbers() -> None:
    assert check_personal_data("rules 702.19 and 510.1c; scores 12 34 56") is None


@pytest.mark.parametrize(
    "text",
    ["see https://example.org/rules", "go to www.spam-site.net", "buy at cheap-pills.ru today", "http://x"],
)
def test_links_are_held(text: str) -> None:
    assert check_links(text) is not None


@pytest.mark.parametrize("text", ["e.g. the robber", "i.e. twice", "version 1.5 of the book", "see 3.2.1"])
def test_abbreviations_and_numbers_are_not_links(text: str) -> None:
    assert check_links(text) is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("can I move the robber?!!!!!!!", "repeated characters"),
        ("win win win free cards", "repeated word"),
        ("robber robber desert robber robber hex robber robber tile robber", "repeated word"),
        ("CAN THE ROBBER GO BACK TO THE DESERT", "shouting"),
    ],
)
def test_spam_is_held(text: str, needle: str) -> None:
    reason = check_spam(text)
    assert reason is not None and needle in reason


def test_short_acronyms_are_not_shouting() -> None:
    assert check_spam("Does DEX add to AC in 5e?") is None


def test_length_rules() -> None:
    assert check_length("   ") == "empty question"
    assert check_length("x" * 500) is None
    reason = check_length("x" * 501)
    assert reason is not None and "501" in reason and "500" in reason
    assert check_length("x" * 40, max_chars=30) is not None


@pytest.mark.parametrize(
    ("reply", "hold"),
    [
        ("CLEAR", False),
        ("clear.", False),
        ("<think>harmless rules question</think>\nCLEAR", False),
        ("HOLD: harassment", True),
        ("HOLD", True),
        ("Clearly this is fine", True),
        ("", True),
        ("I think it is probably fine", True),
    ],
)
def test_judge_reply_only_clears_on_an_explicit_clear(reply: str, hold: bool) -> None:
    assert parse_reply(reply).hold is hold


def test_judge_hold_reason_is_kept() -> None:
    assert parse_reply("HOLD: advertising a shop").reason == "judge: advertising a shop"


def _screen(screener: Screener, text: str) -> tuple[Decision, str, list[str]]:
    verdict, timings = asyncio.run(screener.screen(text))
    assert all(ms >= 0 for _, ms in timings)
    return verdict.decision, verdict.reason, verdict.checks


def test_screening_runs_rules_then_the_real_classifier() -> None:
    screener = Screener(classifier=classifier.profanity_probability)
    assert _screen(screener, CLEAN[0]) == (Decision.CLEAR, "clean", ["rules", "profanity-check"])
    decision, reason, checks = _screen(screener, "this rule is fucking stupid, you idiots")
    assert decision is Decision.HOLD and reason.startswith("profanity ")
    assert checks == ["rules", "profanity-check"]
    decision, reason, checks = _screen(screener, "mail bob@example.com")
    assert (decision, checks) == (Decision.HOLD, ["rules"])


def test_a_classifier_error_holds() -> None:
    def broken(_: str) -> float:
        raise RuntimeError("model file missing")

    decision, reason, _ = _screen(Screener(classifier=broken), CLEAN[0])
    assert decision is Decision.HOLD and "RuntimeError" in reason


def test_a_nonsense_probability_holds() -> None:
    decision, _, _ = _screen(Screener(classifier=lambda _: float("nan")), CLEAN[0])
    assert decision is Decision.HOLD


def test_a_slow_check_holds_on_timeout() -> None:
    import time

    def slow(_: str) -> float:
        time.sleep(0.5)
        return 0.0

    decision, reason, _ = _screen(Screener(classifier=slow, timeout_s=0.1), CLEAN[0])
    assert decision is Decision.HOLD and "timed out" in reason
