"""Learned examples for the category classifier: the training questions, labelled by the category whose
sections hold the passage that answers them.

usage: rulesage train category [--out data/categories]   (needs the shelf and its maps ingested)

The authored examples of a map are few and written for it; the training questions (``data/questions/``,
never the evaluation's files: the training guard drops any that overlap them) are many and in players'
voices. Each one whose answer lies in exactly one category's sections becomes an example of that category,
with its provenance. One question in five (by a hash of its text, ``HELD_OUT_FOLD``) is never written: the
threshold is measured on those (training/category/calibrate.py), so it is never fitted on its own
examples. Nor is a question of the split every other trainer holds out (``training.questions.split_of``),
so the held-out real posts (`rulesage train held-out`) stay unseen by the leg too. The rows go to
``<slug>.learned.jsonl`` beside the map, which names the file (``learned = ...``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FOLDS = 5
HELD_OUT_FOLD = 0
QUESTIONS = str(ROOT / "data" / "questions" / "questions-*.jsonl")


def fold(question: str) -> int:
    return int(hashlib.sha1(question.encode("utf-8")).hexdigest(), 16) % FOLDS


@dataclass(frozen=True)
class Labelled:
    question: str
    categories: frozenset[str]  # empty: the answer lies outside every mapped section
    source: str  # 'written', or the URL of the public post
    # in the split every trainer holds out (training.questions.split_of): never an example
    held_out: bool = False


def mapped_games(conn: Any) -> list[tuple[str, int]]:
    """(slug, id) of every game with a loaded category map; an empty list says so on stderr."""
    games = [
        (str(r[0]), int(r[1]))
        for r in conn.execute(
            "SELECT g.slug, g.id FROM games g JOIN category_maps m ON m.game_id = g.id ORDER BY g.slug"
        ).fetchall()
    ]
    if not games:
        print("no category map is loaded: ingest with --categories data/categories first", file=sys.stderr)
    return games


def label(conn: Any, slug: str, game_id: int, pattern: str = QUESTIONS) -> list[Labelled]:
    """The game's training questions whose answering passage is on the shelf, with the categories whose
    sections hold it."""
    from training.pool import FamilyIndex
    from training.questions import eval_guard, family_ids, load_questions, positive_of, split_of

    guard = eval_guard()
    questions = [q for q in load_questions(pattern) if q.game == slug and not guard.touches(q)]
    members: dict[int, set[str]] = defaultdict(set)
    for name, pid in conn.execute(
        "SELECT c.name, cp.passage_id FROM category_passages cp JOIN categories c ON c.id = cp.category_id"
        " WHERE c.game_id = %s",
        (game_id,),
    ).fetchall():
        members[int(pid)].add(str(name))
    index = FamilyIndex(conn, family_ids(conn)[slug])
    out = []
    for q in questions:
        _, supporters = positive_of(index, q)
        if not supporters:
            continue
        cats: set[str] = set()
        for i in supporters:
            cats |= members.get(index.passages[i].id, set())
        out.append(Labelled(q.question, frozenset(cats), q.provenance, split_of(q) == "val"))
    return out


def examples(labelled: list[Labelled]) -> list[dict[str, str]]:
    """The learned examples: questions answered in exactly one category's sections, neither in the
    calibration fold nor in the trainers' held-out split, sorted by category and question."""
    rows = [
        {"category": next(iter(x.categories)), "question": x.question, "source": x.source}
        for x in labelled
        if len(x.categories) == 1 and fold(x.question) != HELD_OUT_FOLD and not x.held_out
    ]
    return sorted(rows, key=lambda r: (r["category"], r["question"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "data" / "categories"))
    ns = ap.parse_args(argv)
    from rulesage import db

    with db.connect(db.database_url(start_embedded=True)) as conn:
        games = mapped_games(conn)
        if not games:
            return 2
        for slug, game_id in games:
            rows = examples(label(conn, slug, game_id))
            path = Path(ns.out) / f"{slug}.learned.jsonl"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
            print(f"{slug}: {len(rows)} learned examples -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
