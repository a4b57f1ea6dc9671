"""Every command given --json prints JSON and nothing else on stdout; notices and progress go to stderr."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.isolated_mesh import FIXTURES, isolated_env

pytestmark = pytest.mark.integration
SHIPPED_HEAD = Path(__file__).resolve().parents[2] / "services" / "rerank" / "model" / "reranker-int8.onnx"


def test_json_commands_print_only_json(tmp_path: Path) -> None:
    shelf = FIXTURES / "tiny-shelf.toml"
    mesh = isolated_env(tmp_path, shelf)
    try:
        status = mesh.cli("status", "--json")
        assert json.loads(status.stdout) == {"running": False, "gateway_url": None, "services": {}}

        ingest = mesh.cli("ingest", "--shelf", str(shelf), "--json", timeout=900)
        assert ingest.returncode == 0, ingest.stderr
        assert json.loads(ingest.stdout)["documents"] == 2

        # eval brings a mesh up for the run and takes it down: its notices must not reach stdout, nor does
        # the report's path (stderr)
        gold = str(FIXTURES / "tiny-gold.jsonl")
        out = tmp_path / "report"
        ev = mesh.cli(
            "eval", "--shelf", str(shelf), "--gold", gold, "--json", "--report", str(out), timeout=900
        )
        assert ev.returncode == 0, ev.stderr[-3000:]
        report = json.loads(ev.stdout)
        assert report["n"] == 2 and report["invalid_citations"] == 0
        assert report["coverage"] == 1.0, report["coverage_misses"]  # both quotes found in the current books
        assert report["degraded"] == {"arm": 0, "fusion": 0, "rerank": 0, "answer": 0}
        assert "RuleSage is up" in ev.stderr and "RuleSage stopped" in ev.stderr
        check_report(out, ev.stderr, report)

        # the served candidates of that run, scored again offline by the shipped head, give back its
        # reranked figures (the same window states, question cut and fused prior as the service)
        rescore = mesh.cli(
            "train", "reranker-rescore", "--rows", str(out / "rows.jsonl"), "--gold", gold,
            "--head", f"shipped={SHIPPED_HEAD}", "--json", timeout=600,
        )  # fmt: skip
        assert rescore.returncode == 0, rescore.stderr[-3000:]
        shipped = json.loads(rescore.stdout)["figures"]["shipped"]
        assert shipped["questions"] == 2
        served = (report["recall_at_8"], report["mrr_at_10_reranked"])
        assert (shipped["recall_8"], shipped["mrr_10"]) == served

        # the bench times the previous release's configuration beside the current one, in the same run
        bench = mesh.cli("bench", "--shelf", str(shelf), "--gold", gold, "--json", timeout=900)
        assert bench.returncode == 0, bench.stderr[-3000:]
        timed = json.loads(bench.stdout)
        assert timed["n"] == 2 and timed["degraded_asks"] == 0
        assert timed["previous"]["config"] == {"rulesage_rerank_candidates": 48}
        assert timed["previous"]["n"] == 2 and timed["previous"]["stages_ms"]["rerank.score"]["n"] == 2
        assert set(timed["ratio_to_previous"]) == {
            "search_span_ms",
            "arms_fusion_ms",
            "rerank_ms",
            "answer_ms",
        }
        assert all(r["p50"] > 0 for r in timed["ratio_to_previous"].values())
        text = mesh.cli("bench", "--shelf", str(shelf), "--gold", gold, "--no-answer", timeout=900)
        assert text.returncode == 0, text.stderr[-3000:]
        assert (
            "search_span_ms" in text.stdout and "ratio p50" in text.stdout and "rerank.score" in text.stdout
        )
        assert "answer_ms" not in text.stdout
    finally:
        mesh.cli("down")


def check_report(out: Path, stderr: str, report: dict[str, Any]) -> None:
    """The HTML report of that run: its path on stderr, the recall plot, a page per question, and each miss
    (passage not kept, wrong abstain) linked to its page."""
    index = out / "index.html"
    assert f"report: {index.resolve()}" in stderr
    html = index.read_text()
    assert (out / "plots" / "recall.svg").is_file() and 'src="plots/recall.svg"' in html
    assert (out / "plots" / "confidence.svg").is_file() and (out / "plots" / "reliability.svg").is_file()
    assert "rulesage eval --shelf" in html  # the command that produced it
    for qid in ("tiny-1", "tiny-2"):
        page = (out / "rulings" / f"{qid}.html").read_text()
        assert 'id="kept"' in page and 'id="arm-states"' in page and "lexical" in page
    missed = {m["id"] for m in report["misses_at_8"]}
    for qid in missed:
        assert f'href="rulings/{qid}.html"' in html.split('id="not-kept"')[1].split('id="wrong-abstains"')[0]
