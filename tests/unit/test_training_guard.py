"""The guard that keeps every evaluation file out of the reranker's training data."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from rulesage.config import shared_dir
from training.questions import (
    MissingEvaluation,
    Question,
    eval_guard,
    load_questions,
    reserved_check,
)

RESERVED_PY = shared_dir() / "eval" / "reserved.py"


def _reserve(folder: Path, questions: tuple[str, ...] = (), threads: tuple[str, ...] = ()) -> None:
    """The evaluation's own reserved.py in ``folder``, with a reserved.json holding these questions' and
    threads' hashes (made by that module's own functions, as the real file is)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(RESERVED_PY, folder / "reserved.py")
    (folder / "reserved.json").write_text(json.dumps({"runs": [], "threads": []}))
    check = reserved_check(folder)
    module = check.__globals__

    def h(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    runs = sorted({h(r) for q in questions for r in module["runs"](q)})
    (folder / "reserved.json").write_text(
        json.dumps({"runs": runs, "threads": sorted(h(module["thread"](t)) for t in threads)})
    )


def _q(question: str, quote: str = "", rule: str = "", provenance: str = "written") -> Question:
    return Question("g", "d", None, quote, question, "questions", rule=rule, provenance=provenance)


def test_the_guard_refuses_to_run_without_the_evaluation_folder(tmp_path: Path) -> None:
    with pytest.raises(MissingEvaluation, match="cannot run"):
        eval_guard(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingEvaluation):
        eval_guard(tmp_path / "empty")


def test_the_guard_refuses_to_run_without_the_reserved_check(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"question": "q?"}) + "\n")
    with pytest.raises(MissingEvaluation, match="reserved"):
        eval_guard(tmp_path)


def test_rows_repeating_a_reserved_question_or_its_thread_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text(json.dumps({"question": "an unrelated gold question?"}) + "\n")
    held_out = "my opponent cast a spell that copies my creature and then sacrificed it to draw cards"
    _reserve(tmp_path, questions=(held_out,), threads=("https://forum.example.org/t/123",))
    guard = eval_guard(tmp_path)
    # eight words in a row of the reserved question, in other surroundings
    assert guard.touches(_q("So: a spell that copies my creature and then sacrificed it. Legal?"))
    assert guard.touches(_q("other words", provenance="https://www.forum.example.org/t/123#post-9"))
    assert not guard.touches(_q("a spell that copies my creature: who controls it?"))
    assert not guard.touches(_q("other words", provenance="https://forum.example.org/t/124"))


def test_the_guard_reads_every_file_and_every_kind_of_overlap(tmp_path: Path) -> None:
    _reserve(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.jsonl").write_text(
        json.dumps(
            {
                "question": "Can my rogue sneak attack?",
                "evidence": [{"quote": "The attack must use a finesse or a ranged weapon."}],
            }
        )
        + "\n"
    )
    (tmp_path / "sub" / "b.jsonl").write_text(
        json.dumps(
            {
                "question": "trample?",
                "source": "https://example.org/q/1",
                "evidence": [{"rule": "702.19c", "quote": "x"}],
            }
        )
        + "\n"
    )
    guard = eval_guard(tmp_path)
    assert guard.touches(_q("can my  ROGUE sneak attack?"))  # same question after normalising
    assert guard.touches(_q("other", quote="the attack must use a finesse or a ranged weapon."))
    assert guard.touches(_q("other", rule="702.19b"))  # the same rule's family
    assert guard.touches(_q("other words", quote="q", provenance="https://example.org/q/1"))
    assert not guard.touches(_q("how far can I move?", quote="You can move up to your speed on your turn."))
    assert not guard.touches(_q("what is ward?", rule="702.21a"))


def test_rows_load_with_their_provenance_and_silent_rows_are_skipped(tmp_path: Path) -> None:
    rows = [
        {
            "game": "mtg",
            "doc": "mtg-cr",
            "rule": "702.19b",
            "question": "trample over a chump?",
            "source": "written",
        },
        {"game": "g", "doc": "d", "quote": "q words", "question": "x?", "source": "https://example.org/q/2"},
        {"game": "g", "doc": "d", "answerable": False, "question": "silent?", "source": "written"},
    ]
    path = tmp_path / "questions-x.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    loaded = load_questions(str(tmp_path / "questions-*.jsonl"))
    assert [(q.rule, q.provenance) for q in loaded] == [
        ("702.19b", "written"),
        ("", "https://example.org/q/2"),
    ]


def test_a_row_without_quote_or_rule_is_judged_by_its_question_alone(tmp_path: Path) -> None:
    _reserve(tmp_path)
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"question": "q?", "evidence": [{"quote": "any words at all"}]}) + "\n"
    )
    guard = eval_guard(tmp_path)
    assert not guard.touches(_q("is there a flanking rule?"))
    assert guard.touches(_q("q?"))
