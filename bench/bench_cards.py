"""The card table: how well the matcher finds the cards a question names, and how fast the name search is.

    .venv/bin/python bench/bench_cards.py [--game mtg] [--labels FILE] [--rounds 5] [--json]

Reads the game's card table from the configured database (DATABASE_URL or the embedded one; ingest the shelf
first: `rulesage ingest --shelf ../shared/corpus/shelf.toml`).

- Matcher: precision and recall of `rulesage.core.cards.CardIndex.find` against hand labels of the cards
  each MTG question of gold-dev and gold-real-dev names (`bench/card-labels.jsonl`: question id -> card
  names, no question text; the questions are read from ../shared/eval). Targets: precision >= 0.95,
  recall >= 0.90.
- Speed: p50/p95 of the matcher per question, and of the name search behind `GET /api/cards?q=` (the
  store's trigram query) over prefixes and misspellings of the labelled names. Target: search p50 < 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

import psycopg

from rulesage.config import shared_dir
from rulesage.core.cards import CardIndex
from rulesage.core.metrics import pct
from rulesage.db import database_url
from rulesage.store import cards as card_store

ROOT = Path(__file__).resolve().parents[1]


def questions() -> dict[str, str]:
    out = {}
    for name in ("gold-dev.jsonl", "gold-real-dev.jsonl"):
        for line in (shared_dir() / "eval" / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                out[row["id"]] = row["question"]
    return out


async def run(game: str, labels_path: Path, rounds: int) -> dict[str, object]:
    labels = [json.loads(x) for x in labels_path.read_text(encoding="utf-8").splitlines() if x.strip()]
    asked = questions()
    async with await psycopg.AsyncConnection.connect(database_url(start_embedded=False)) as conn:
        cur = await conn.execute("SELECT id FROM games WHERE slug = %s", (game,))
        row = await cur.fetchone()
        if row is None:
            raise SystemExit(f"unknown game {game!r}: ingest the shelf first")
        game_id = int(row[0])
        t0 = time.perf_counter()
        index = CardIndex.build(await card_store.names(conn, game_id))
        build_ms = (time.perf_counter() - t0) * 1000
        cur = await conn.execute("SELECT id, name FROM cards WHERE game_id = %s", (game_id,))
        names = {int(r[0]): r[1] for r in await cur.fetchall()}
        tp = fp = fn = 0
        wrong: list[dict[str, object]] = []
        match_ms: list[float] = []
        for lab in labels:
            q = asked[lab["id"]]
            for _ in range(rounds):
                t = time.perf_counter()
                found = index.find(q)
                match_ms.append((time.perf_counter() - t) * 1000)
            got = [names[m.card_id] for m in found]
            want = set(lab["cards"])
            tp += len(want & set(got))
            fp += len(set(got) - want)
            fn += len(want - set(got))
            if set(got) != want:
                wrong.append(
                    {"id": lab["id"], "extra": sorted(set(got) - want), "missed": sorted(want - set(got))}
                )
        typed = []
        for lab in labels:
            for name in lab["cards"]:
                typed += [name[:3], name[:6], name, name.replace("a", "e", 1)]
        search_ms: list[float] = []
        for _ in range(rounds):
            for q in typed:
                t = time.perf_counter()
                await card_store.search(conn, game_id, q)
                search_ms.append((time.perf_counter() - t) * 1000)
    return {
        "game": game,
        "questions": len(labels),
        "labelled_cards": tp + fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else 1.0,
        "recall": round(tp / (tp + fn), 4) if tp + fn else 1.0,
        "true_positives": tp,
        "false_positives": fp,
        "false_negatives": fn,
        "disagreements": wrong,
        "index_build_ms": round(build_ms, 1),
        "match_ms": pct(match_ms),
        "search_ms": pct(search_ms),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--game", default="mtg")
    ap.add_argument("--labels", type=Path, default=ROOT / "bench" / "card-labels.jsonl")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = asyncio.run(run(args.game, args.labels, args.rounds))
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"matcher on {out['questions']} questions ({out['labelled_cards']} labelled cards): precision "
        f"{out['precision']}, recall {out['recall']}; match p50 {out['match_ms']['p50']} ms "  # type: ignore[index]
        f"p95 {out['match_ms']['p95']} ms; name search p50 {out['search_ms']['p50']} ms "  # type: ignore[index]
        f"p95 {out['search_ms']['p95']} ms over {out['search_ms']['n']} queries"  # type: ignore[index]
    )
    for w in out["disagreements"]:  # type: ignore[attr-defined]
        print(f"  {w['id']}: extra {w['extra']}, missed {w['missed']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
