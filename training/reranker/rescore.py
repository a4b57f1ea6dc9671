"""The careful reader's heads measured again over the candidates the mesh served, without the mesh.

usage: rulesage train reranker-rescore --rows DIR/rows.jsonl --gold FILE --head NAME=FILE [--head ...]
       [--asked NAME=W ...] [--mix NAME=H1+H2 ...] [--mix NAME=K1+K2>O1+O2 ...] [--candidates 24] [--json]

``--rows`` is what ``rulesage eval --report DIR`` writes beside its pages: every question's fused order as
the mesh served it. Each answerable question's first ``--candidates`` (the road's
``RULESAGE_RERANK_CANDIDATES``) are read from the database, and each head scores them as the rerank service
does: the same window states (int8 a token), the same question cut, the share read from the post's
asking sentences (its reranker.json's ``asked_weight``, or ``--asked NAME=W``), the served score less the
fused prior. The same file may be named twice under different asked weights.
A mix is the plain mean of its heads' scores, then the prior; a cascade ``K>O`` keeps the 8 that
mix ``K`` serves first and orders them (and the rest below them) by mix ``O``: one head chooses what is kept,
another what leads. Recall@8, MRR@10 and P@1 follow the
evaluation's gold rules (``rulesage.eval.gold``), so the shipped file reproduces the mesh's reranked figures
(guarantees aside: they move the kept 8 on a few errata questions).

It answers "would this head, or this mean of heads, order the served candidates better?" in minutes, before a
graph is built and a mesh measured; the mesh stays the measure a choice is made on. Heads over different
encoders or served with different priors are refused: they could not share one pass.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Figures:
    questions: int
    recall_8: float
    mrr_10: float
    p_1: float


def measure(orders: Sequence[Sequence[Any]], questions: Sequence[Mapping[str, Any]]) -> Figures:
    """Recall@8, MRR@10 and P@1 of ordered passages (best first), one order per question, by the gold
    rules: recall asks every evidence item where the question says so, the rank is the first passage that
    supports any."""
    from rulesage.eval.gold import first_rank, found

    r8 = rr = p1 = 0.0
    for order, q in zip(orders, questions, strict=True):
        r8 += found(order[:8], q)
        first = first_rank(order[:10], q)
        rr += 1.0 / first if first else 0.0
        p1 += first == 1
    n = max(len(questions), 1)
    return Figures(len(questions), round(r8 / n, 3), round(rr / n, 3), round(p1 / n, 3))


def served_order(scores: np.ndarray, prior: float) -> list[int]:
    """Candidate indices by served score (``with_prior``), ties kept in the fused order, as the rerank
    service orders them."""
    from services.rerank.scorer import with_prior

    return [int(i) for i in np.argsort(-with_prior(scores, prior), kind="stable")]


def cascade_order(keep: np.ndarray, order: np.ndarray, prior: float, kept: int = 8) -> list[int]:
    """The first ``kept`` of ``keep``'s served order, ordered by ``order``'s served score, then the rest by
    it."""
    chosen = set(served_order(keep, prior)[:kept])
    by_order = served_order(order, prior)
    return [i for i in by_order if i in chosen] + [i for i in by_order if i not in chosen]


def parse_pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values:
        name, sep, what = v.partition("=")
        if not sep or not name or not what:
            raise SystemExit(f"{flag} {v!r}: expected NAME=VALUE")
        if name in out:
            raise SystemExit(f"{flag} {name!r} given twice")
        out[name] = what
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rulesage train reranker-rescore", description=__doc__.splitlines()[0])
    ap.add_argument("--rows", required=True, help="rows.jsonl of `rulesage eval --report DIR`")
    ap.add_argument("--gold", required=True, help="the gold file those rows were evaluated on")
    ap.add_argument("--head", action="append", default=[], help="NAME=FILE: a merged reranker (repeatable)")
    ap.add_argument(
        "--mix",
        action="append",
        default=[],
        help="NAME=H1+H2: the mean of heads; NAME=K>O: kept by K, ordered by O (repeatable)",
    )
    ap.add_argument(
        "--asked",
        action="append",
        default=[],
        help="NAME=W: head NAME reads W of its score from the asking sentences (default: its own)",
    )
    ap.add_argument("--candidates", type=int, default=24, help="the served candidates each head reads")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s", stream=sys.stderr)
    if ns.candidates < 1:
        ap.error("--candidates must be at least 1")
    heads = parse_pairs(ns.head, "--head")
    if not heads:
        ap.error("name at least one --head")
    asked_weights: dict[str, float] = {}
    for name, w in parse_pairs(ns.asked, "--asked").items():
        if name not in heads:
            ap.error(f"--asked {name}: no --head named so")
        try:
            asked_weights[name] = float(w)
        except ValueError:
            ap.error(f"--asked {name}={w}: not a number")
        if not 0.0 <= asked_weights[name] <= 1.0:
            ap.error(f"--asked {name}={w}: outside [0, 1]")
    # each mix: the heads whose mean chooses the kept 8, and those whose mean orders (the same for a mean)
    mixes = {name: ([name], [name]) for name in heads}
    for name, spec in parse_pairs(ns.mix, "--mix").items():
        keep, _, order = spec.partition(">")
        sides = (keep.split("+"), (order or keep).split("+"))
        unknown = sorted({p for side in sides for p in side if p not in heads})
        if unknown:
            ap.error(f"--mix {name}: no --head named {', '.join(unknown)}")
        mixes[name] = sides

    from rulesage import db
    from rulesage.eval.gold import load_gold
    from rulesage.store.passages import hydrate_sync
    from services.rerank.scorer import RuntimeOptions, TrainedScorer
    from services.rerank.states import usable_sync

    paths = {name: Path(p) for name, p in heads.items()}
    for name, path in paths.items():
        if not path.is_file():
            raise SystemExit(f"--head {name}: no such file {path}")
    scorers = {
        name: TrainedScorer(path, RuntimeOptions(threads=ns.threads, asked_weight=asked_weights.get(name)))
        for name, path in paths.items()
    }
    reads_asked = any(s.asked_weight > 0 for s in scorers.values())
    # one pass serves them all: the same window states (encoder half, window budget) and question cut
    if len({(s.states_key, s.tokens.question_tokens) for s in scorers.values()}) > 1:
        raise SystemExit("the heads run different encoders or cuts: they cannot read one set of states")
    priors = {s.prior for s in scorers.values()}
    if len(priors) > 1:
        raise SystemExit(f"the heads are served with different fused priors {sorted(priors)}")
    prior = priors.pop()
    gold = {q["id"]: q for q in load_gold(Path(ns.gold))}
    rows = [json.loads(line) for line in Path(ns.rows).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r.get("answerable")]
    missing = [r["id"] for r in rows if r["id"] not in gold or "detail" not in r]
    if missing:
        raise SystemExit(f"{len(missing)} rows are not of {ns.gold} or carry no detail (first: {missing[0]})")

    first = next(iter(scorers.values()))
    conn = db.connect(autocommit=True)
    orders: dict[str, list[list[Any]]] = {name: [] for name in mixes}
    questions = []
    for r in rows:
        q = gold[r["id"]]
        ids = [int(p["id"]) for p in r["detail"]["fused"][: ns.candidates]]
        stored = hydrate_sync(conn, ids)
        passages = [stored[i] for i in ids if i in stored]
        # as the service reads them, where they match
        known = usable_sync(conn, first.states_key, [(p.id, p.text) for p in passages])
        windows, _ = first.fill_states([p.text for p in passages], known)
        read = first.read_question(q["question"], asked=reads_asked)
        raw = {name: s.read_scores(read, windows)[0].astype(np.float64) for name, s in scorers.items()}
        for name, sides in mixes.items():
            by_keep, by_order = (np.mean([raw[p] for p in side], axis=0) for side in sides)
            ranked = cascade_order(by_keep, by_order, prior)
            orders[name].append([passages[i] for i in ranked])
        questions.append(q)
    conn.close()
    report: dict[str, Any] = {
        "rows": ns.rows,
        "gold": ns.gold,
        "candidates": ns.candidates,
        "prior": prior,
        "heads": {name: str(path) for name, path in paths.items()},
        "asked_weights": {name: s.asked_weight for name, s in scorers.items()},
        "figures": {name: vars(measure(o, questions)) for name, o in orders.items()},
    }
    if ns.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{len(questions)} answerable questions, the served first {ns.candidates}, prior {prior:g}")
        for name, f in report["figures"].items():
            print(f"  {name:<24} R@8 {f['recall_8']:.3f}  MRR@10 {f['mrr_10']:.3f}  P@1 {f['p_1']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
