"""The careful reader's share read from a post's asking sentences, chosen on held-out questions.

usage: rulesage train reranker-asked --head FILE --pools FILE [--weights 0 0.25 0.5 0.75 1]
       [--depths 4 8 12 16 24] [--candidates 24] [--write] [--json]

Players tell the situation first and ask last. The head reads the whole post (cut head + tail); it can also
read the sentences that ask (``rulesage.core.text.asked_only``) and mix that score into the first ``depth``
candidates by the whole post's served score (``services.rerank.scorer.mix_asked``). This measures every
weight × depth on the held-out split's served pools (``rulesage train reranker-pools``' file, their first
``--candidates``, states as served; never gold): recall@8 and MRR@10 over all of them, the real posts among
them, and the posts that tell a situation. The choice: the weight and depth with the best MRR@10, then the
shallowest depth within 0.001 of it that keeps the whole post's recall@8 (each candidate read costs the head
a row). ``--write`` stores the choice as ``asked_weight``/``asked_depth`` in the head's ``reranker.json``
(weight 0 when nothing beats the whole post), and the rerank service reads them there.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from training.reranker.blend import Pool
from training.reranker.evaluate import served_hit

log = logging.getLogger("rerank.asked")
ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
DEPTHS = (4, 8, 12, 16, 24)
TOLERANCE = 0.001  # MRR@10 a shallower depth may give up: about one question in a thousand


def figures(pools: Sequence[Pool], scores: Sequence[np.ndarray], prior: float) -> dict[str, float]:
    """Recall@8 and MRR@10 of the served order: all pools, the real posts, the posts with a situation."""
    parts: dict[str, Callable[[Pool], bool]] = {
        "": lambda p: True,
        "real_": lambda p: p.public,
        "situated_": lambda p: p.asked is not None,
    }
    out: dict[str, float] = {}
    for part, keep in parts.items():
        chosen = [(p, s) for p, s in zip(pools, scores, strict=True) if keep(p)]
        hits = [served_hit(p.ids, p.supporters, s, prior) for p, s in chosen]
        n = max(len(hits), 1)
        out[f"{part}n"] = len(hits)
        out[f"{part}recall@8"] = round(sum(k for k, _ in hits) / n, 4)
        out[f"{part}mrr@10"] = round(sum(r for _, r in hits) / n, 4)
    return out


def choose(grid: dict[tuple[float, int], dict[str, float]], whole: dict[str, float]) -> tuple[float, int]:
    """The best MRR@10's weight, at the shallowest depth within ``TOLERANCE`` of it that keeps the whole
    post's recall@8; (0, 0) when no mix orders better than the whole post."""
    best = max(f["mrr@10"] for f in grid.values())
    if best <= whole["mrr@10"]:
        return 0.0, 0
    ok = [
        (d, -f["mrr@10"], w)
        for (w, d), f in grid.items()
        if f["mrr@10"] >= best - TOLERANCE and f["recall@8"] >= whole["recall@8"]
    ]
    if not ok:
        return 0.0, 0
    depth, _, weight = min(ok)
    return weight, depth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rulesage train reranker-asked", description=__doc__.splitlines()[0])
    ap.add_argument("--head", default=str(ROOT / "services/rerank/model/reranker-int8.onnx"))
    ap.add_argument("--pools", required=True, help="rulesage train reranker-pools' file")
    ap.add_argument("--weights", type=float, nargs="+", default=list(WEIGHTS), help="shares (0..1)")
    ap.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS), help="candidates re-read (>= 1)")
    ap.add_argument("--candidates", type=int, default=24, help="the served candidates the head reads")
    ap.add_argument("--questions", default=str(ROOT / "data/questions/questions-*.jsonl"))
    ap.add_argument("--seed", type=int, default=13, help="the split's seed (rulesage train reranker's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--write", action="store_true", help="store the choice in the head's reranker.json")
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    weights, depths = ns.weights, ns.depths
    if any(not 0.0 <= w <= 1.0 for w in weights):
        ap.error(f"--weights {weights}: each in [0, 1]")
    if any(d < 1 for d in depths):
        ap.error(f"--depths {depths}: each at least 1")
    if ns.candidates < 1:
        ap.error("--candidates must be at least 1")
    head = Path(ns.head)
    if not head.is_file():
        raise SystemExit(f"--head: no such file {head}")

    from services.rerank.scorer import RuntimeOptions, TrainedScorer, mix_asked
    from training.reranker.blend import held_out_pools

    t0 = time.perf_counter()
    scorer = TrainedScorer(head, RuntimeOptions(threads=ns.threads, asked_weight=0.0))
    pools: list[Pool] = []
    whole: list[np.ndarray] = []
    by_depth: dict[int, list[tuple[np.ndarray, np.ndarray] | None]] = {d: [] for d in depths}
    for p in held_out_pools(Path(ns.pools), ns.questions, scorer, ns.seed, ns.candidates, asked=True):
        s = scorer.head_scores(p.question, p.windows)[0]
        whole.append(s)
        for d in depths:
            by_depth[d].append(scorer.asked_scores(p.asked, p.windows, s, d) if p.asked is not None else None)
        pools.append(p.bare())
    log.info("%d held-out pools read in %.1f min", len(pools), (time.perf_counter() - t0) / 60)
    grid: dict[tuple[float, int], dict[str, float]] = {}
    for d in depths:
        asked = by_depth[d]
        for w in weights:
            mixed = [s if a is None else mix_asked(s, *a, w) for s, a in zip(whole, asked, strict=True)]
            grid[(w, d)] = figures(pools, mixed, scorer.prior)
    base = figures(pools, whole, scorer.prior)
    weight, depth = choose(grid, base)
    report: dict[str, Any] = {
        "head": str(head),
        "pools": ns.pools,
        "candidates": ns.candidates,
        "whole_post": base,
        "grid": [{"weight": w, "depth": d, **f} for (w, d), f in grid.items()],
        "chosen": {"asked_weight": weight, "asked_depth": depth or None},
        "minutes": round((time.perf_counter() - t0) / 60, 1),
    }
    if ns.write:
        cfg_path = head.with_name("reranker.json")
        cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
        cfg["asked_weight"] = weight
        if depth:
            cfg["asked_depth"] = depth
        else:
            cfg.pop("asked_depth", None)
        cfg_path.write_text(json.dumps(cfg, indent=1) + "\n")
        report["written"] = str(cfg_path)
    if ns.json:
        print(json.dumps(report, indent=1))
    else:
        print(
            f"{base['n']} held-out pools ({base['real_n']} real posts, {base['situated_n']} with a situation)"
        )
        print(f"  whole post            R@8 {base['recall@8']:.3f}  MRR@10 {base['mrr@10']:.3f}")
        for (w, d), f in grid.items():
            print(
                f"  weight {w:<4g} depth {d:<3d} R@8 {f['recall@8']:.3f}  MRR@10 {f['mrr@10']:.3f}"
                f"  (real {f['real_recall@8']:.3f}/{f['real_mrr@10']:.3f},"
                f" situated {f['situated_recall@8']:.3f}/{f['situated_mrr@10']:.3f})"
            )
        print(f"chosen: weight {weight:g}, depth {depth or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
