"""The sentence reader: a cross-encoder reading the question and one shown sentence together, scoring how
well the sentence answers it (``rulesage train sentences``; ``model/sentences/MODEL_CARD.md``).

It reads the quote selector's best ``top`` sentences of an ask (``reader.json``): a pair costs a forward
pass, and the selector's top already holds nearly every answering sentence. The order it serves is the
selector's log-odds plus ``weight`` times the reader's logit over the read sentences; the others keep the
selector's order below them. The answerability model still reads the selector's own scores, the scale its
threshold was calibrated on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rulesage.pairs import PairTokens, export_graph, ort_session, read_pairs, reader_config

SENTENCES_DIR = Path(__file__).resolve().parent / "model" / "sentences"
DEFAULT_TOP = 12
BATCH = 16


def sentence_text(heading: str, sentence: str) -> str:
    """A sentence as the reader reads it: its passage's nearest heading, then the sentence (the bi-encoder's
    sentence input too, so a short sentence keeps its topic)."""
    return f"{heading}: {sentence}" if heading else sentence


def reorder(logits: np.ndarray, read: np.ndarray, top: list[int], weight: float) -> np.ndarray:
    """The served order's scores: the selector's logits, and over the ``top`` sentences read, plus
    ``weight`` times the reader's logit (relative to the best read). An unread sentence sits below every read
    one, keeping the selector's order among them."""
    out = np.asarray(logits, dtype=np.float64).copy()
    if not len(top):
        return out
    mixed = out[top] + weight * (read - read.max())
    out[top] = mixed
    rest = np.setdiff1d(np.arange(len(out)), top)
    if len(rest):
        shift = min(0.0, float(mixed.min()) - float(out[rest].max()) - 1e-3)
        out[rest] += shift
    return out


class SentenceReader:
    def __init__(self, folder: Path = SENTENCES_DIR, threads: int = 0, models: Path | None = None) -> None:
        cfg = reader_config(folder)
        self.top = int(cfg.get("top", DEFAULT_TOP))
        self.weight = float(cfg.get("weight", 1.0))
        graph = export_graph(folder, "sentence-reader", models)
        self.session = ort_session(graph, threads)
        self.tokens = PairTokens(int(cfg.get("max_tokens", 160)))
        self.identity = f"sentence-reader@{graph.name.split('-')[2]}/top{self.top}x{self.weight:g}"

    def read(self, question: str, texts: list[str]) -> np.ndarray:
        """The reader's logit for each (question, sentence) pair."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return read_pairs(self.session, self.tokens, question, texts, BATCH)

    def order(self, question: str, texts: list[str], logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Scores to order the sentences by (the selector's ``logits`` with the reader's over its top), and
        the reader's logits over the sentences it read."""
        top = [int(i) for i in np.argsort(-np.asarray(logits), kind="stable")[: self.top]]
        read = self.read(question, [texts[i] for i in top])
        return reorder(logits, read, top, self.weight), read
