"""Numbered rules in the Comprehensive Rules layout (an excerpt written for the test)."""

from __future__ import annotations

from pathlib import Path

from rulesage.ingest.numbered import RULE_MAX_WORDS, looks_numbered, parse_numbered
from rulesage.ingest.parse import parse_document

CR = """\ufeffSpinning Tops: The Comprehensive Rules

Introduction

These rules cover every top.

Contents

1. Game Concepts
   100. General
7. Additional Rules
   702. Keyword Abilities

Glossary

Credits

1. Game Concepts

100. General

   100.1. These rules apply to any game of tops.

   100.2. A top spins.

      100.2a A top that stops spinning falls.

      100.2b A fallen top is out of the round.

      100.2c Tops never spin backwards.

   100.3. Each player needs a top.

   100.4. Tables are round.

   100.5. Rounds end.

7. Additional Rules

702. Keyword Abilities

   702.1. Some tops have keyword abilities.

   702.19. Wobble

      702.19a Wobble is a static ability.

      702.19b A top with wobble may lean once per round.
               Example: A wobbling top leans left, then stands up.
               Example: Two wobbling tops lean together.

      702.19c Wobble does not stack.

Glossary

Wobble
A keyword ability that lets a top lean. See rule 702.19, "Wobble."

Spin
To set a top in motion.

Credits

Designed by nobody.
"""


def test_rule_and_leaf_rows() -> None:
    assert looks_numbered(CR)
    sections = parse_numbered(CR)
    paths = [s.heading_path for s in sections]
    assert ("1. Game Concepts", "100. General") in paths
    assert ("7. Additional Rules", "702. Keyword Abilities") in paths
    passages = [p for s in sections for p in s.passages]
    wobble = [p for p in passages if p.rule_id == "702.19" and p.kind == "rule"]
    assert len(wobble) == 1 and wobble[0].searchable and wobble[0].page_start is None
    text = wobble[0].text
    for part in (
        "702.19. Wobble",
        "702.19a Wobble is a static ability.",
        "702.19c Wobble does not stack.",
        "Example: A wobbling top leans left, then stands up.",
        "Example: Two wobbling tops lean together.",
    ):
        assert part in text
    leaf = next(p for p in passages if p.rule_id == "702.19b")
    assert leaf.kind == "leaf" and not leaf.searchable and leaf.parent_rule == "702.19"
    assert leaf.text.startswith("702.19b A top with wobble may lean once per round.")
    assert "Example: Two wobbling tops lean together." in leaf.text and "702.19c" not in leaf.text
    plain = next(p for p in passages if p.rule_id == "100.3")
    assert plain.kind == "rule" and plain.text == "100.3. Each player needs a top."
    # The table of contents is not a rule.
    assert sum(1 for p in passages if p.rule_id == "100.1") == 1


def test_glossary_one_passage_per_term() -> None:
    sections = parse_numbered(CR)
    glossary = [p for s in sections for p in s.passages if p.kind == "glossary"]
    assert [p.text.split("\n")[0] for p in glossary] == ["Wobble", "Spin"]
    assert glossary[1].text == "Spin\nTo set a top in motion."
    assert "Designed by nobody." not in " ".join(p.text for p in glossary)


def test_long_rule_split_keeps_rule_id() -> None:
    subs = "\n\n".join(
        f"      702.20{chr(97 + i)} "
        + " ".join(["Spinning tops keep spinning while the table is level."] * 8)
        for i in range(12)
    )
    text = CR.replace(
        "      702.19c Wobble does not stack.",
        "      702.19c Wobble does not stack.\n\n   702.20. Whirl\n\n" + subs,
    )
    passages = [p for s in parse_numbered(text) for p in s.passages if p.rule_id == "702.20"]
    assert len(passages) >= 2 and all(p.kind == "rule" and p.searchable for p in passages)
    assert all(len(p.text.split()) <= RULE_MAX_WORDS for p in passages)
    assert all(p.text.startswith("702.20. Whirl") for p in passages)
    leaves = [p for s in parse_numbered(text) for p in s.passages if p.parent_rule == "702.20"]
    assert len(leaves) == 12


def test_parse_document_routes_numbered_text(tmp_path: Path) -> None:
    path = tmp_path / "TopsRules.txt"
    path.write_text(CR, encoding="utf-8")
    doc = parse_document(path, key="tops", kind="rulebook")
    assert doc.pages == []
    assert any(p.rule_id == "702.19a" for p in doc.passages)
