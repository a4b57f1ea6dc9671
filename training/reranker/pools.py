"""The served election's candidate pools for the head's training questions.

usage: rulesage train reranker-pools --out FILE [--questions GLOB] [--depth 48] [--split all|val|train]
       [--limit N] [--concurrency 3]
       (against a running mesh over the whole shelf: `rulesage up --detach` first)

The head is served on the fusion service's first 48 candidates (four arms, the alias and card lanes, RRF
k=60) and its served score reads their fused order (``score - prior * ln(1 + position)``). The stand-in
election of ``training.pool`` (full text + dense, two arms) ranks differently, so a head trained on its pools
learns against negatives and positions the service never shows it. This walks every answerable training
question that the evaluation guard lets through the fusion service, exactly as an ask does, and writes one
JSON line per question: the game, the question as the training file has it, and the fused candidates'
passage ids best first (``ids``), each one's ranks in the lists that voted for it (``ranks``, list -> 1-based
rank) and fused score (``fused``), and how many named cards joined the search (``cards``); or ``degraded``
with the stages that fell back (such a row trains nothing). ``rulesage train reranker --pools FILE`` reads
the ids; the ranks are each list's own vote, for measuring an order learned over them. ``--split val`` walks
only the held-out split (``training.questions.split_of``), the questions no head trained on (769 of 7,942
today): all that ``rulesage train reranker-asked`` and ``reranker-blend`` read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from training.questions import Question

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = "data/questions/questions-*.jsonl"
POOL_DEPTH = 48  # the served candidates a head trains against (the reader scored 48 when they were drawn)


async def collect(rows: list[Any], out_path: Path, depth: int | None, concurrency: int) -> dict[str, int]:
    """``depth``: fused candidates kept per question; None, as many as the road hands the reader."""
    from rulesage.core.models import degraded
    from rulesage.road import BadQuestion, Road

    road = Road()
    await road.open()
    depth = depth or road.settings.rulesage_rerank_candidates
    counts = {"pools": 0, "degraded": 0, "refused": 0}
    gate = asyncio.Semaphore(concurrency)
    t0 = time.monotonic()
    done = 0

    async def one(q: Any) -> dict[str, Any] | None:
        nonlocal done
        async with gate:
            try:
                out = await road.fuse_only(q.game, q.question)
            except BadQuestion:
                counts["refused"] += 1
                return None
        done += 1
        if done % 250 == 0:
            print(
                f"  {done}/{len(rows)} ({done / (time.monotonic() - t0):.1f}/s)", file=sys.stderr, flush=True
            )
        rec: dict[str, Any] = {"game": q.game, "question": q.question}
        bad = [
            f"arm:{name}" if kind == "arm" else name
            for kind, name, _ in degraded(out.wrench.to_json(), ("fusion",))
        ]
        if bad or not out.candidates:
            rec["degraded"] = bad or ["no candidates"]
            counts["degraded"] += 1
        else:
            kept = out.candidates[:depth]
            rec["ids"] = [int(p.id) for p in kept]
            rec["ranks"] = [{r.arm: int(r.rank) for r in p.ranks} for p in kept]
            rec["fused"] = [round(float(p.fused_score), 6) for p in kept]
            rec["cards"] = sum(1 for c in out.wrench.cards if c.searched)
            counts["pools"] += 1
        return rec

    try:
        recs = await asyncio.gather(*(one(q) for q in rows))
    finally:
        await road.close()
    with out_path.open("w", encoding="utf-8") as f:
        for rec in recs:
            if rec is not None:
                f.write(json.dumps(rec) + "\n")
    return counts


def load_pools(path: str | Path) -> dict[tuple[str, str], list[int]]:
    """(game, question) -> the fused candidates' passage ids, best first; degraded rows left out."""
    out: dict[tuple[str, str], list[int]] = {}
    with Path(path).open(encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if "ids" in rec:
                out[(rec["game"], rec["question"])] = [int(i) for i in rec["ids"]]
    return out


def training_rows(pattern: str, split: str = "all") -> list[Question]:
    """The answerable training questions the evaluation guard lets through; ``split``: all of them, or only
    the held-out split's (``val``) or the trained one's (``train``), by ``split_of`` as every trainer
    splits them."""
    from training.questions import eval_guard, load_questions, split_of

    guard = eval_guard()
    return [
        q
        for q in load_questions(pattern)
        if not guard.touches(q) and (split == "all" or split_of(q) == split)
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rulesage train reranker-pools", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the JSONL file to write (keep it under artifacts/)")
    ap.add_argument("--questions", default=QUESTIONS, help="the training files (a glob under the root)")
    ap.add_argument(
        "--depth",
        type=int,
        default=POOL_DEPTH,
        help=f"fused candidates kept per question (default {POOL_DEPTH}, the depth the shipped heads"
        " trained on; the road hands the reader fewer)",
    )
    ap.add_argument(
        "--split",
        choices=("all", "val", "train"),
        default="all",
        help="all training questions, or only the held-out split's (val) or the trained one's",
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions (a smoke run)")
    ap.add_argument("--concurrency", type=int, default=3, help="asks in flight at once")
    ns = ap.parse_args(argv)
    rows = training_rows(str(ROOT / ns.questions), ns.split)
    if ns.limit:
        rows = rows[: ns.limit]
    print(f"{len(rows)} questions", file=sys.stderr)
    t0 = time.monotonic()
    counts = asyncio.run(collect(rows, Path(ns.out), ns.depth, ns.concurrency))
    print(json.dumps({**counts, "minutes": round((time.monotonic() - t0) / 60, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
