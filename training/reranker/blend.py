"""Two trained heads served as one: the careful reader's score becomes ``w · A + (1 − w) · B + shift``, both
heads reading the same frozen encoder's states (one file, one encoder pass, one set of stored states).

usage: rulesage train reranker-blend --a FILE --b FILE --pools FILE [--weight 0.5] [--out DIR] [--work DIR]

``--a`` and ``--b`` are merged rerankers (``rulesage train reranker``'s ``reranker-int8.onnx``) over the same
encoder and with the same served fused prior; anything else is refused. ``--pools`` is what ``rulesage train
reranker-pools`` wrote: the held-out split's served pools (never gold) are where both heads, the blend at
several weights and the fused order are measured (recall@8, MRR@10; all held-out questions and the real posts
among them), and where ``shift`` is set.

``shift`` puts the blend on head A's scale: the blend's mean best served score on those pools is moved onto
A's. The answer service reads the reader's score (its top and its margin to the next), and its
answerability model was fitted on head A's scale; a shift changes no order. ``--weight`` is given, not
chosen (0.5 by default: the plain mean); the measured weights are reported beside it. The blend's
``reranker.json`` is A's without A's reading of the asking sentences: ``rulesage train reranker-asked``
chooses that for the blend.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from services.rerank.scorer import TrainedScorer, with_prior
from training.reranker.evaluate import served_hit

log = logging.getLogger("rerank.blend")
ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # head A's share, measured on the held-out pools
ASKED_KEYS = ("asked_weight", "asked_depth")  # reranker.json's reading of the asking sentences


@dataclass
class Pool:
    """One held-out question's served candidates and their encoder states."""

    public: bool
    ids: list[int]
    supporters: set[int]
    question: np.ndarray  # (tokens, 384)
    windows: list[np.ndarray]
    asked: np.ndarray | None = None  # the asking sentences' states, where drawn and the post has a situation

    def bare(self) -> Pool:
        """The pool without its states (what a measure reads after the heads have scored it): 759 pools of
        48 windows hold ~14 GB of float32 states, so a caller scores each pool as it comes and keeps this."""
        none = np.zeros((0, 0), dtype=np.float32)
        return replace(self, question=none, windows=[], asked=None if self.asked is None else none)


def blend_graph(a: Path, b: Path, weight: float, shift: float) -> Any:
    """Merged file A with head B's nodes beside its own: ``score = weight · A + (1 − weight) · B + shift``;
    ``cosine`` stays A's (both heads read the same encoder states, so both cosines are the same)."""
    import onnx
    from onnx import helper

    from services.rerank.scorer import HEAD_HALF, encoder_sha, halves

    if encoder_sha(a) != encoder_sha(b):
        raise SystemExit(f"{a} and {b} run different encoders: their heads cannot share one encoder pass")
    merged = onnx.load(str(a))
    (head_b,) = halves(b, HEAD_HALF)
    shared = {*HEAD_HALF[0], ""}
    tag = free_tag(merged)

    def renamed(name: str) -> str:
        return name if name in shared else f"{tag}_b/{name}"

    for i, node in enumerate(head_b.graph.node):
        node.name = f"{tag}_b/{node.name or i}"
        node.input[:] = [renamed(x) for x in node.input]
        node.output[:] = [renamed(x) for x in node.output]
    for init in head_b.graph.initializer:
        init.name = renamed(init.name)
    g = merged.graph
    for node in g.node:
        node.output[:] = [f"{tag}_a/score" if o == "score" else o for o in node.output]
    g.node.extend(head_b.graph.node)
    g.initializer.extend(head_b.graph.initializer)
    g.initializer.extend(
        helper.make_tensor(f"{tag}/{name}", onnx.TensorProto.FLOAT, [], [value])
        for name, value in (("wa", weight), ("wb", 1.0 - weight), ("shift", shift))
    )
    g.node.extend(
        [
            helper.make_node("Mul", [f"{tag}_a/score", f"{tag}/wa"], [f"{tag}/a"]),
            helper.make_node("Mul", [f"{tag}_b/score", f"{tag}/wb"], [f"{tag}/b"]),
            helper.make_node("Add", [f"{tag}/a", f"{tag}/b"], [f"{tag}/sum"]),
            helper.make_node("Add", [f"{tag}/sum", f"{tag}/shift"], ["score"]),
        ]
    )
    onnx.checker.check_model(merged)
    return merged


def free_tag(model: Any) -> str:
    """The first name prefix ("blend", then "blend2", ...) that no node or weight of ``model`` uses: head A
    may be a blend already (the shipped reader is one), and its names must stay apart from this blend's."""
    g = model.graph
    names = {i.name for i in g.initializer} | {x for n in g.node for x in (*n.input, *n.output, n.name)}
    level = 1
    while True:
        tag = "blend" if level == 1 else f"blend{level}"
        if not any(n.startswith((f"{tag}/", f"{tag}_a/", f"{tag}_b/")) for n in names):
            return tag
        level += 1


def measure(pools: Sequence[Pool], scores: Sequence[np.ndarray], prior: float) -> dict[str, float]:
    """Recall@8 and MRR@10 of the served order, over all pools and over the real posts among them."""
    out: dict[str, float] = {}
    for part, keep in (("", lambda p: True), ("real_", lambda p: p.public)):
        chosen = [(p, s) for p, s in zip(pools, scores, strict=True) if keep(p)]
        r8 = rr = 0.0
        for p, s in chosen:
            kept, first = served_hit(p.ids, p.supporters, s, prior)
            r8, rr = r8 + kept, rr + first
        n = max(len(chosen), 1)
        out[f"{part}recall@8"], out[f"{part}mrr@10"] = round(r8 / n, 4), round(rr / n, 4)
    out["questions"], out["real_posts"] = len(pools), sum(p.public for p in pools)
    return out


def mean_top(scores: Sequence[np.ndarray], prior: float) -> float:
    return float(np.mean([with_prior(s, prior).max() for s in scores]))


def held_out_pools(
    pools_file: Path,
    questions: str,
    scorer: TrainedScorer,
    seed: int,
    candidates: int | None = None,
    asked: bool = False,
) -> Iterator[Pool]:
    """The held-out split's served pools, one at a time (the caller scores each and keeps ``Pool.bare``),
    with the states the heads read when served: ``scorer``'s own encoder half, one window a run and stored
    as int8 (``TrainedScorer.fill_states``), the question cut as served. The search encoder's states, or
    batched ones, would score the heads on states they never see. The window states ingest stored for this
    encoder half are read back where they still match the text (``services.rerank.states.usable``, as the
    service reads them); only the rest are encoded. ``candidates``: each pool's first so many (the rerank
    service's ``RULESAGE_RERANK_CANDIDATES``); ``asked``: draw the asking sentences' states too
    (``TrainedScorer.read_question``)."""
    from rulesage import db
    from services.rerank.states import usable_sync
    from training.questions import build_groups, load_questions
    from training.reranker.pools import load_pools

    conn = db.connect(autocommit=True)
    try:
        served_pools = load_pools(pools_file)
        depth = max((len(v) for v in served_pools.values()), default=48)
        groups, counts, indexes = build_groups(
            conn, load_questions(questions), 15, 0, seed, pool_depth=depth, pools=served_pools
        )
        log.info("groups: %s", dict(counts))
        for g in (g for g in groups if g.split == "val"):
            index = indexes[g.family_id]
            ids = list(g.pool)[:candidates]
            passages = [index.passages[i] for i in ids]
            texts = [p.text for p in passages]
            known = usable_sync(conn, scorer.states_key, [(p.id, p.text) for p in passages])
            windows, _ = scorer.fill_states(texts, known)
            read = scorer.read_question(g.question, asked=asked)
            yield Pool(g.public, ids, set(g.supporters), read.whole, windows, read.asked)
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="rulesage train reranker-blend", description=__doc__.splitlines()[0])
    ap.add_argument("--a", required=True, help="the merged reranker whose scale the blend keeps")
    ap.add_argument("--b", required=True, help="the merged reranker blended in")
    ap.add_argument("--pools", required=True, help="rulesage train reranker-pools' file")
    ap.add_argument("--weight", type=float, default=0.5, help="head A's share (0..1)")
    ap.add_argument("--questions", default=str(ROOT / "data/questions/questions-*.jsonl"))
    ap.add_argument("--seed", type=int, default=13, help="the split's seed (rulesage train reranker's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "artifacts/reranker-blend"), help="the graph, metrics")
    ap.add_argument("--out", default="", help="also copy the graph and its config here ('': nothing)")
    ns = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if not 0.0 <= ns.weight <= 1.0:
        ap.error(f"--weight {ns.weight} is outside [0, 1]")
    from services.rerank.scorer import RuntimeOptions, model_config, sha256_file

    a, b = Path(ns.a), Path(ns.b)
    cfg_a, cfg_b = model_config(a), model_config(b)
    prior = float(cfg_a.get("fused_prior", 0.0))
    if not math.isclose(prior, float(cfg_b.get("fused_prior", 0.0))):
        raise SystemExit(f"{a} and {b} are served with different fused priors: blend heads of one recipe")
    t0 = time.perf_counter()
    # each head as the rerank service serves it, over the states it reads there (A's are B's too)
    sa, sb = (TrainedScorer(path, RuntimeOptions(threads=ns.threads)) for path in (a, b))
    if sa.states_key != sb.states_key:
        raise SystemExit(f"{a} and {b} run different encoders: their heads cannot share one encoder pass")
    pools: list[Pool] = []
    scores_a: list[np.ndarray] = []
    scores_b: list[np.ndarray] = []
    for p in held_out_pools(Path(ns.pools), ns.questions, sa, ns.seed):
        scores_a.append(sa.head_scores(p.question, p.windows)[0].astype(np.float64))
        scores_b.append(sb.head_scores(p.question, p.windows)[0].astype(np.float64))
        pools.append(p.bare())
    log.info("%d held-out pools read by both heads in %.1f min", len(pools), (time.perf_counter() - t0) / 60)

    def mix(w: float) -> list[np.ndarray]:
        return [w * x + (1.0 - w) * y for x, y in zip(scores_a, scores_b, strict=True)]

    held_out: dict[str, Any] = {"fused": measure(pools, [np.zeros(len(p.ids)) for p in pools], 0.0)}
    held_out.update({f"A share {w:g}": measure(pools, mix(w), prior) for w in WEIGHTS})
    shift = mean_top(scores_a, prior) - mean_top(mix(ns.weight), prior)
    work = Path(ns.work)
    work.mkdir(parents=True, exist_ok=True)
    import onnx

    onnx.save(blend_graph(a, b, ns.weight, shift), str(work / "reranker-int8.onnx"))
    # A's reading of the asking sentences was chosen for A's scores (``rulesage train reranker-asked``); the
    # blend's were measured over the whole post, so it reads the whole post until that is chosen for it
    config = {
        **{k: v for k, v in cfg_a.items() if k not in ASKED_KEYS},
        "blend": {
            "a": f"{a.name}@{sha256_file(a)[:12]}",
            "b": f"{b.name}@{sha256_file(b)[:12]}",
            "weight_a": ns.weight,
            "shift": round(shift, 4),
        },
    }
    (work / "reranker.json").write_text(json.dumps(config, indent=1) + "\n")
    report = {
        "args": vars(ns),
        "held_out": held_out,
        "shift": shift,
        "minutes": (time.perf_counter() - t0) / 60,
    }
    report["sha256"] = sha256_file(work / "reranker-int8.onnx")
    (work / "metrics.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    if ns.out:
        out = Path(ns.out)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "reranker-int8.onnx", out / "reranker-int8.onnx")
        shutil.copyfile(work / "reranker.json", out / "reranker.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
