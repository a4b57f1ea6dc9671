"""Cross reader rows: (question, the window that answers it, several hard negatives), as the reader reads
them at serving: the passage's nearest headings, then its 1,200-character window. Each row says whether
its question is a real player's post (``public``), so a recipe can weigh them and a measure can report them
apart.

The groups come from the reranker's data layer (``training.questions.build_groups``): the passage that holds
the row's quote (or prints its rule) and the top of a two-arm election over the active space that holds
neither. The negatives are drawn among the first ``depth`` such passages rather than taken from the very top,
where a second passage stating the same rule sits. The evaluation guard runs inside that layer and refuses
to run without the evaluation folder.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from rulesage.ingest.store import active_space
from services.rerank.window import reader_text, window
from training.questions import VAL_SHARE

NEGATIVES = 5  # hard negatives per row
DEPTH = 12  # drawn among the election's first 12 passages that do not answer


def build(pattern: str, out: Path, seed: int, val_share: float = VAL_SHARE) -> dict[str, Any]:
    """Write train.jsonl and val.jsonl under ``out`` (val rows keep the whole pool, for measuring the
    order); return the counts of what was kept and dropped."""
    from rulesage import db
    from training.questions import build_groups, load_questions

    conn = db.connect(autocommit=True)
    questions = load_questions(pattern)
    groups, counts, indexes = build_groups(
        conn, questions, DEPTH, pseudo=0, seed=seed, val_share=val_share, pool_depth=40
    )
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    splits: Counter[str] = Counter()
    rows: dict[str, list[dict[str, Any]]] = {"train": [], "val": []}
    for g in groups:
        index = indexes[g.family_id]

        def text(i: int) -> str:
            p = index.passages[i]  # noqa: B023 (used inside this iteration only)
            return reader_text(p.heading_path, p.text)

        if len(g.negatives) < NEGATIVES:
            counts["too-few-negatives-for-the-reader"] += 1
            continue
        row: dict[str, Any] = {"question": g.question, "public": g.public, "positive": text(g.positive)}
        for n, i in enumerate(sorted(rng.sample(g.negatives[:DEPTH], NEGATIVES)), 1):
            row[f"negative_{n}"] = text(i)
        if g.split == "val":  # the pool, labelled, to measure the order the reader (and the head) gives it
            row["pool"] = [text(i) for i in g.pool]
            row["pool_windows"] = [window(index.passages[i].text) for i in g.pool]  # what the head reads
            row["labels"] = [int(i in g.supporters) for i in g.pool]
        rows[g.split].append(row)
        splits[g.split] += 1
    digests = {}
    for split, items in rows.items():
        rng.shuffle(items)
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items)
        (out / f"{split}.jsonl").write_text(body)
        digests[split] = hashlib.sha256(body.encode()).hexdigest()
    space = active_space(conn)
    conn.close()
    return {
        "questions_read": len(questions),
        "outcomes": dict(counts),
        "rows": dict(splits),
        "negatives_per_row": NEGATIVES,
        "negative_depth": DEPTH,
        "space": space[1] if space else "",
        "sha256": digests,
    }
