"""The learned screen: a multinomial logistic regression over [MiniLM sentence embedding ⊕ TF-IDF character
n-grams ⊕ TF-IDF word n-grams], trained by training.doorman.learn on data/doorman/train.jsonl.

It can only hold more: the Screener asks it only about questions the rules and the profanity classifier
cleared, and holds when the probability of any hold class (1 - P(ordinary)) reaches the threshold chosen on
the validation split. The model is one .npz of plain arrays (vocabularies as string arrays, idf weights, the
coefficients), read with ``allow_pickle=False``: no pickle, and no scikit-learn at serving time. The feature
code below is the one the training uses, so training and serving cannot drift apart.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

MODEL_PATH = Path(__file__).resolve().parent / "model" / "screen.npz"
ORDINARY = "ordinary"
FORMAT = "rulesage-doorman-screen/1"
CHAR_RANGE = (2, 5)
WORD_RANGE = (1, 2)
_WORD = re.compile(r"(?u)\b\w+\b")


# Features ------------------------------------------------------------------------------------------------


def char_ngrams(text: str) -> list[str]:
    """Character 2- to 5-grams inside each lower-cased word padded with one space either side (a word shorter
    than n gives itself once), so masks, leetspeak and spacing tricks still share n-grams with the plain
    word."""
    out: list[str] = []
    lo, hi = CHAR_RANGE
    for word in text.lower().split():
        w = f" {word} "
        for n in range(lo, hi + 1):
            if len(w) <= n:
                out.append(w)
                continue
            out.extend(w[i : i + n] for i in range(len(w) - n + 1))
    return out


def word_ngrams(text: str) -> list[str]:
    """Lower-cased word unigrams and bigrams."""
    words = _WORD.findall(text.lower())
    out = list(words)
    out.extend(f"{a} {b}" for a, b in itertools.pairwise(words))
    return out


def tfidf(grams: Iterable[str], vocab: dict[str, int], idf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sparse (indices, values) of the l2-normalised sublinear TF-IDF vector, as scikit-learn's
    TfidfVectorizer(sublinear_tf=True, norm="l2") computes it with a fixed vocabulary and idf."""
    counts = Counter(vocab[g] for g in grams if g in vocab)
    if not counts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    idx = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
    tf = np.fromiter((1.0 + math.log(c) for c in counts.values()), dtype=np.float64, count=len(counts))
    val = tf * idf[idx]
    val /= max(float(np.linalg.norm(val)), 1e-12)
    return idx, val.astype(np.float32)


class Embeds(Protocol):
    def embed_queries(self, texts: list[str]) -> np.ndarray: ...


# The model -----------------------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class ScreenModel:
    """The exported model. ``score(text)`` is (probability of holding, the most likely hold class)."""

    def __init__(self, arrays: dict[str, np.ndarray], sha256: str, path: Path | None = None) -> None:
        meta = json.loads(str(arrays["meta"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"screen model format {meta.get('format')!r}, expected {FORMAT!r}")
        self.meta: dict[str, Any] = meta
        self.path = path
        self.sha256 = sha256
        self.classes = [str(c) for c in arrays["classes"]]
        self._ordinary = self.classes.index(ORDINARY)
        self.char_vocab = {str(g): i for i, g in enumerate(arrays["char_vocab"])}
        self.word_vocab = {str(g): i for i, g in enumerate(arrays["word_vocab"])}
        self.char_idf = arrays["char_idf"].astype(np.float64)
        self.word_idf = arrays["word_idf"].astype(np.float64)
        self.coef = arrays["coef"].astype(np.float32)  # classes x [embedding | char | word]
        self.intercept = arrays["intercept"].astype(np.float32)
        self.block_weights = [float(w) for w in arrays["block_weights"]]
        self.threshold = float(arrays["threshold"])
        self.dim = int(meta["embedding_dim"])
        n_char, n_word = len(self.char_vocab), len(self.word_vocab)
        if self.coef.shape != (len(self.classes), self.dim + n_char + n_word):
            raise ValueError(f"screen model coefficients have shape {self.coef.shape}")
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"screen model threshold {self.threshold!r} is not in (0, 1]")
        self._w_emb = self.coef[:, : self.dim]
        self._w_char = self.coef[:, self.dim : self.dim + n_char]
        self._w_word = self.coef[:, self.dim + n_char :]
        self._embedder: Embeds | None = None
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> ScreenModel:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
        return cls(arrays, file_sha256(path), path)

    @property
    def identity(self) -> str:
        """What the doorman's name shows: the model file's sha256 prefix."""
        return self.sha256[:12]

    @property
    def embedder_identity(self) -> str:
        return str(self.meta["embedder"])

    def use_embedder(self, embedder: Embeds) -> None:
        """Embed with this embedder instead of MiniLM (tests; training, which already has the vectors)."""
        self._embedder = embedder

    def embedder(self) -> Embeds:
        """The MiniLM variant the model was trained on; refuses another variant or other weights, whose
        vectors are not the ones the threshold was chosen for."""
        with self._lock:
            if self._embedder is None:
                from rulesage.embed import embedder_for

                try:  # the screen reads the encoder it was trained on (MiniLM off the shelf), not search's
                    emb = embedder_for(self.embedder_identity)
                except ValueError:
                    raise RuntimeError(
                        f"screen model was trained on {self.embedder_identity}, which no encoder here draws"
                    ) from None
                self._embedder = emb
            return self._embedder

    def warm(self) -> None:
        """Load the embedder and score once now (at service start) rather than on the first question."""
        self.score("How many cards do I draw in Klondike?")

    def probabilities(self, text: str, embedding: np.ndarray | None = None) -> np.ndarray:
        """P(class) for every class, in ``self.classes`` order."""
        if embedding is None:
            embedding = self.embedder().embed_queries([text])[0]
        w_emb, w_char, w_word = self.block_weights
        z = self.intercept + w_emb * (self._w_emb @ embedding.astype(np.float32))
        idx, val = tfidf(char_ngrams(text), self.char_vocab, self.char_idf)
        if len(idx):
            z = z + w_char * (self._w_char[:, idx] @ val)
        idx, val = tfidf(word_ngrams(text), self.word_vocab, self.word_idf)
        if len(idx):
            z = z + w_word * (self._w_word[:, idx] @ val)
        z = z.astype(np.float64)
        e = np.exp(z - z.max())
        return e / e.sum()

    def score(self, text: str) -> tuple[float, str]:
        """(1 - P(ordinary), the hold class with the highest probability)."""
        p = self.probabilities(text)
        hold = float(1.0 - p[self._ordinary])
        rest = p.copy()
        rest[self._ordinary] = -1.0
        return min(max(hold, 0.0), 1.0), self.classes[int(rest.argmax())]


class UnavailableModel:
    """Stands in when the model file cannot be loaded: every screening it sees raises, so every question that
    reaches it is held (the doorman fails one way)."""

    threshold = 0.5
    identity = "unavailable"

    def __init__(self, error: str) -> None:
        self.error = error

    def warm(self) -> None:
        pass

    def score(self, text: str) -> tuple[float, str]:
        raise RuntimeError(f"screen model unavailable: {self.error}")
