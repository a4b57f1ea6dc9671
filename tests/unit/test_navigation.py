from __future__ import annotations

from rulesage.ingest.navigation import is_navigation


def test_contents_and_index_pages_are_navigation() -> None:
    toc = (
        "Contents\n1\tIntroduction\t1\n2.1\tSetup . . . . . . . . . . . . . . . .\t2\n"
        "2.2\tMovement . . . . . . . . .\t3"
    )
    index = "Ability Rolls......................189\tRunning.............................51\nDwarves.......12"
    assert is_navigation(toc)
    assert is_navigation(index)


def test_rules_text_and_tables_are_not() -> None:
    table = "Armor Type\tPrice\tWeight\tAC\nLeather Armor\t20 gp\t15\t13\nChain Mail\t60 gp\t40\t15"
    prose = "Each player has fifteen checkers... or so the old rules said. Move them 3 points."
    assert not is_navigation(table)
    assert not is_navigation(prose)
    assert not is_navigation("")
