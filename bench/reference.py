#!/usr/bin/env python3
"""The plain reference the road is compared with: bm25s (English stop words, Snowball stemming) and exact
MiniLM cosine over 200-word passages (a new one every 150 words, so a quote is rarely cut in two), fused by
RRF (k=60), searched within the asked game's family, matched with the gold rule.

No mesh, no database: the shelf's books are parsed by the product's own extractor (rulesage.ingest.parse,
the latest release of each document key), their passages merged in reading order into windows of about
200 words (page span kept), and each family indexed on its own.

usage: python bench/reference.py --shelf ../shared/corpus/shelf.toml --gold ../shared/eval/gold-real-dev.jsonl
       [--gold ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import bm25s
import numpy as np
import Stemmer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from rulesage.core import rrf  # noqa: E402
from rulesage.embed import shared_embedder  # noqa: E402
from rulesage.eval.gold import first_rank, found  # noqa: E402
from rulesage.ingest.parse import parse_document  # noqa: E402
from rulesage.ingest.shelf import load_shelf  # noqa: E402

WINDOW_WORDS = 200
STRIDE_WORDS = 150
DEPTH = 80
STEMMER = Stemmer.Stemmer("english")


def windows(shelf_path: Path) -> tuple[dict[str, str], dict[str, list[dict[str, Any]]]]:
    """(game -> family, family -> passages): every document's latest release cut into 200-word passages
    every 150 words, each with the page span its words came from."""
    shelf = load_shelf(shelf_path)
    family_of = {g.slug: g.family for g in shelf.games}
    latest = {d.key: d for d in shelf.documents}  # a later release of a key replaces the earlier
    out: dict[str, list[dict[str, Any]]] = {}
    for doc in latest.values():
        parsed = parse_document(doc.path, key=doc.key, kind=doc.kind)
        words = [
            (w, p.page_start, p.page_end) for p in parsed.passages if p.searchable for w in p.text.split()
        ]
        for start in range(0, max(len(words) - (WINDOW_WORDS - STRIDE_WORDS), 1), STRIDE_WORDS):
            chunk = words[start : start + WINDOW_WORDS]
            pages = [x for _, a, b in chunk for x in (a, b) if x]
            out.setdefault(doc.family, []).append(
                {
                    "doc_key": doc.key,
                    "text": " ".join(w for w, _, _ in chunk),
                    "page_start": min(pages) if pages else None,
                    "page_end": max(pages) if pages else None,
                }
            )
    return family_of, out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shelf", type=Path, required=True)
    ap.add_argument("--gold", type=Path, action="append", required=True)
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    t0 = time.perf_counter()
    family_of, passages = windows(ns.shelf)
    embedder = shared_embedder()
    index: dict[str, tuple[Any, np.ndarray]] = {}
    for family, ps in passages.items():
        retriever = bm25s.BM25()
        retriever.index(
            bm25s.tokenize([p["text"] for p in ps], stopwords="en", stemmer=STEMMER, show_progress=False),
            show_progress=False,
        )
        vectors = np.asarray(embedder.embed_passages([p["text"] for p in ps]), dtype=np.float32)
        index[family] = (retriever, vectors)
    built = time.perf_counter() - t0
    report: dict[str, Any] = {
        "passages": sum(len(p) for p in passages.values()),
        "index_seconds": round(built, 1),
    }
    for gold_path in ns.gold:
        gold = [json.loads(line) for line in gold_path.read_text().splitlines() if line.strip()]
        rows = []
        for q in (g for g in gold if g["answerable"]):
            family = family_of[q["game"]]
            ps = passages[family]
            retriever, vectors = index[family]
            docs, _ = retriever.retrieve(
                bm25s.tokenize([q["question"]], stopwords="en", stemmer=STEMMER, show_progress=False),
                k=min(DEPTH, len(ps)),
                show_progress=False,
            )
            lexical = [int(i) for i in docs[0]]
            qv = np.asarray(embedder.embed_queries([q["question"]])[0], dtype=np.float32)
            dense = [int(i) for i in np.argsort(-(vectors @ qv), kind="stable")[:DEPTH]]
            fused = [f.passage_id for f in rrf.fuse({"lexical": lexical, "dense": dense}, rrf.K, DEPTH)]
            lists = {"lexical": lexical, "dense": dense, "fused": fused}
            rows.append(
                {
                    name: {
                        "found_8": found([ps[i] for i in ids[:8]], q),
                        "found_80": found([ps[i] for i in ids[:80]], q),
                        "rank": first_rank([ps[i] for i in ids[:10]], q),
                    }
                    for name, ids in lists.items()
                }
            )
        n = len(rows) or 1
        report[gold_path.stem] = {
            "n_answerable": len(rows),
            **{
                name: {
                    "recall_at_8": round(sum(r[name]["found_8"] for r in rows) / n, 3),
                    "recall_at_80": round(sum(r[name]["found_80"] for r in rows) / n, 3),
                    "mrr_at_10": round(sum(1 / r[name]["rank"] for r in rows if r[name]["rank"]) / n, 3),
                }
                for name in ("lexical", "dense", "fused")
            },
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
