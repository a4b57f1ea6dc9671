"""The category leg's learned examples: which labelled training questions become examples."""

from __future__ import annotations

from training.category.learn import HELD_OUT_FOLD, Labelled, examples, fold


def labelled(n: int, want_fold: bool) -> list[str]:
    """``n`` question texts in (or out of) the calibration fold."""
    out: list[str] = []
    i = 0
    while len(out) < n:
        i += 1
        text = f"Can my warlock use a reaction on turn {i}?"
        if (fold(text) == HELD_OUT_FOLD) == want_fold:
            out.append(text)
    return out


def test_only_single_category_questions_outside_both_held_out_sets_become_examples() -> None:
    kept, calib = labelled(4, False), labelled(1, True)
    one = frozenset({"Combat"})
    rows = examples(
        [
            Labelled(kept[0], one, "written"),
            Labelled(kept[1], frozenset({"Combat", "Spells"}), "written"),  # two categories: ambiguous
            Labelled(kept[2], one, "https://example.org/t/2", held_out=True),  # the trainers' held-out split
            Labelled(calib[0], one, "written"),  # the calibration fold
            Labelled(kept[3], frozenset(), "written"),  # answered outside every mapped section
        ]
    )
    assert [r["question"] for r in rows] == [kept[0]]
    assert rows[0] == {"category": "Combat", "question": kept[0], "source": "written"}
