"""`rulesage train reranker`: train, export, quantise and measure the careful reader.

Entry point: ``main(argv: list[str]) -> int`` (the CLI passes its remaining arguments).
"""

from __future__ import annotations

from training.reranker.loop import main

__all__ = ["main"]
