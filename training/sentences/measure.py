"""The sentence reader measured on held-out asks, for the shipped quote selector alone and for every (read
depth, weight) of the reader over it:

- ``lead``: the served order's first sentence (the quote a ruling leads with) is in a passage that holds
  the answer (what the evaluation counts as answered correctly);
- ``quoted``: it or the close second the ruling cites beside it is;
- ``exact``: the first sentence itself holds the answer's quote (or prints the rule).

The asks are the careful reader's held-out split (``val``): neither the reader, the head nor this model
trained on them. The quote selector was fitted on part of them, so its own figure here is, if anything,
flattering to it. Only asks whose shown passages hold an answering sentence count; real players' posts
among them are reported apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

TOPS = (4, 8, 12, 16)
WEIGHTS = (0.25, 0.5, 1.0, 2.0, 4.0, 100.0)  # 100: the reader's order alone among the sentences it reads


Hit = tuple[bool, bool, bool]  # lead, quoted, exact


def figures(hits: list[Hit]) -> dict[str, float]:
    n = len(hits) or 1
    return {k: round(sum(h[i] for h in hits) / n, 4) for i, k in enumerate(("lead", "quoted", "exact"))}


def hit(order: np.ndarray, sentence: np.ndarray, passage: np.ndarray, margin: float) -> Hit:
    """Whether the first sentence's passage holds the answer; whether it or a second within ``margin``
    does; whether the first sentence itself does."""
    ranked = np.argsort(-order, kind="stable")
    first = bool(passage[ranked[0]])
    second = len(ranked) > 1 and order[ranked[1]] >= order[ranked[0]] - margin and bool(passage[ranked[1]])
    return first, bool(first or second), bool(sentence[ranked[0]])


def measure(staged: Path, val: Path, threads: int) -> dict[str, Any]:
    from services.answer.backends.extractive import SECOND_LOGIT_MARGIN
    from services.answer.selector import load
    from services.answer.sentences import SentenceReader, reorder
    from training.answerer.train import reader_order, shown_of
    from training.sentences.data import texts_of

    answerer = load()
    reader = SentenceReader(staged, threads, models=staged.parent / "models")
    cells: dict[str, list[Hit]] = {"selector": []}
    public: dict[str, list[Hit]] = {"selector": []}
    asks = 0
    for line in val.read_text().splitlines():
        ask = json.loads(line)
        ask["passages"] = reader_order(ask["passages"])
        labels = np.asarray([s["holds"] for p in ask["passages"] for s in p["sentences"]], bool)
        passage = np.asarray([p["holds"] for p in ask["passages"] for _ in p["sentences"]], bool)
        if not labels.any():
            continue
        asks += 1
        is_public = ask["source"] != "written"
        logits = answerer.select(ask["question"], shown_of(ask))
        texts = [t for p in ask["passages"] for t in texts_of(p)]
        best = [int(i) for i in np.argsort(-logits, kind="stable")[: max(TOPS)]]
        read = dict(zip(best, reader.read(ask["question"], [texts[i] for i in best]), strict=True))
        results = {"selector": hit(logits, labels, passage, SECOND_LOGIT_MARGIN)}
        for top in TOPS:
            chosen = best[:top]
            scores = np.asarray([read[i] for i in chosen], np.float32)
            for w in WEIGHTS:
                order = reorder(logits, scores, chosen, w)
                results[f"top{top}/w{w:g}"] = hit(order, labels, passage, SECOND_LOGIT_MARGIN)
        for key, h in results.items():
            cells.setdefault(key, []).append(h)
            if is_public:
                public.setdefault(key, []).append(h)
    return {
        "asks": asks,
        "public_asks": len(public["selector"]),
        "selector": figures(cells.pop("selector")),
        "reader": {k: figures(v) for k, v in cells.items()},
        "public": {k: figures(v) for k, v in public.items()},
    }


def choose(held: dict[str, Any]) -> tuple[int, float]:
    """The read depth and weight that lead with the answer's passage and its very sentence most often (the
    sum of ``lead`` and ``exact``) without quoting the answer's passage less often than the selector alone;
    among cells within half a point of the best, the shallowest read and the lightest weight. (0, 0.0) when
    no cell beats the selector."""
    base = held["selector"]
    gain = {
        k: f["lead"] + f["exact"]
        for k, f in held["reader"].items()
        if f["quoted"] >= base["quoted"] and f["lead"] >= base["lead"]
    }
    if not gain or max(gain.values()) <= base["lead"] + base["exact"]:
        return 0, 0.0
    best = max(gain.values())
    near = [
        (int(k.split("/w")[0][3:]), float(k.split("/w")[1])) for k, g in gain.items() if g >= best - 0.005
    ]
    return min(near)
