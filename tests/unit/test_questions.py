from __future__ import annotations

import pytest

from rulesage.core.questions import BadQuestion, check_slug, clean_question


def test_empty_and_blank_questions_are_refused() -> None:
    for raw in ["", "   ", "\x00\x01\n"]:
        with pytest.raises(BadQuestion, match="empty"):
            clean_question(raw)


def test_over_long_question_names_the_limit() -> None:
    with pytest.raises(BadQuestion, match="10,000 characters long; the limit is 1,500"):
        clean_question("x" * 10_000)


def test_control_characters_are_stripped() -> None:
    assert clean_question("can I\x07 move?\x1b") == "can I  move?"


def test_slugs() -> None:
    assert check_slug("dnd-5e-srd") == "dnd-5e-srd"
    for bad in ["", "Robert'); DROP TABLE games;--", "../etc", "x" * 200]:
        with pytest.raises(BadQuestion):
            check_slug(bad)
