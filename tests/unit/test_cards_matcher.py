"""Which cards a question names (rulesage.core.cards): exact and near names, marks, and the ordinary words
that must not count as cards."""

from __future__ import annotations

import pytest

from rulesage.core.cards import (
    SEARCH_TEXT_CHARS,
    CardIndex,
    CardName,
    Mention,
    name_key,
    search_text,
)

# (card id, name, plain): plain names are ordinary words or rules terms, counted only where marked
CARDS = [
    (1, "Tarmogoyf", False),
    (2, "Lightning Bolt", False),
    (3, "Garruk, Unleashed", False),
    (4, "Grasp of Darkness", False),
    (5, "Darkness", True),
    (6, "Shock", True),
    (7, "Opt", True),
    (8, "Cranial Plating", False),
    (9, "Linvala, Keeper of Silence", False),
    (10, "Teferi's Protection", False),
    (11, "Vanishing", True),
    (12, "Benthic Explorers", False),
    (13, "Displace", False),
    (14, "Commandeer", False),
    (15, "Avacyn, Angel of Hope", False),
    (16, "Will-o'-the-Wisp", False),
    (17, "Black Lotus", False),
    (18, "Deal Damage", True),
]
NAMES = [CardName(name_key(n), cid, "name", plain) for cid, n, plain in CARDS] + [
    CardName("goyf", 1, "nickname"),
    CardName("avacyn", 15, "short"),
    CardName("garruk", 3, "short"),
    CardName("garruk", 99, "short"),  # two cards share the short name: it names neither
    CardName("bolt", 2, "nickname", plain=True),
]
INDEX = CardIndex.build(NAMES)
BY_ID = {cid: n for cid, n, _ in CARDS}


def named(question: str) -> list[str]:
    return [BY_ID.get(m.card_id, str(m.card_id)) for m in INDEX.find(question)]


def test_name_key_forgives_commas_case_apostrophes_and_dashes() -> None:
    assert name_key("Garruk, Unleashed") == name_key("garruk unleashed") == "garruk unleashed"
    assert name_key("Teferi’s Protection") == name_key("teferis protection")
    assert name_key("Will-o'-the-Wisp") == "will o the wisp"


@pytest.mark.parametrize(
    ("question", "cards"),
    [
        ("Does Tarmogoyf count instants?", ["Tarmogoyf"]),
        (
            "i bolted it with lightning bolt, then cast garruk unleashed",
            ["Lightning Bolt", "Garruk, Unleashed"],
        ),
        ("How big is my Goyf after a fetch?", ["Tarmogoyf"]),
        ("Can Avacyn save my team?", ["Avacyn, Angel of Hope"]),
        ("I cast [[Grasp of Darkness]] on a 2/2.", ["Grasp of Darkness"]),
        ("Tarmogoyf's power counts card types", ["Tarmogoyf"]),
        ("two Benthic Explorers' abilities", ["Benthic Explorers"]),
        ("I cast Teferi’s Protection and all went away", ["Teferi's Protection"]),
        ("Does Will-o'-the-Wisp regenerate?", ["Will-o'-the-Wisp"]),
        ("do I keep black lotus mana between steps?", ["Black Lotus"]),
    ],
)
def test_names_are_found_however_they_are_written(question: str, cards: list[str]) -> None:
    assert named(question) == cards


@pytest.mark.parametrize(
    "question",
    [
        "The darkness spell blocks sight. Does Shock in the sense of surprise matter? I opt to pass.",
        "Darkness falls. Can I Opt out of combat?",
        "Does Vanishing remove a time counter each upkeep?",  # the keyword, capitalised like a name
        "When a creature would Deal Damage to me, what happens?",
        "Which Garruk does this work with?",  # two cards share the short name
        "Can I play a Bolt of lightning?",  # a nickname that is an ordinary word, unmarked
    ],
)
def test_ordinary_words_and_rules_terms_are_not_cards(question: str) -> None:
    assert named(question) == []


@pytest.mark.parametrize(
    ("question", "cards"),
    [
        ("Can I respond to [[Shock]] with [[Opt]]?", ["Shock", "Opt"]),
        ('Does "Darkness" stop trample damage?', ["Darkness"]),
        ("I have the card Vanishing on the battlefield", ["Vanishing"]),
        ("a card named Shock", ["Shock"]),
        ("I [[bolt]] it", ["Lightning Bolt"]),
    ],
)
def test_plain_names_count_where_the_question_marks_a_card(question: str, cards: list[str]) -> None:
    assert named(question) == cards


def test_near_spellings_of_longer_names_are_found() -> None:
    found = INDEX.find("Then Cranial Platting goes on my Myr and Linvala, Keep of Silence is out.")
    assert [BY_ID[m.card_id] for m in found] == ["Cranial Plating", "Linvala, Keeper of Silence"]
    assert all(m.how == "near" and 90 <= m.score < 100 for m in found)
    assert found[0].written == "Cranial Platting"


def test_one_word_near_names_count_only_in_brackets_and_never_as_an_inflection() -> None:
    # "Commander" is a near spelling of "Commandeer", "Displaced" of "Displace": other words, not typos
    assert named("Can I return that Commander to the command zone?") == []
    assert named("My gear was Displaced by [[Displaced Dinosaurs]].") == []
    assert named('As you move your commander, "you may choose" to remove the "commander"') == []
    assert named("Does [[Tarmagoyf]] grow?") == ["Tarmogoyf"]


def test_each_card_once_in_the_order_named_and_mentions_say_where() -> None:
    q = "Goyf and Lightning Bolt: does Tarmogoyf die to Bolt? [[Lightning Bolt]] again."
    found = INDEX.find(q)
    assert [BY_ID[m.card_id] for m in found] == ["Tarmogoyf", "Lightning Bolt"]
    first = found[0]
    assert isinstance(first, Mention) and q[first.start : first.end] == first.written == "Goyf"
    assert first.how == "nickname"


def test_forty_cards_are_capped_and_empty_or_odd_input_finds_nothing() -> None:
    many = CardIndex.build([CardName(f"zork{i:02d}", i) for i in range(60)])
    question = " ".join(f"Zork{i:02d}" for i in range(60))
    assert len(many.find(question)) == 40
    assert len(many.find(question, most=5)) == 5
    for q in ("", "   ", "?!", "a", "x " * 2000):
        assert INDEX.find(q) == []


def test_a_short_key_never_counts_unmarked() -> None:
    index = CardIndex.build([CardName("x", 1), CardName("ow", 2)])
    assert index.find("X marks the spot, ow") == []
    assert [m.card_id for m in index.find("what does [[Ow]] do?")] == [2]


def test_search_text_uses_type_and_text_without_the_name_and_is_capped() -> None:
    text = search_text([("Shock", "Instant", "Shock deals 2 damage to any target.")])
    assert text == "Instant. this deals 2 damage to any target."
    long = search_text([(f"C{i}", "Creature", "word " * 100) for i in range(10)])
    assert len(long) <= SEARCH_TEXT_CHARS and not long.endswith(" ")
    assert search_text([]) == ""
