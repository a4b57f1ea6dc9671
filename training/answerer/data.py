"""Collect the quote selector's and the answerability model's training asks from the real road.

usage: rulesage train answerer-asks --out FILE [--train-share 0.3] [--limit N] [--questions GLOB]
       (against a running mesh over the whole shelf: `rulesage up --detach` first)

Every training question of ``data/questions/questions-*.jsonl`` that the evaluation guard lets through walks
the real search (fusion + the careful reader) exactly as an ask does. Written per ask, one JSON line: the
question as the road cleaned it, whether the book answers it, the reader's split of it (``val``: held out
from the reader's training, so its ranks are as honest there as on a new question; ``train``: the reader saw
it), the names of the cards the question names (``known``), the eight shown passages in the reader's order
with their text, heading, pages, reader score and whether each holds the row's quote (or rule), and every
sentence's span, MiniLM cosines (to the question, and to its asked sentence alone) and whether it holds the
quote. The cosines are the extractive scorer's own (stored sentence vectors where ingest drew them), so the
features computed from this file are the ones an ask computes.

Silent rows (``answerable`` false) and real posts (a URL source) are all kept; of the other answerable ones
every held-out row and a stable ``--train-share`` of the others. An ask with a degraded stage is written
with ``degraded`` and no passages: it measures nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from training.questions import VAL_SHARE

ROOT = Path(__file__).resolve().parents[2]

QUESTIONS = "data/questions/questions-*.jsonl"


def _share(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


def holds(p: dict[str, Any], q: Any) -> bool:
    """The passage answers the row: its quote (on the row's page, when the passage has pages) or its rule."""
    from rulesage.eval.gold import supports_evidence
    from training.questions import rule_row

    if not q.answerable or p["doc_key"] != q.doc:
        return False
    if q.rule:
        return bool(p["rule_id"]) and p["rule_id"] in {q.rule, rule_row(q.rule)}
    return supports_evidence(p, {"doc": q.doc, "page": q.page, "quote": q.quote})


def sentence_holds(text: str, q: Any) -> bool:
    """A sentence holds the quote when either contains the other, or they share a run of 8 words."""
    from rulesage.core.text import normalise, supports

    if not q.quote:
        return False
    a, b = normalise(text), normalise(q.quote)
    return bool(a) and (a in b or b in a or supports(text, q.quote) or supports(q.quote, text))


async def collect(rows: list[Any], out_path: Path) -> dict[str, int]:
    from rulesage.core.text import asked_apart
    from rulesage.road import BadQuestion, Road
    from services.answer.backends.extractive import BiEncoderScorer, sentence_inputs
    from services.answer.context import PgLibrary, with_vectors
    from services.answer.loop import known_names
    from services.answer.server import shown_of

    road = Road()
    await road.open()
    library = PgLibrary(road.pool)
    scorer = BiEncoderScorer()
    counts = {"asks": 0, "degraded": 0, "refused": 0}
    t0 = time.monotonic()
    with out_path.open("w", encoding="utf-8") as f:
        try:
            for i, (q, split) in enumerate(rows, 1):
                try:
                    out = await road.search(q.game, q.question)
                except BadQuestion:
                    counts["refused"] += 1
                    continue
                wrench = out.wrench.to_json()
                degraded = [a["arm"] for a in wrench.get("arms", []) if a.get("state") != "ok"] + [
                    s for s in ("fusion", "rerank") if (wrench.get(s) or {}).get("state") != "ok"
                ]
                rec: dict[str, Any] = {
                    "game": q.game,
                    "question": out.question,
                    "answerable": q.answerable,
                    "split": split,
                    "source": q.provenance,
                    "doc": q.doc,
                    "mtg_rule": bool(q.rule),
                    # the cards the question names, as the answer service is told them
                    "known": list(known_names(out.cards)),
                }
                if degraded or not out.passages:
                    rec["degraded"] = degraded or ["no passages"]
                    counts["degraded"] += 1
                    f.write(json.dumps(rec) + "\n")
                    continue
                views = with_vectors(
                    [shown_of(p) for p in out.passages], await library.vectors([p.id for p in out.passages])
                )
                per = [(p, sentence_inputs(p)) for p in views]
                s_cos = scorer.score_sentences(out.question, per)
                asked = asked_apart(out.question)
                a_cos = scorer.score_sentences(asked, per) if asked is not None else s_cos
                p_cos = scorer.score_passages(out.question, views)
                passages, at = [], 0
                for (p, inputs), pc in zip(per, p_cos, strict=True):
                    d = {
                        "id": p.id,
                        "doc_key": p.doc_key,
                        "doc_kind": p.doc_kind,
                        "page_start": p.page_start,
                        "page_end": p.page_end,
                        "rule_id": p.rule_id,
                        "heading_path": list(p.heading_path),
                        "text": p.text,
                        "rerank_score": p.rerank_score,
                        "cosine": round(pc, 6),
                    }
                    d["holds"] = holds(d, q)
                    d["sentences"] = [
                        {
                            "start": s,
                            "end": e,
                            "cosine": round(s_cos[at + j], 6),
                            "asked_cosine": round(a_cos[at + j], 6),
                            "holds": d["holds"] and (q.rule != "" or sentence_holds(p.text[s:e], q)),
                        }
                        for j, (s, e, _) in enumerate(inputs)
                    ]
                    at += len(inputs)
                    passages.append(d)
                rec["passages"] = passages
                f.write(json.dumps(rec) + "\n")
                counts["asks"] += 1
                if i % 100 == 0:
                    rate = i / (time.monotonic() - t0)
                    print(f"  {i}/{len(rows)} ({rate:.1f}/s)", file=sys.stderr, flush=True)
        finally:
            await road.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    from training.questions import eval_guard, load_questions, split_of

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--train-share", type=float, default=0.3, help="of the reader's training rows")
    ap.add_argument(
        "--val-share", type=float, default=VAL_SHARE, help="the reader's held-out share (its default)"
    )
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--questions", default=QUESTIONS, help="the training files (a glob under the root)")
    ns = ap.parse_args(argv)
    guard = eval_guard()
    rows: list[tuple[Any, str]] = []
    for q in load_questions(str(ROOT / ns.questions), silent=True):
        if guard.touches(q):
            continue
        if not q.answerable:
            rows.append((q, "silent"))
            continue
        split = split_of(q, ns.val_share)
        # every real post: they are the questions the product is for, and the fewest
        if split == "val" or _share(q.question) < ns.train_share or q.public_post:
            rows.append((q, split))
    rows.sort(key=lambda r: hashlib.sha1(r[0].question.encode()).hexdigest())
    if ns.limit:
        rows = rows[: ns.limit]
    print(f"{len(rows)} asks", file=sys.stderr)
    counts = asyncio.run(collect(rows, Path(ns.out)))
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
