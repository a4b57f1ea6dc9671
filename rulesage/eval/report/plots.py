"""The report's plots: matplotlib figures on the non-interactive Agg canvas, written as SVG files.

Nothing here opens a display or reads pyplot's global state: each plot is its own ``Figure`` on a
``FigureCanvasAgg``, saved with a fixed hash salt and no date so the same run draws the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from rulesage.core.metrics import ReliabilityBin

NAVY = "#23395d"
GOLD = "#c98a00"
ACCENT = "#2f6fdb"
BAD = "#b42318"
OK = "#1f7a4d"
MUTED = "#6b7487"
# the arms' lines: a qualitative palette that leaves the navy and gold to the fused and reranked orders
ARM_COLOURS = ("#4c78a8", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac")


@dataclass(frozen=True)
class Curve:
    label: str
    ks: Sequence[int]
    recall: Sequence[float]
    kind: str  # "arm", "fused" or "reranked"


def _figure(width: float = 7.5, height: float = 4.2) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with matplotlib.rc_context({"svg.hashsalt": "rulesage-eval-report", "svg.fonttype": "path"}):
        fig.savefig(path, format="svg", metadata={"Date": None})


def recall_plot(path: Path, curves: Sequence[Curve], kept_8: float | None) -> None:
    """Recall@k on a log k axis: each arm thin, the fused order and the reader's order thick, the kept 8's
    recall as a star at k = 8."""
    fig = _figure()
    ax = fig.add_subplot()
    arm_i = 0
    for c in curves:
        if c.kind == "arm":
            colour, width, style = ARM_COLOURS[arm_i % len(ARM_COLOURS)], 1.3, "-"
            arm_i += 1
        elif c.kind == "fused":
            colour, width, style = NAVY, 2.6, "-"
        else:
            colour, width, style = GOLD, 2.6, "--"
        # recall@k only changes at whole k: drawn as steps, not as slopes between them
        ax.step(list(c.ks), list(c.recall), style, where="post", color=colour, linewidth=width, label=c.label)
    if kept_8 is not None:
        ax.plot([8], [kept_8], "*", color=BAD, markersize=13, label=f"kept 8 after the reader ({kept_8:.3f})")
    ax.axvline(8, color=MUTED, linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ticks = [1, 2, 4, 8, 16, 32, 80]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.set_xlim(1, 80)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("k (passages, log scale)")
    ax.set_ylabel("recall@k (answerable questions)")
    ax.grid(True, which="major", color="#e3dfd6", linewidth=0.6)
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    _save(fig, path)


def confidence_plot(
    path: Path, answerable: Sequence[float], silent: Sequence[float], threshold: float | None
) -> None:
    """The answerability score's histogram for answerable and silent-book questions, with the threshold."""
    fig = _figure(height=3.8)
    ax = fig.add_subplot()
    edges = [i / 20 for i in range(21)]
    if answerable:
        ax.hist(list(answerable), bins=edges, color=OK, alpha=0.55, label=f"answerable ({len(answerable)})")
    if silent:
        ax.hist(list(silent), bins=edges, color=BAD, alpha=0.55, label=f"book is silent ({len(silent)})")
    if threshold is not None:
        ax.axvline(threshold, color=NAVY, linewidth=2, label=f"abstain threshold {threshold:g}")
    ax.set_xlim(0, 1)
    ax.set_xlabel("answerability score (the answer stage's confidence)")
    ax.set_ylabel("questions")
    ax.grid(True, axis="y", color="#e3dfd6", linewidth=0.6)
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    _save(fig, path)


def reliability_plot(path: Path, bins: Sequence[ReliabilityBin]) -> None:
    """Observed share answered correctly against the bin's mean score (the diagonal: a calibrated score),
    with each bin's question count beneath."""
    fig = _figure(width=6.0, height=5.4)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 1))
    top.plot([0, 1], [0, 1], ":", color=MUTED, linewidth=1, label="calibrated")
    top.plot(
        [b.mean_score for b in bins],
        [b.observed for b in bins],
        "o-",
        color=NAVY,
        linewidth=2,
        label="observed",
    )
    top.set_ylim(0, 1.02)
    top.set_ylabel("share answered correctly")
    top.grid(True, color="#e3dfd6", linewidth=0.6)
    top.legend(loc="upper left", fontsize=8, frameon=False)
    bottom.bar(
        [(b.lo + b.hi) / 2 for b in bins],
        [b.n for b in bins],
        width=[(b.hi - b.lo) * 0.9 for b in bins],
        color=ACCENT,
        alpha=0.7,
    )
    bottom.set_xlim(0, 1)
    bottom.set_xlabel("answerability score (bin)")
    bottom.set_ylabel("questions")
    _save(fig, path)
