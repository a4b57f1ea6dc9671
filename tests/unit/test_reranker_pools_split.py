"""Which training questions ``rulesage train reranker-pools --split`` walks: the held-out split is the one
``build_groups`` holds out (by quote), the rest is trained on, and silent questions draw no pool."""

from __future__ import annotations

import json
from pathlib import Path

from training.questions import split_of
from training.reranker.pools import training_rows


def write(tmp_path: Path) -> str:
    rows = [
        {
            "game": "solitaire-klondike",
            "doc": "solitaire-klondike-rules",
            "question": f"question {i} about quote {i // 2}?",
            "quote": f"the tableau holds seven piles in arrangement number {i // 2}",
        }
        for i in range(400)
    ]
    rows.append(
        {
            "game": "solitaire-klondike",
            "doc": "solitaire-klondike-rules",
            "question": "silent?",
            "answerable": False,
        }
    )
    path = tmp_path / "questions-x.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(tmp_path / "questions-*.jsonl")


def test_the_splits_partition_the_answerable_questions(tmp_path: Path) -> None:
    pattern = write(tmp_path)
    every, val, train = (training_rows(pattern, s) for s in ("all", "val", "train"))
    assert len(every) == 400  # the silent question draws no pool
    assert {q.question for q in val} | {q.question for q in train} == {q.question for q in every}
    assert not {q.question for q in val} & {q.question for q in train}
    assert val and all(split_of(q) == "val" for q in val)
    assert len(val) < len(train)  # about a tenth is held out


def test_questions_on_one_quote_never_straddle_the_split(tmp_path: Path) -> None:
    val = training_rows(write(tmp_path), "val")
    quotes = {q.quote for q in val}
    assert all(sum(q.quote == quote for q in val) == 2 for quote in quotes)
