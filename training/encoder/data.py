"""Encoder training rows: (question, the passage that answers it, one hard negative), as the dense arm reads
them (a passage's nearest headings, then its text), each marked ``public`` when its question is a real
player's post (a recipe may weigh those).

The questions are the reviewed training questions (data/questions/questions-*.jsonl). The positive and the
hard negatives come from the reranker's data layer: the passage that holds the row's quote (or prints its
rule), and the top of a two-arm election (Postgres full text + dense cosine, RRF) that holds neither. The
negative is drawn among the first few such passages, not always the first: the very top of the election is
where a second passage stating the same rule sits, and teaching the encoder against it teaches it wrong.
The evaluation guard (every evaluation question, quote, rule and source, and eval/reserved.py's reserved
questions) runs inside that layer and refuses to run without the evaluation folder.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

from rulesage.ingest.store import active_space, embed_text
from training.questions import VAL_SHARE

NEGATIVE_DEPTH = 5  # the hard negative is drawn among the election's first 5 passages that do not answer


def build(pattern: str, out: Path, seed: int, val_share: float = VAL_SHARE) -> dict[str, Any]:
    """Write train.jsonl and val.jsonl under ``out``; return the counts of what was kept and dropped."""
    from rulesage import db
    from training.questions import build_groups, load_questions

    conn = db.connect(autocommit=True)
    questions = load_questions(pattern)
    groups, counts, indexes = build_groups(
        conn, questions, NEGATIVE_DEPTH, pseudo=0, seed=seed, val_share=val_share, pool_depth=40
    )
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=True)
    splits: Counter[str] = Counter()
    games: Counter[str] = Counter()
    rows: dict[str, list[dict[str, str | bool]]] = {"train": [], "val": []}
    for g in groups:
        index = indexes[g.family_id]
        pos, neg = index.passages[g.positive], index.passages[rng.choice(g.negatives[:NEGATIVE_DEPTH])]
        rows[g.split].append(
            {
                "anchor": g.question,
                "positive": embed_text(pos.heading_path, pos.text),
                "negative": embed_text(neg.heading_path, neg.text),
                "public": g.public,
            }
        )
        splits[g.split] += 1
        games[index.passages[g.positive].game or index.passages[g.positive].doc_key] += 1
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
        "by_game": dict(games.most_common()),
        "space": space[1] if space else "",
        "sha256": digests,
    }
