"""Sentence reader rows from the answerer's asks (``rulesage train answerer-asks``): the training questions
walked through the real road, their eight shown passages split into sentences, each labelled whether it
holds the row's quote (or, for a rule row, sits in the passage that prints the rule).

A row is (question, the answering sentence of at least ``MIN_POSITIVE_WORDS`` words, ``NEGATIVES`` hard
negatives), each sentence as the answer
service reads it (its passage's nearest heading, then the sentence: ``sentence_inputs``). The negatives are
the shown sentences the bi-encoder ranks highest that hold nothing, never a neighbour of an answering
sentence in its passage (a quote's other half, or the sentence that finishes it). Asks keep the split the
careful reader and the head were trained with (``val``: held out from them), so a held-out measure on
``val`` asks is as honest for every stage. The asks file itself was built through the evaluation guard;
``build`` runs the reserved-question check again on the rows it writes.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from training.questions import Guard

NEGATIVES = 5  # hard negatives per row
# an answering sentence of fewer words is a fragment the quote happens to contain (a heading repeated, "Until
# dispelled"), not one a ruling would lead with
MIN_POSITIVE_WORDS = 6


def texts_of(passage: dict[str, Any]) -> list[str]:
    """Each sentence of an ask's passage as the sentence reader reads it."""
    from services.answer.sentences import sentence_text

    heading = passage["heading_path"][-1] if passage["heading_path"] else ""
    return [sentence_text(heading, passage["text"][s["start"] : s["end"]]) for s in passage["sentences"]]


def row_of(ask: dict[str, Any]) -> dict[str, Any] | None:
    """One training row, or None when the shown sentences hold no answer or too few negatives."""
    cands: list[tuple[float, str, bool, bool, int]] = []  # (cosine, text, holds, by a holding one, words)
    for p in ask["passages"]:
        texts, sents = texts_of(p), p["sentences"]
        for j, s in enumerate(sents):
            near = any(sents[i]["holds"] for i in (j - 1, j + 1) if 0 <= i < len(sents))
            words = len(p["text"][s["start"] : s["end"]].split())
            cands.append((float(s["cosine"]), texts[j], bool(s["holds"]), near, words))
    positives = sorted((c for c in cands if c[2] and c[4] >= MIN_POSITIVE_WORDS), key=lambda c: -c[0])
    negatives = sorted((c for c in cands if not c[2] and not c[3]), key=lambda c: -c[0])
    if not positives or len(negatives) < NEGATIVES:
        return None
    row: dict[str, Any] = {
        "question": ask["question"],
        "public": ask["source"] != "written",
        "positive": positives[0][1],
    }
    for n, c in enumerate(negatives[:NEGATIVES], 1):
        row[f"negative_{n}"] = c[1]
    return row


def build(asks_path: Path, out: Path, guard: Guard | None = None) -> dict[str, Any]:
    """Write train.jsonl (the asks of the careful reader's training split) and val.jsonl (its held-out
    split, every ask whole) under ``out``; return the counts. The evaluation guard (by default the
    evaluation folder's: it refuses to run without it) runs again on each ask's question and source."""
    from training.questions import Question, eval_guard

    guard = guard or eval_guard()
    counts: Counter[str] = Counter()
    rows: dict[str, list[dict[str, Any]]] = {"train": [], "val": []}
    with asks_path.open(encoding="utf-8") as f:
        for line in f:
            ask = json.loads(line)
            if ask.get("degraded") or not ask.get("passages"):
                counts["degraded"] += 1
                continue
            question = Question(
                ask["game"],
                ask.get("doc", ""),
                None,
                "",
                ask["question"],
                "questions",
                provenance=ask.get("source", "written"),
            )
            if guard.touches(question):
                counts["dropped-eval-overlap"] += 1
                continue
            if not ask["answerable"]:
                counts["silent"] += 1
                continue
            if ask["split"] == "val":
                rows["val"].append(ask)
                counts["val"] += 1
                continue
            row = row_of(ask)
            if row is None:
                counts["no-answering-sentence-shown"] += 1
                continue
            rows["train"].append(row)
            counts["train"] += 1
            counts["train-public"] += int(row["public"])
    out.mkdir(parents=True, exist_ok=True)
    digests = {}
    for split, items in rows.items():
        items.sort(key=lambda r: hashlib.sha1(r["question"].encode()).hexdigest())  # stable, not file order
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items)
        (out / f"{split}.jsonl").write_text(body)
        digests[split] = hashlib.sha256(body.encode()).hexdigest()
    return {"asks": str(asks_path), "counts": dict(counts), "negatives_per_row": NEGATIVES, "sha256": digests}
