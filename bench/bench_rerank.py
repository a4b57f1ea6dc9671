"""Latency of the careful reader: rerank 80 real candidates per question, print p50/p95 and the cost of one
forward pass.

Candidates are real passages from the database: for each gold-dev question (only its text and game are
used), the stand-in election (Postgres full-text + dense cosine, RRF) over the game's family, top 80. The
timed path is the service's own without the gRPC hop: read the candidates' stored window states from
Postgres, then services.rerank.server.read (question encoding, head, guarantees, deal); beside it the same
rerank encoding every window (no stored states), and the cost of one forward pass.

    python bench/bench_rerank.py [--questions 20] [--candidates 80] [--model head|interim|PATH] [--threads 2]
        [--gold FILE] [--asked-weight W]

``--gold`` names another question file (real posts tell a situation before asking, which is when the head
reads the asking sentences a second time); ``--asked-weight`` overrides the head's own share for them.
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
from services.rerank import states  # noqa: E402
from services.rerank.blend import BlendScorer  # noqa: E402
from services.rerank.choice import load_scorer  # noqa: E402
from services.rerank.scorer import RuntimeOptions, Tokens, TrainedScorer, pad  # noqa: E402
from services.rerank.server import read  # noqa: E402
from training.pool import FamilyIndex  # noqa: E402
from training.questions import GOLD, family_ids  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(np.asarray(xs), p)) if xs else float("nan")


def forward_cost(scorer, opts: RuntimeOptions, rows: int, tokens: int, repeats: int = 3) -> float:  # type: ignore[no-untyped-def]
    """Milliseconds of one encoder pass over ``rows`` windows of ``tokens`` word pieces (what a rerank costs
    when no window states are stored), plus the head over them for the trained model."""
    ids = [[101, *([2000] * (tokens - 2)), 102] for _ in range(rows)]
    x, m = pad(ids)
    feeds = {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)}
    if isinstance(scorer, BlendScorer):  # the blend's cost is the reader's passes (the head reads states)
        scorer = scorer.reader
    enc = scorer.encoder if isinstance(scorer, TrainedScorer) else scorer.session

    def once() -> None:
        hidden = enc.run(None, feeds)[0]
        if isinstance(scorer, TrainedScorer):
            scorer.head_scores(hidden[0, :4], list(hidden))

    once()
    best = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        once()
        best.append((time.perf_counter() - t0) * 1000)
    return min(best)


def stored_states(conn, scorer, cands: list) -> list:  # type: ignore[no-untyped-def]
    """The candidates' window states as the service reads them (None where none are stored)."""
    if isinstance(scorer, BlendScorer):  # the head of a blend reads the stored states
        scorer = scorer.head
    if not isinstance(scorer, TrainedScorer):
        return [None] * len(cands)
    rows = conn.execute(states.FETCH_SQL, ([c.id for c in cands],)).fetchall()
    got = {int(r[0]): states.Stored(r[1], r[2], bytes(r[3])) for r in rows}
    return [states.usable(got.get(c.id), scorer.states_key, c.text) for c in cands]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=20)
    p.add_argument("--candidates", type=int, default=80)
    p.add_argument(
        "--model",
        default="",
        help="'' the shipped model, 'head', 'interim', a head's ONNX path or a reader's folder",
    )
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--gold", type=Path, default=GOLD, help="questions to time (their text and game)")
    p.add_argument("--asked-weight", type=float, default=None, help="unset: the model's own")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)

    opts = RuntimeOptions(
        threads=args.threads, max_tokens=args.max_tokens, batch=args.batch, asked_weight=args.asked_weight
    )
    scorer = load_scorer(opts, args.model)
    conn = db.connect(autocommit=True)
    fams = family_ids(conn)
    gold = [json.loads(line) for line in args.gold.read_text().splitlines() if line.strip()]
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
                heading_path=list(index.passages[i].heading_path),
            )
            for i in pool
        ]
        requests.append((g["question"], g["game"], cands))
    read(scorer, "warm up", "", requests[0][2][:8], 8)
    times, cold, sizes, stored_share = [], [], [], []
    for question, game, cands in requests:
        t0 = time.perf_counter()
        known = stored_states(conn, scorer, cands)  # the service's path: read the states, run the head
        read(scorer, question, game, cands, 8, known)
        times.append((time.perf_counter() - t0) * 1000)
        stored_share.append(sum(k is not None for k in known) / max(len(cands), 1))
        t0 = time.perf_counter()
        read(scorer, question, game, cands, 8)  # no stored states: every window encoded
        cold.append((time.perf_counter() - t0) * 1000)
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
        "stored_states_share": round(statistics.mean(stored_share), 3) if stored_share else 0,
        "rerank_ms_p50": round(pct(times, 50), 1),
        "rerank_ms_p95": round(pct(times, 95), 1),
        "rerank_encoding_every_window_ms_p50": round(pct(cold, 50), 1),
        "rerank_encoding_every_window_ms_p95": round(pct(cold, 95), 1),
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
