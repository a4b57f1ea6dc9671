"""The embedded profanity classifier (alt-profanity-check: a linear SVM over character n-grams, CPU, ~ms)."""

from __future__ import annotations

import threading
from collections.abc import Callable

_lock = threading.Lock()
_predict: Callable[[list[str]], object] | None = None


def _load() -> Callable[[list[str]], object]:
    global _predict
    with _lock:
        if _predict is None:
            from profanity_check import predict_prob

            _predict = predict_prob
        return _predict


def warm() -> None:
    """Load the model now (at service start) rather than on the first question."""
    profanity_probability("hello")


def profanity_probability(text: str) -> float:
    """Probability in [0, 1] that the text is offensive."""
    probs = _load()([text])
    return float(probs[0])  # type: ignore[index]
