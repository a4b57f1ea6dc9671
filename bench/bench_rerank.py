"""Latency of the careful reader: rerank 80 real candidates per question, print p50/p95 and the cost of one
forward pass.

Candidates are real passages from the database: for each gold-dev question (only its text and game are
used), the stand-in election (Postgres full-text + dense cosine, RRF) over the game's family, top 80. The
timed path is the service's own (services.rerank.server.read: window, tokens, scoring, guarantees, deal),
without the gRPC hop.

    python bench/bench_rerank.py [--questions 20] [--candidates 80] [--model interim|PATH] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rulesage import db  # noqa: E402
from rulesage.embed import shared_embedder  # noqa: E402
from rulesage.v1 import common_pb2  # noqa: E402
from services.rerank.scorer import RuntimeOptions, Tokens, load_scorer, pad  # noqa: E402
from services.rerank.server import read  # noqa: E402
from services.rerank.train.data import GOLD, family_ids  # noqa: E402
from services.rerank.train.pool import FamilyIndex  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def forward_cost(scorer, opts: RuntimeOptions, rows: int, tokens: int, repeats: int = 3) -> float:  # type: ignore[no-untyped-def]
    """Milliseconds of one session.run over ``rows`` windows of ``tokens`` word pieces (+ the question row
    for the trained model)."""
    ids = [[101, *([2000] * (tokens - 2)), 102] for _ in range(rows)]
    if hasattr(scorer, "score_and_cosine"):
        ids = [[101, 2000, 2001, 102], *ids]
    x, m = pad(ids)
    feeds = {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)}
    scorer.session.run(None, feeds)
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        scorer.session.run(None, feeds)
        best.append((time.perf_counter() - t0) * 1000)
    return min(best)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--candidates", type=int, default=80)
    p.add_argument("--model", default="", help="'' shipped model (or interim), 'interim', or an ONNX path")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    opts = RuntimeOptions(threads=args.threads, max_tokens=args.max_tokens, batch=args.batch)
    scorer = load_scorer(opts, args.model)
    conn = db.connect(autocommit=True)
    fams = family_ids(conn)
    gold = [json.loads(line) for line in GOLD.read_text().splitlines()]
    gold = [g for g in gold if g["game"] in fams][: args.questions]
    vecs = shared_embedder().embed_queries([g["question"] for g in gold])
    indexes: dict[int, FamilyIndex] = {}
    requests = []
    for g, vec in zip(gold, vecs, strict=True):
        fam = fams[g["game"]]
        index = indexes.setdefault(fam, FamilyIndex(conn, fam))
        pool = index.fused(conn, g["question"], vec, k=args.candidates)
        cands = [
            common_pb2.Passage(
                id=index.passages[i].id,
                text=index.passages[i].text,
                doc_kind=index.passages[i].doc_kind,
                game=index.passages[i].game,
            )
            for i in pool
        ]
        requests.append((g["question"], g["game"], cands))
    read(scorer, "warm up", "", requests[0][2][:8], 8)
    times, sizes = [], []
    for question, game, cands in requests:
        t0 = time.perf_counter()
        read(scorer, question, game, cands, 8)
        times.append((time.perf_counter() - t0) * 1000)
        sizes.append(len(cands))
    toks = Tokens(args.max_tokens)
    lengths = [len(r) for _, _, c in requests for r in toks.windows([x.text for x in c])]
    result = {
        "model": scorer.identity,
        "threads": args.threads or os.cpu_count(),
        "batch": args.batch,
        "max_tokens": args.max_tokens,
        "questions": len(times),
        "candidates_mean": round(statistics.mean(sizes), 1) if sizes else 0,
        "window_tokens_mean": round(statistics.mean(lengths), 1) if lengths else 0,
        "rerank_ms_p50": round(pct(times, 50), 1),
        "rerank_ms_p95": round(pct(times, 95), 1),
        f"forward_ms_{args.batch}x{args.max_tokens}": round(
            forward_cost(scorer, opts, args.batch, args.max_tokens), 1
        ),
        f"forward_ms_80x{args.max_tokens}": round(forward_cost(scorer, opts, 80, args.max_tokens, 1), 1),
        "load_avg_1m": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>24}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
