"""The question tower's rows and its bank.

The bank is every live passage's stored vector as the shipped passage tower drew it (``live_passages``, read
family by family through ``training.pool.FamilyIndex``): the tower learns to read a question into that space,
and the passages are never embedded again. A row is a training question (data/questions/questions-*.jsonl,
kept by ``training.questions.answered`` with the evaluation guard inside, as every recipe's rows are), the
bank row of the passage that answers it (``label``), the other bank rows that hold its quote or print its
rule too (``also``: never counted as wrong), whether it is a real player's post (``public``) and which of the
question's search lanes the anchor is (``lane``). Splits are ``split_of``'s.

With ``card_lanes`` the tower also reads the lane the dense arm embeds for a question naming cards: for a
game with a card table such a question also searches as "dense.cards", the question followed by what its
first cards say (``rulesage.core.cards.search_text``). It gets a second row whose anchor is that lane's
text, built by the served code from the table as the fusion service reads it, with the same answer.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from training.questions import VAL_SHARE


class WrongSpace(RuntimeError):
    """The database's vectors are not the shipped passage tower's: a tower trained on them reads nothing."""


def build(pattern: str, out: Path, val_share: float = VAL_SHARE, card_lanes: bool = False) -> dict[str, Any]:
    """Write bank.npy, bank.json (each bank row's passage id and family), train.jsonl and val.jsonl under
    ``out``; return the counts and digests. ``card_lanes``: questions naming cards get their card lane's row
    too."""
    from rulesage import db
    from rulesage.embed import identity
    from rulesage.ingest.store import active_space
    from training.pool import FamilyIndex
    from training.questions import answered, family_ids, load_questions, split_of

    conn = db.connect(autocommit=True)
    space = active_space(conn)
    tower = identity(encoder="tuned")
    if space is None or space[1] != tower.model:
        raise WrongSpace(
            f"the database's vectors were drawn by {space[1] if space else 'nothing'}, not the shipped"
            f" passage tower {tower.model}: ingest the shelf with RULESAGE_ENCODER=tuned first"
        )
    indexes, offsets, vectors, owners = {}, {}, [], []
    at = 0
    for fam in sorted(set(family_ids(conn).values())):
        index = indexes[fam] = FamilyIndex(conn, fam)
        offsets[fam] = at
        vectors.append(index.vectors)
        owners += [{"id": p.id, "family": fam} for p in index.passages]
        at += len(index)
    counts: Counter[str] = Counter()
    rows: dict[str, list[dict[str, Any]]] = {"train": [], "val": []}
    questions = load_questions(pattern)
    kept = answered(conn, questions, counts, indexes)
    lanes = cards_lanes(conn, [q for q, *_ in kept]) if card_lanes else {}
    conn.close()
    for q, fam, pos, supporters in kept:
        base = offsets[fam]
        row = {
            "anchor": q.question,
            "label": base + pos,
            "also": sorted(base + s for s in supporters if s != pos),
            "public": q.public_post,
        }
        into = rows[split_of(q, val_share)]
        into.append(row)
        if q.question in lanes:  # the question as asked carries no "lane": it is the "dense" one
            into.append({**row, "anchor": lanes[q.question], "lane": "dense.cards"})
    out.mkdir(parents=True, exist_ok=True)
    bank = np.concatenate(vectors).astype(np.float32)
    np.save(out / "bank.npy", bank)
    (out / "bank.json").write_text(json.dumps(owners) + "\n")
    digests = {"bank": hashlib.sha256(bank.tobytes()).hexdigest()}
    for split, items in rows.items():
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items)
        (out / f"{split}.jsonl").write_text(body)
        digests[split] = hashlib.sha256(body.encode()).hexdigest()
    return {
        "questions_read": len(questions),
        "outcomes": dict(counts),
        "rows": {k: len(v) for k, v in rows.items()},
        "public_rows": {k: sum(r["public"] and "lane" not in r for r in v) for k, v in rows.items()},
        **(
            {
                "lanes": ["dense", "dense.cards"],
                "card_lane_rows": {k: sum("lane" in r for r in v) for k, v in rows.items()},
            }
            if card_lanes
            else {}
        ),
        "bank": {"passages": int(bank.shape[0]), "families": len(offsets)},
        "space": tower.model,
        "sha256": digests,
    }


def cards_lanes(conn: Any, questions: list[Any]) -> dict[str, str]:
    """Question text -> its "dense.cards" lane text, for the questions of games with a card table that name
    cards: the cards matched as the fusion service matches them (``CardIndex.find``), the first
    ``SEARCHED_CARDS`` of them searched (``search_text``), the lane built by the dense arm's ``lanes``."""
    from rulesage.core.cards import SEARCHED_CARDS, CardIndex, search_text
    from rulesage.store.cards import cards_sync, games_with_cards_sync, names_sync
    from services.dense.lanes import lanes

    games = games_with_cards_sync(conn)
    indexes = {slug: CardIndex.build(names_sync(conn, gid)) for slug, gid in games.items()}
    out: dict[str, str] = {}
    for q in questions:
        index = indexes.get(q.game)
        if index is None or q.question in out:
            continue
        mentions = index.find(q.question)
        found = cards_sync(conn, [m.card_id for m in mentions])
        named = [found[m.card_id] for m in mentions if m.card_id in found][:SEARCHED_CARDS]
        text = search_text((c.name, c.type_line, c.oracle) for c in named)
        if text:
            (lane,) = (ln for ln in lanes(q.question, [], text) if ln.name == "dense.cards")
            out[q.question] = lane.text
    return out
