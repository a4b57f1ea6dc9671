"""The distillation rows' choice of candidates (training.reader.distil.pick)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from training.reader.distil import label_spread, pick


def test_pick_keeps_holders_then_the_heads_best_then_a_draw() -> None:
    score = np.array([0.0, 0.0, 9.0, 1.0, 8.0, 2.0, 7.0, 3.0, 6.0, 4.0, 5.0, -1.0])
    got = pick(2, score, 8, random.Random(1))
    assert got[:2] == [0, 1]
    assert got[2:5] == [2, 4, 6]  # (8 - 2) // 2 places to the head's best others
    rest = got[5:]
    assert len(rest) == 3 and len(set(got)) == 8
    assert not set(rest) & {0, 1, 2, 4, 6}


def test_pick_is_seeded() -> None:
    score = np.arange(24, dtype=np.float32)
    assert pick(1, score, 8, random.Random(12)) == pick(1, score, 8, random.Random(12))


@pytest.mark.parametrize(("holders", "n"), [(0, 24), (8, 24), (2, 5)])
def test_pick_refuses_what_cannot_fill_the_list(holders: int, n: int) -> None:
    with pytest.raises(ValueError):
        pick(holders, np.zeros(n), 8, random.Random(0))


def test_the_labels_spread_is_read_from_the_rows_and_no_rows_is_an_error() -> None:
    rows = [{"labels": [3.0, 1.0]}, {"labels": [-1.0, 1.0]}]
    assert label_spread(rows) == {"mean": 1.0, "std": pytest.approx(2**0.5), "min": -1.0, "max": 3.0}
    with pytest.raises(ValueError, match="no labelled rows"):
        label_spread([])
