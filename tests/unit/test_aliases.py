"""Alias mining: few patterns, verbatim evidence, junk rejected."""

from __future__ import annotations

from rulesage.ingest.aliases import AliasCandidate, dedupe, mine


def pairs(text: str, heading: tuple[str, ...] = (), kind: str = "prose") -> set[tuple[str, str, str]]:
    return {(c.alias, c.term, c.source) for c in mine(text, heading, kind)}


def test_type_of_definition() -> None:
    assert pairs("A Warlord is a type of Hero. Warlords lead.") == {("Warlord", "Hero", "definition")}
    assert ("Golems", "construct", "definition") in pairs("Golems are a kind of construct, a creature made.")


def test_also_called_and_known_as() -> None:
    got = pairs("Subterranean lizard men, also called troglodytes, are a hostile race.")
    assert got == {("troglodytes", "Subterranean lizard men", "definition")}
    got = pairs("In each turn, the first main phase (also known as the precombat main phase) comes first.")
    assert got == {("precombat main phase", "first main phase", "definition")}
    assert pairs("Creature subtypes are also called creature types.") == {
        ("creature types", "Creature subtypes", "definition")
    }


def test_see_entries_of_a_glossary() -> None:
    assert pairs("Forestwalk\nSee Landwalk.", kind="glossary") == {("Forestwalk", "Landwalk", "glossary")}
    assert pairs("See: Pile", heading=("Glossary", "Slot")) == {("Slot", "Pile", "see")}
    # a reference to a rule, or a cross-reference inside a definition, is not an alias
    assert pairs('Exile\nSee rule 406, "Exile."', kind="glossary") == set()
    assert (
        pairs("The first card dealt into a foundation pile. See: Foundation", ("Glossary", "Base Card"))
        == set()
    )


def test_or_parentheses_only_for_abbreviations_and_quoted_words() -> None:
    assert pairs("the game master controls non-player characters (or NPCs), monsters") == {
        ("NPCs", "non-player characters", "definition")
    }
    assert pairs("we call those non-player characters (or \u201cNPCs\u201d).") == {
        ("NPCs", "non-player characters", "definition")
    }
    assert pairs('A rhinoceros (or "rhino") is a large beast.') == {("rhino", "rhinoceros", "definition")}
    assert pairs("the ability score bonus (or penalty) for each") == set()
    assert pairs("Time is measured in game turns (or just turns).") == set()


def test_junk_is_rejected() -> None:
    # the phrase before "also called" is the tail of a prepositional phrase: no term
    assert pairs("A stack of cards, also called a heap.") == set()
    assert pairs("This is a kind of portable roof.") == set()
    assert pairs('If\nSee Intervening "If" Clause.', kind="glossary") == set()


def test_evidence_is_verbatim_and_bounded() -> None:
    text = "Intro sentence here. Blink dogs, also known as flicker beasts, are strange dogs. Next sentence."
    (cand,) = mine(text)
    assert cand.evidence in text
    assert cand.evidence.startswith("Blink dogs") and len(cand.evidence) <= 300


def test_dedupe_keeps_first_evidence_case_insensitively() -> None:
    a = AliasCandidate("NPCs", "non-player characters", "x", "definition")
    b = AliasCandidate("npcs", "Non-player characters", "y", "definition")
    assert dedupe([(a, 1), (b, 2)]) == [(a, 1)]
