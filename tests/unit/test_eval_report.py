"""The eval report from a small synthetic run: real matplotlib, real files; hostile text is escaped, and
every miss links to its own page."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rulesage.core.metrics import expected_calibration_error, recall_curve, reliability
from rulesage.eval.gold import found_at
from rulesage.eval.report import write_report
from rulesage.eval.report.pages import page_names

HOSTILE = '<script>alert("x")</script> can I & should I?'
GOLD_TEXT = "Nothing can be played on to a King."


def passage(pid: int, text: str, rerank: float | None, ranks: dict[str, int]) -> dict[str, Any]:
    return {
        "id": pid,
        "text": text,
        "doc_key": "golf-rules",
        "doc_title": "Golf <rules>",
        "page_start": 3,
        "page_end": 3,
        "heading_path": ["Rules", "Waste"],
        "fused_score": 0.03 - pid / 1000,
        "ranks": ranks,
        "rerank_score": rerank,
    }


def wrench(arm_state: str = "ok", answer_conf: float | None = 0.7) -> dict[str, Any]:
    return {
        "fusion": {"state": "ok", "detail": ""},
        "arms": [
            {"arm": "lexical", "state": "ok", "detail": "", "hits": 40, "ms": 3.2},
            {"arm": "dense", "state": arm_state, "detail": "" if arm_state == "ok" else "down", "hits": 0},
        ],
        "voted": ["lexical", "dense"],
        "ceiling": 0.0328,
        "ceiling_formula": "2/61",
        "rerank": {"state": "ok", "detail": "", "model": "cross-encoder"},
        "guarantees_fired": [],
        "answer": {"state": "ok", "detail": "", "attempts": 1, "rejections": [], "confidence": answer_conf},
    }


def row(
    qid: str,
    question: str,
    *,
    answerable: bool = True,
    kept_gold: bool = True,
    verdict: str = "answered",
    correct: bool = True,
    confidence: float = 0.7,
    degraded: list[str] | None = None,
) -> dict[str, Any]:
    gold = passage(7, GOLD_TEXT, 0.9 if kept_gold else 0.1, {"lexical": 2, "dense": 5})
    other = passage(8, "Deal seven columns of five cards.", 0.5, {"lexical": 1})
    kept = [gold, other] if kept_gold else [other]
    fused = [other, gold]
    reranked = [p["id"] for p in sorted(fused, key=lambda p: -(p["rerank_score"] or 0))]
    r: dict[str, Any] = {
        "id": qid,
        "game": "solitaire-golf",
        "tags": ["exact-name"],
        "answerable": answerable,
        "degraded": degraded or [],
        "verdict": verdict,
        "confidence": confidence,
        "answered_correctly": correct,
        "invalid_citations": 0,
    }
    if answerable:
        r |= {
            "found_8": kept_gold,
            "in_kept_8": kept_gold,
            "found_8_fused": True,
            "found_80": True,
            "k_fused": 2,
            "k_reranked": 1 if kept_gold else 9,
            "arms": {"lexical": {"k": 2}, "dense": {"k": 5 if kept_gold else None}},
        }
    cite = {
        "passage_id": 7,
        "quote": "Nothing can be played on to a King.",
        "start": 0,
        "end": len(GOLD_TEXT),
        "page": 3,
        "doc_key": "golf-rules",
        "doc_title": "Golf <rules>",
    }
    r["detail"] = {
        "question": question,
        "evidence": [{"doc": "golf-rules", "page": 3, "quote": GOLD_TEXT}] if answerable else [],
        "gold_answer": "No.",
        "fused": [{k: v for k, v in p.items() if k != "text"} for p in fused],
        "kept": kept,
        "reranked_ids": reranked,
        "gold_passage": {**gold, "fused_rank": 2} if answerable else None,
        "ruling": {
            "verdict": verdict,
            "answer": f"The book says — {HOSTILE}" if verdict == "answered" else "Not in the book.",
            "citations": [cite] if verdict == "answered" and kept_gold else [],
            "models": {"answer": "extractive:minilm"},
        },
        "wrench": wrench("down" if degraded else "ok", confidence),
    }
    return r


def synthetic() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = [
        row("q-ok", "in golf can I put a card on a king?", confidence=0.8),
        row("q-miss", HOSTILE, kept_gold=False, verdict="not_in_book", correct=False, confidence=0.3),
        row("q-wrong", "what ends the game?", verdict="answered", correct=False, confidence=0.6),
        row("q-silent", "can I trade cards?", answerable=False, correct=False, confidence=0.5),
        row("q/odd id", "a degraded ask", degraded=["arm:dense"], confidence=0.9),
    ]
    summary = {
        "n": 5,
        "n_answerable": 4,
        "coverage": 1.0,
        "recall_at_8": 0.75,
        "recall_at_8_fused": 1.0,
        "recall_at_80": 1.0,
        "mrr_at_10": 0.5,
        "mrr_at_10_reranked": 0.75,
        "answered_correctly": 0.5,
        "conversion": 0.667,
        "answered_share": 0.75,
        "abstain_precision": 0.0,
        "abstain_recall": 0.0,
        "invalid_citations": 0,
        "answerability_auc": 0.6,
        "per_arm": {"dense": {"n": 4, "recall_at_8": 0.5, "recall_at_80": 0.75, "mrr_at_10": 0.2}},
        "by_game": {"solitaire-golf": {"n": 4, "recall_at_8": 0.75}},
        "by_tag": {},
        "degraded": {"arm": 1, "fusion": 0, "rerank": 0, "answer": 0},
        "verdicts": {"answered": 4, "not_in_book": 1, "unavailable": 0},
        "abstain_calibration": {"note": "no threshold meets the floors"},
    }
    return summary, rows


def test_report_writes_pages_plots_and_links(tmp_path: Path) -> None:
    summary, rows = synthetic()
    out = tmp_path / "report"
    threshold = {"value": 0.45, "source": "default", "applies": True, "backends": ["extractive"], "note": "n"}
    command = "rulesage eval --shelf s.toml --gold g.jsonl --report out"
    index = write_report(
        out, summary, rows, command=command, threshold=threshold, generated=datetime(2026, 1, 1, tzinfo=UTC)
    )
    assert index == out / "index.html"
    html = index.read_text()

    # the plots are files beside the page, drawn by matplotlib, referenced by relative paths (works offline)
    for name in ("recall", "confidence", "reliability"):
        svg = out / "plots" / f"{name}.svg"
        assert svg.stat().st_size > 2000 and svg.read_text().lstrip().startswith("<?xml")
        assert f'src="plots/{name}.svg"' in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html

    # the headline figures and the command that produced them
    assert "rulesage eval --shelf s.toml --gold g.jsonl --report out" in html
    assert 'id="h-recall_at_8"' in html and "0.750" in html
    assert 'id="h-conversion"' in html and "0.667" in html

    # hostile question and answer text is escaped everywhere
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    for page in (out / "rulings").glob("*.html"):
        assert "<script>" not in page.read_text(), page.name

    # every miss, wrong abstain and wrong answer links to its own page, which exists
    names = page_names(r["id"] for r in rows)
    assert names["q/odd id"] == "q_odd_id.html"
    links = set(re.findall(r'href="(rulings/[^"]+)"', html))
    assert {f"rulings/{names[q]}" for q in ("q-miss", "q-wrong", "q-silent", "q/odd id", "q-ok")} <= links
    for link in links:
        assert (out / link).is_file(), link
    not_kept = html.split('id="not-kept"')[1].split('id="wrong-abstains"')[0]
    assert 'href="rulings/q-miss.html"' in not_kept and "q-ok.html" not in not_kept
    abstains = html.split('id="wrong-abstains"')[1].split('id="wrong-answers"')[0]
    assert "q-miss.html" in abstains
    wrong = html.split('id="wrong-answers"')[1].split('id="degraded"')[0]
    assert "q-wrong.html" in wrong and "q-silent.html" in wrong and "q-ok.html" not in wrong
    degraded = html.split('id="degraded"')[1].split('id="all"')[0]
    assert "q_odd_id.html" in degraded and "q-miss.html" not in degraded

    # a miss's page: question, verdict, the kept passages with ranks and scores, the arm states, the gold
    miss = (out / "rulings" / "q-miss.html").read_text()
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in miss
    assert "verdict: not_in_book" in miss and "gold not in the kept 8" in miss
    assert 'id="kept"' in miss and 'id="arm-states"' in miss and "0.500" in miss  # the rerank score
    assert "The passage that held it, not kept" in miss and GOLD_TEXT in miss
    assert 'href="../index.html"' in miss
    ok = (out / "rulings" / "q-ok.html").read_text()
    assert "on the gold evidence" in ok and "p. 3" in ok and "Golf &lt;rules&gt;" in ok
    assert (out / "rulings" / "q_odd_id.html").read_text().count("degraded: arm:dense") == 1
    assert (out / "summary.json").is_file()
    # every row comes back whole from rows.jsonl, in the run's order (the offline measures read it)
    lines = (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(rows, default=str))


def test_report_without_an_answer_stage(tmp_path: Path) -> None:
    summary, rows = synthetic()
    for r in rows:
        for key in ("verdict", "confidence", "answered_correctly", "invalid_citations"):
            r.pop(key, None)
        r["detail"]["ruling"] = None
    index = write_report(tmp_path, summary, rows, command="rulesage eval --no-answer")
    html = index.read_text()
    assert (tmp_path / "plots" / "recall.svg").is_file()
    assert not (tmp_path / "plots" / "confidence.svg").exists()
    assert "No answer stage in this run" in html and 'id="wrong-abstains"' not in html


def test_curves_and_reliability() -> None:
    q = {"evidence": [{"doc": "d", "page": None, "quote": q} for q in ("alpha beta", "gamma")]}
    ps = [{"doc_key": "d", "text": t} for t in ("x", "gamma", "y", "alpha beta")]
    assert found_at(ps, q) == 2
    assert found_at(ps, {**q, "all": True}) == 4
    assert found_at(ps[:3], {**q, "all": True}) is None
    assert recall_curve([1, 3, None, 8], [1, 2, 3, 8]) == [0.25, 0.25, 0.5, 0.75]
    bins = reliability([(0.05, False), (0.15, False), (0.95, True), (1.0, True)])
    assert [(b.lo, b.n, b.observed) for b in bins] == [(0.0, 1, 0.0), (0.1, 1, 0.0), (0.9, 2, 1.0)]
    assert abs(expected_calibration_error(bins) - (0.05 + 0.15 + 0.05 + 0.0) / 4) < 1e-9


def test_cli_refuses_a_report_for_beir(capsys: pytest.CaptureFixture[str]) -> None:
    from rulesage.cli import main

    assert main(["eval", "--beir", "scifact", "--report", "out"]) == 2
    assert "--report is for gold questions" in capsys.readouterr().err
