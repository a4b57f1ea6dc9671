"""The report's pages: DIR/index.html (headline figures, plots, the misses) and DIR/rulings/<id>.html (one
question each: its ruling, kept passages, ranks, scores and the wrench's stage states).

Built from the eval's summary and its per-question rows (``rulesage.eval.runs.Trace``): plain dicts, so a
report can be drawn from rows made anywhere. Every text is escaped by Jinja's autoescape; nothing is fetched
when a page is read (the plots are SVG files beside it, the style is inline).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from rulesage.core.metrics import expected_calibration_error, recall_curve, reliability
from rulesage.eval.gold import supports_evidence
from rulesage.eval.report import plots

TEMPLATES = Path(__file__).resolve().parent / "templates"
KEPT = 8
MAX_K = 80
ROWS_FILE = "rows.jsonl"  # beside summary.json: every question's row, detail included

# (label, summary key, how the figure reads)
HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("recall@8", "recall_at_8", "the gold passage among the 8 kept after the reader (degraded: no hit)"),
    ("fused recall@8", "recall_at_8_fused", "among the fused order's top 8"),
    ("recall@80", "recall_at_80", "among the fused order's top 80"),
    ("MRR@10 fused", "mrr_at_10", "mean reciprocal rank of the gold passage in the fused top 10"),
    ("MRR@10 reranked", "mrr_at_10_reranked", "the same in the reader's order"),
    ("answered correctly", "answered_correctly", "answerable questions answered with a citation on the gold"),
    ("conversion", "conversion", "answered correctly / recall@8: found passages turned into the right quote"),
    ("answered share", "answered_share", "answerable questions given an answer"),
    ("abstain precision", "abstain_precision", "of the abstains, the share whose book is silent"),
    ("abstain recall", "abstain_recall", "of the silent-book questions, the share abstained on"),
    ("invalid citations", "invalid_citations", "quotes not found at their place in the shown passage"),
    ("answerability AUC", "answerability_auc", "how well the score separates answerable from silent"),
    ("coverage", "coverage", "gold quotes some live passage holds on the right page"),
)


def page_names(ids: Iterable[str]) -> dict[str, str]:
    """Each question id's page file name: the id when it is a plain name, else its safe spelling, made
    unique."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for qid in ids:
        base = re.sub(r"[^A-Za-z0-9._-]", "_", str(qid)).lstrip(".") or "question"
        name, n = base, 1
        while name.lower() in used:
            n += 1
            name = f"{base}-{n}"
        used.add(name.lower())
        out[qid] = f"{name}.html"
    return out


def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _num
    env.filters["rank"] = lambda r: "—" if r is None else str(r)
    env.filters["pages"] = _pages
    return env


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "—" if value != value else f"{value:.{digits}f}"
    return str(value)


def _pages(p: dict[str, Any]) -> str:
    start, end = p.get("page_start"), p.get("page_end")
    if not start:
        return ""
    return f"p. {start}" if not end or end == start else f"pp. {start}–{end}"


# -- what the rows say -------------------------------------------------------------------------------------
def _degraded(r: dict[str, Any]) -> list[str]:
    return list(r.get("degraded") or [])


def _confidence(r: dict[str, Any]) -> float | None:
    """The answer stage's own score; None when it did not score (no answer stage, skipped or degraded)."""
    if "answer" in _degraded(r) or "confidence" not in r:
        return None
    detail = r.get("detail") or {}
    answer = (detail.get("wrench") or {}).get("answer") or {}
    if detail and answer.get("confidence") is None:
        return None
    return float(r["confidence"])


def curves(rows: list[dict[str, Any]]) -> list[plots.Curve]:
    """Recall@k of every arm and lane the rows hold, of the fused order (k = 1..80), and of the reader's
    order over the candidates it scored."""
    ans = [r for r in rows if r["answerable"]]
    ks = list(range(1, MAX_K + 1))
    names = sorted({a for r in ans for a in r.get("arms", {})})
    out = [
        plots.Curve(a, ks, recall_curve([r.get("arms", {}).get(a, {}).get("k") for r in ans], ks), "arm")
        for a in names
    ]
    out.append(plots.Curve("fused order", ks, recall_curve([r.get("k_fused") for r in ans], ks), "fused"))
    scored = max(
        [len((r.get("detail") or {}).get("reranked_ids", [])) for r in ans]
        + [r.get("k_reranked") or 0 for r in ans]
    )
    if scored:
        rks = list(range(1, min(scored, MAX_K) + 1))
        ranks = [r.get("k_reranked") for r in ans]
        label = f"reader's order ({scored} scored)"
        out.append(plots.Curve(label, rks, recall_curve(ranks, rks), "reranked"))
    return out


def _entry(r: dict[str, Any], href: str) -> dict[str, Any]:
    detail = r.get("detail") or {}
    arm_ks = {a: v.get("k") for a, v in r.get("arms", {}).items()}
    best = min(((k, a) for a, k in arm_ks.items() if k is not None), default=None)
    return {
        "id": r["id"],
        "href": href,
        "game": r["game"],
        "question": detail.get("question", ""),
        "answerable": r["answerable"],
        "verdict": r.get("verdict"),
        "k_fused": r.get("k_fused"),
        "k_reranked": r.get("k_reranked"),
        "best_arm": f"{best[1]} @{best[0]}" if best else None,
        "degraded": _degraded(r),
        "confidence": _confidence(r),
        "correct": r.get("answered_correctly"),
    }


def sections(rows: list[dict[str, Any]], names: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The misses, each question once per way it went wrong, and the degraded asks apart."""
    entries = {r["id"]: _entry(r, f"rulings/{names[r['id']]}") for r in rows}
    answered = [r for r in rows if "verdict" in r]
    return {
        # the passage was not in the kept 8, whatever the reader did (a degraded ask says so in its row)
        "not_kept": [
            entries[r["id"]] for r in rows if r["answerable"] and not r.get("in_kept_8", r.get("found_8"))
        ],
        "wrong_abstains": [
            entries[r["id"]] for r in answered if r["answerable"] and r["verdict"] == "not_in_book"
        ],
        # an answer that cites nothing on the gold, or any answer where the book is silent
        "wrong_answers": [
            entries[r["id"]]
            for r in answered
            if r["verdict"] == "answered" and not r.get("answered_correctly")
        ],
        "degraded": [entries[r["id"]] for r in rows if _degraded(r)],
        "all": list(entries.values()),
    }


def _headline(summary: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"label": label, "key": key, "value": _num(summary.get(key)), "means": means}
        for label, key, means in HEADLINE
        if key in summary
    ]


# -- a question's page -------------------------------------------------------------------------------------
def _ruling_context(r: dict[str, Any], back: str) -> dict[str, Any]:
    detail = r.get("detail") or {}
    evidence = detail.get("evidence", [])
    reranked = detail.get("reranked_ids", [])
    rerank_pos = {pid: i for i, pid in enumerate(reranked, 1)}
    fused_pos = {p["id"]: i for i, p in enumerate(detail.get("fused", []), 1)}

    def gold(p: dict[str, Any]) -> bool:
        return r["answerable"] and any(supports_evidence(p, ev) for ev in evidence)

    kept = [
        {
            **p,
            "fused_rank": fused_pos.get(p["id"]),
            "rerank_rank": rerank_pos.get(p["id"]),
            "holds_gold": gold(p),
        }
        for p in detail.get("kept", [])
    ]
    gp = detail.get("gold_passage")
    kept_ids = {p["id"] for p in kept}
    ruling = detail.get("ruling")
    shown = {p["id"]: p for p in detail.get("kept", [])}
    citations = []
    for c in (ruling or {}).get("citations", []):
        p = shown.get(c["passage_id"])
        valid = p is not None and p["text"][c["start"] : c["end"]] == c["quote"]
        citations.append({**c, "valid": valid, "on_gold": valid and p is not None and gold(p)})
    wrench = detail.get("wrench") or {}
    return {
        "row": r,
        "back": back,
        "question": detail.get("question", ""),
        "evidence": evidence,
        "gold_answer": detail.get("gold_answer"),
        "entry": _entry(r, ""),
        "arm_ranks": sorted((a, v.get("k")) for a, v in r.get("arms", {}).items()),
        "arm_names": sorted({a for p in kept for a in p.get("ranks", {})}),
        "kept": kept,
        "gold_passage": (
            {**gp, "rerank_rank": rerank_pos.get(gp["id"])} if gp and gp["id"] not in kept_ids else None
        ),
        "ruling": ruling,
        "citations": citations,
        "wrench": wrench,
        "n_fused": len(detail.get("fused", [])),
        "n_scored": len(reranked),
    }


# -- the report ----------------------------------------------------------------------------------------------
def write_report(
    out_dir: Path,
    summary: dict[str, Any],
    rows: list[dict[str, Any]],
    *,
    command: str,
    threshold: dict[str, Any] | None = None,
    generated: datetime | None = None,
) -> Path:
    """Write DIR/index.html, DIR/plots/*.svg, DIR/rulings/<question id>.html and DIR/summary.json; return
    the index's path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plot_dir, ruling_dir = out_dir / "plots", out_dir / "rulings"
    ruling_dir.mkdir(exist_ok=True)
    for stale in ruling_dir.glob("*.html"):  # a page from an earlier run in the same folder would mislead
        stale.unlink()
    env = _env()
    names = page_names(r["id"] for r in rows)

    figures: list[dict[str, str]] = []
    ans = [r for r in rows if r["answerable"]]
    if ans:
        plots.recall_plot(plot_dir / "recall.svg", curves(rows), summary.get("recall_at_8"))
        figures.append(
            {
                "file": "plots/recall.svg",
                "id": "recall",
                "title": "Recall@k",
                "alt": "Recall at k from 1 to 80 for each arm, the fused order and the reader's order",
                "caption": f"{len(ans)} answerable questions. Each arm's own list (an arm with lanes: their "
                "fusion and each lane), the fused order, and the reader's order over the candidates it "
                "scored (a degraded rerank counts as no hit); the star is recall@8 of the 8 kept.",
            }
        )
    scored = [(r, c) for r in rows if (c := _confidence(r)) is not None]
    thr = threshold or {}
    line = thr.get("value") if thr.get("applies", True) else None
    if scored:
        plots.confidence_plot(
            plot_dir / "confidence.svg",
            [c for r, c in scored if r["answerable"]],
            [c for r, c in scored if not r["answerable"]],
            line,
        )
        figures.append(
            {
                "file": "plots/confidence.svg",
                "id": "confidence",
                "title": "Answerability score",
                "alt": "Histogram of the answer stage's confidence for answerable and silent-book questions",
                "caption": f"{len(scored)} questions the answer stage scored (a degraded or skipped answer "
                "has no score and is left out)."
                + (f" The line is the abstain threshold, {line:g}: {thr.get('note', '')}." if line else ""),
            }
        )
        bins = reliability([(c, bool(r.get("answered_correctly"))) for r, c in scored])
        plots.reliability_plot(plot_dir / "reliability.svg", bins)
        figures.append(
            {
                "file": "plots/reliability.svg",
                "id": "reliability",
                "title": "Reliability of the score",
                "alt": "Reliability diagram: share answered correctly against the answerability score",
                "caption": f"The same {len(scored)} questions in ten bins; a silent-book question is never "
                "answered correctly, so a high score on one pulls its bin down. Expected calibration error "
                f"{expected_calibration_error(bins):.3f}.",
            }
        )

    groups = sections(rows, names)
    context = {
        "title": "Evaluation report",
        "command": command,
        "generated": (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        "summary": summary,
        "headline": _headline(summary),
        "degraded_counts": summary.get("degraded", {}),
        "verdicts": summary.get("verdicts"),
        "per_arm": summary.get("per_arm", {}),
        "by_game": summary.get("by_game", {}),
        "by_tag": summary.get("by_tag", {}),
        "threshold": threshold,
        "calibration": summary.get("abstain_calibration"),
        "figures": figures,
        "groups": groups,
        "answered": any("verdict" in r for r in rows),
    }
    index = out_dir / "index.html"
    index.write_text(env.get_template("index.html").render(context), encoding="utf-8")
    page = env.get_template("ruling.html")
    for r in rows:
        context = _ruling_context(r, "../index.html")
        html = page.render(title=f"Question {r['id']}", command=command, **context)
        (ruling_dir / names[r["id"]]).write_text(html, encoding="utf-8")
    (out_dir / "summary.json").write_text(
        json.dumps({"command": command, **summary}, indent=2, ensure_ascii=False, default=str) + "\n",
        encoding="utf-8",
    )
    # every question as the run traced it (its fused order, kept passages, ruling and wrench), one JSON line
    # each: what offline measures read (rulesage train reranker-rescore) instead of running the mesh again
    with (out_dir / ROWS_FILE).open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    return index
