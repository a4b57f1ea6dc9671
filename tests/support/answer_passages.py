"""Two SRD passages the answer tests read: one answers a movement question, one is about spells."""

from __future__ import annotations

from services.answer.citations import ShownPassage

MOVE = ShownPassage(
    id=1,
    text=(
        "Movement. On your turn, you can move a distance up to your speed. You can break up your movement "
        "on your turn, using some of your speed before and after your action.\n\n"
        "Difficult terrain costs 1 extra foot for every foot you move."
    ),
    doc_key="srd",
    doc_title="System Reference Document 5.1",
    page_start=90,
    heading_path=("Combat", "Movement and Position"),
)
SPELLS = ShownPassage(
    id=2,
    text=(
        "A spell's components are the physical requirements you must meet in order to cast it. "
        "Verbal components require the chanting of mystic words."
    ),
    doc_key="srd",
    doc_title="System Reference Document 5.1",
    page_start=101,
    heading_path=("Spellcasting", "Components"),
)
