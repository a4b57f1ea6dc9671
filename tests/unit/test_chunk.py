"""Blocks -> sections and passages: sizes, cut points, tables whole, page spans."""

from __future__ import annotations

from rulesage.ingest.chunk import TABLE_MAX, TARGET_MAX, build_sections
from rulesage.ingest.extract.blocks import Block


def sentence(i: int) -> str:
    return f"Sentence number {i} tells the players one more small thing about the rule."  # 13 words


def test_heading_body_is_one_section_with_sized_passages() -> None:
    paras = [Block("para", " ".join(sentence(i * 5 + k) for k in range(5)), 3, 3) for i in range(12)]
    sections = build_sections([Block("heading", "Combat", 3, 3, 1), *paras])
    assert len(sections) == 1 and sections[0].heading_path == ("Combat",)
    words = [len(p.text.split()) for p in sections[0].passages]
    assert all(w <= TARGET_MAX for w in words) and sum(words) == 1 + 12 * 5 * 13
    assert all(w >= 100 for w in words[:-1])
    assert sections[0].passages[0].text.startswith("Combat\n\n")  # the book's heading, nothing invented
    # Cut at paragraph boundaries: every passage ends a sentence.
    assert all(p.text.rstrip().endswith(".") for p in sections[0].passages)


def test_long_paragraph_cut_at_sentences_with_exact_pages() -> None:
    text = " ".join(sentence(i) for i in range(60))  # 780 words, crosses onto page 8 at sentence 30
    offset = text.index(sentence(30))
    block = Block("para", text, 7, 8, page_marks=[(offset, 8)])
    passages = build_sections([Block("heading", "Movement", 7, 7, 1), block])[0].passages
    assert len(passages) >= 3
    assert passages[0].page_start == 7 and passages[0].page_end == 7
    assert passages[-1].page_start == 8 and passages[-1].page_end == 8
    assert " ".join(" ".join(p.text.split()) for p in passages) == "Movement " + " ".join(text.split())


def test_table_is_kept_whole_in_its_own_passage() -> None:
    rows = ["Weapon\tCost\tDamage"] + [f"Sword {i}\t{i} gp\t1d{i}" for i in range(20)]
    blocks = [
        Block("heading", "Weapons", 1, 1, 1),
        Block("para", "Weapons are listed below.", 1, 1),
        Block("table", "\n".join(rows), 1, 2),
        Block("para", "Finesse weapons use Dexterity.", 2, 2),
    ]
    passages = build_sections(blocks)[0].passages
    kinds = [p.kind for p in passages]
    assert kinds == ["prose", "table", "prose"]
    assert passages[1].text == "\n".join(rows)
    assert (passages[1].page_start, passages[1].page_end) == (1, 2)


def test_huge_table_split_by_rows_repeating_header() -> None:
    header = "Level\tXP\tHit Dice\tAttack\tNotes"
    rows = [header] + [f"{i}\t{i * 1000}\t{i}d8\t+{i}\tgains a feature at this level" for i in range(80)]
    passages = build_sections([Block("table", "\n".join(rows), 4, 4)])[0].passages
    assert len(passages) > 1 and all(p.kind == "table" for p in passages)
    assert all(p.text.split("\n")[0] == header for p in passages)
    assert all(len(p.text.split()) <= TABLE_MAX + 12 for p in passages)
    body = [r for p in passages for r in p.text.split("\n")[1:]]
    assert body == rows[1:]


def test_heading_titles_a_following_table() -> None:
    blocks = [Block("heading", "Thief Abilities", 5, 5, 2), Block("table", "Level\tOpen Locks\n1\t25", 5, 5)]
    passages = build_sections(blocks)[0].passages
    assert len(passages) == 1 and passages[0].text.startswith("Thief Abilities\nLevel")


def test_nested_heading_paths() -> None:
    blocks = [
        Block("heading", "Part 1", level=1),
        Block("heading", "Races", level=2),
        Block("para", "Elves are tall."),
        Block("heading", "Classes", level=2),
        Block("para", "Fighters fight."),
        Block("heading", "Part 2", level=1),
        Block("para", "Spells."),
    ]
    paths = [s.heading_path for s in build_sections(blocks)]
    assert paths == [("Part 1", "Races"), ("Part 1", "Classes"), ("Part 2",)]
