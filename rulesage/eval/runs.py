"""`rulesage eval` and `rulesage bench`: measure the real mesh on gold questions (and BEIR SciFact).

Retrieval is matched with the gold rule (rulesage.eval.gold: the quote, or a run of 8 of its words, inside
the passage, on its page span); every question is asked from its game through the same road players use;
per-arm figures come from the same fan-out fusion uses (rulesage.arms), asking every registered arm.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rulesage import db, launcher, telemetry
from rulesage.arms import ArmClient
from rulesage.core import rrf
from rulesage.core.metrics import auc, calibrate_threshold, pct
from rulesage.core.models import degraded
from rulesage.eval.gold import first_rank, found, found_at, load_gold, quotes_evidence, supports_evidence
from rulesage.passages import to_json
from rulesage.road import Road, SearchOutcome
from rulesage.store import passages

KS = (8, 80)


@dataclass
class Trace:
    """What the report needs beyond the summary (``rulesage eval --report``): each question's row with a
    ``detail`` (the question, its gold evidence, the fused order, the kept passages, the reranked order's ids,
    the ruling and the wrench), and the answerer's abstain threshold as the rulings name it."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    threshold: dict[str, Any] = field(default_factory=dict)


# -- the mesh for the duration of a run ------------------------------------------------------------
@contextlib.contextmanager
def mesh() -> Iterator[None]:
    """Use the running mesh, or bring one up for the run and take it down after."""
    if launcher.read_state() is not None:
        yield
        return
    # stdout is for the report (``--json`` prints nothing else): the mesh's notices go to stderr
    if launcher.up_detached(out=sys.stderr) != 0:
        raise RuntimeError("could not bring the mesh up for the evaluation (see .rulesage/logs)")
    try:
        yield
    finally:
        launcher.down(out=sys.stderr)


def ensure_shelf(shelf: Path, games: list[str] | None = None) -> dict[str, Any]:
    from rulesage.ingest.pipeline import ingest_shelf

    url = db.database_url()
    db.migrate(url)
    summary = ingest_shelf(url, shelf, games=games or None, progress=False)
    from rulesage.indexing import draw_all

    return {**summary.to_dict(), **draw_all(url)}


def coverage(url: str, gold: list[dict[str, Any]]) -> tuple[float, list[dict[str, Any]]]:
    """Share of evidence quotes that some live passage of the right document holds on the right page."""
    cache: dict[str, list[dict[str, Any]]] = {}
    total, hit, misses = 0, 0, []
    with db.connection(url) as conn:
        for q in gold:
            for ev in q["evidence"]:
                if ev["doc"] not in cache:
                    cache[ev["doc"]] = [
                        {
                            "doc_key": p.doc_key,
                            "text": p.text,
                            "page_start": p.page_start,
                            "page_end": p.page_end,
                        }
                        for p in passages.current_of_document(conn, ev["doc"])
                    ]
                total += 1
                if any(supports_evidence(p, ev) for p in cache[ev["doc"]]):
                    hit += 1
                else:
                    misses.append(
                        {"id": q["id"], "doc": ev["doc"], "page": ev.get("page"), "quote": ev["quote"][:90]}
                    )
    return (hit / total if total else 1.0), misses


# -- per-arm lists ---------------------------------------------------------------------------------
class Arms:
    """Each registered arm's own list for a question (an arm with several lanes: their RRF, and each lane)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = ArmClient()
        self.texts: dict[int, dict[str, Any]] = {}

    async def lists(self, game: str, question: str) -> dict[str, list[int]]:
        fan = await self.client.fan_out(question, game, time.monotonic() + 30)
        out: dict[str, list[int]] = {}
        for o in fan.outcomes:
            if o.result is None:
                continue
            lanes = {
                lane: [h.passage_id for h in sorted(o.result.hits, key=lambda h: h.rank) if h.lane == lane]
                for lane in o.result.lanes
            }
            if len(lanes) > 1:
                out[o.arm] = [f.passage_id for f in rrf.fuse(lanes, limit=rrf.LIMIT)]
                out.update(lanes)
            else:
                out[o.arm] = next(iter(lanes.values()), [])
        return out

    def hydrate(self, ids: list[int]) -> list[dict[str, Any]]:
        missing = [i for i in ids if i not in self.texts]
        if missing:
            with db.connection(self.url) as conn:
                for p in passages.hydrate_sync(conn, missing).values():
                    self.texts[p.id] = {
                        "id": p.id,
                        "text": p.text,
                        "doc_key": p.doc_key,
                        "page_start": p.page_start or None,
                        "page_end": p.page_end or None,
                    }
        return [self.texts[i] for i in ids if i in self.texts]

    async def close(self) -> None:
        await self.client.close()


# -- the gold run ----------------------------------------------------------------------------------
async def _gold(
    url: str, gold: list[dict[str, Any]], answer: bool, trace: Trace | None = None
) -> dict[str, Any]:
    telemetry.setup("eval")
    road = Road(url)
    arms = Arms(url)
    rows: list[dict[str, Any]] = []
    stage_ms: dict[str, list[float]] = defaultdict(list)
    try:
        for q in gold:
            out: SearchOutcome = await road.search(q["game"], q["question"])
            fused = [to_json(p) for p in out.candidates]
            kept = [to_json(p) for p in out.passages]
            wrench = out.wrench.to_json()
            by_rerank = sorted(
                fused, key=lambda p: -(p["rerank_score"] if p["rerank_score"] is not None else -1e9)
            )
            # the reader's own order: only the candidates it scored
            scored = [p for p in by_rerank if p["rerank_score"] is not None]
            row: dict[str, Any] = {
                "id": q["id"],
                "game": q["game"],
                "tags": q.get("tags", []),
                "answerable": q["answerable"],
            }
            row["degraded"] = degraded_stages(wrench)
            calls = [a["category"] for a in wrench.get("arms", []) if a.get("category")]
            if calls:
                row["category"] = calls[0]
                row["category_voted"] = "category" in wrench.get("voted", [])
            reranked = "rerank" not in row["degraded"]
            if q["answerable"]:
                # an ask whose rerank fell back to the fused order is not a reranked hit
                row["found_8"] = reranked and found(kept, q)
                row["found_8_fused"] = found(fused[:8], q)
                row["found_80"] = found(fused[:80], q)
                row["rank_fused"] = first_rank(fused[:10], q)
                row["rank_reranked"] = first_rank(by_rerank[:10], q)
                # the depth each order first finds the gold passage at (recall@k curves), and whether the kept
                # 8 hold it whatever the rerank did (the report's misses)
                row["k_fused"] = found_at(fused[:80], q)
                row["k_reranked"] = found_at(scored, q) if reranked else None
                row["in_kept_8"] = found(kept, q)
                lists = await arms.lists(q["game"], q["question"])
                row["arms"] = {}
                for name, ids in lists.items():
                    ps = arms.hydrate(ids[:80])
                    row["arms"][name] = {
                        "found_8": found(ps[:8], q),
                        "found_80": found(ps, q),
                        "rank": first_rank(ps[:10], q),
                        "k": found_at(ps, q),
                    }
            for t in out.timings:
                stage_ms[t.stage].append(t.ms)
            stage_ms["search_span"].append(out.search_ms)
            fusion_call = [a["ms"] for a in wrench.get("arms", [])]
            if fusion_call:
                stage_ms["arms_max"].append(max(fusion_call))
            ruling: dict[str, Any] | None = None
            if answer:
                t0 = time.perf_counter()
                ruling = (await road.answer(out, store=False)).to_json()
                stage_ms["answer"].append((time.perf_counter() - t0) * 1000)
                row["verdict"] = ruling["verdict"]
                if ruling["verdict"] == "unavailable":
                    row["degraded"].append("answer")
                shown = {p["id"]: p for p in ruling["passages"]}
                invalid = 0
                correct = False
                lead = None  # whether the first valid citation (the answer's deciding quote) is right
                exact = False  # a valid citation is the evidence's own sentence, not only from its passage
                for c in ruling["citations"]:
                    p = shown.get(c["passage_id"])
                    if p is None or p["text"][c["start"] : c["end"]] != c["quote"]:
                        invalid += 1
                        continue
                    holds = bool(q["answerable"]) and any(supports_evidence(p, ev) for ev in q["evidence"])
                    correct = correct or holds
                    exact = exact or (
                        holds and any(quotes_evidence(p, c["quote"], ev) for ev in q["evidence"])
                    )
                    lead = holds if lead is None else lead
                row["invalid_citations"] = invalid
                row["confidence"] = float(ruling["wrench"].get("answer", {}).get("confidence") or 0.0)
                row["answered_correctly"] = correct and ruling["verdict"] == "answered"
                row["lead_correct"] = bool(lead) and ruling["verdict"] == "answered"
                row["quoted_exactly"] = exact and ruling["verdict"] == "answered"
                row["quotes"] = len(ruling["citations"])
            if trace is not None:
                row["detail"] = _detail(q, fused, kept, scored, wrench, ruling)
            rows.append(row)
    finally:
        await road.close()
        await arms.close()
    if trace is not None:
        trace.rows = rows
    return summarise(rows, stage_ms, answer)


def _detail(
    q: dict[str, Any],
    fused: list[dict[str, Any]],
    kept: list[dict[str, Any]],
    scored: list[dict[str, Any]],
    wrench: dict[str, Any],
    ruling: dict[str, Any] | None,
) -> dict[str, Any]:
    """One question as its report page shows it. The fused order is kept without texts (ids, ranks and
    scores); the passage that held the answer in it is kept whole, so a miss shows what the reader passed
    over."""
    gold_rank = first_rank(fused[:80], q) if q["answerable"] else None
    full = ruling["wrench"] if ruling is not None else wrench
    return {
        "question": q["question"],
        "evidence": q.get("evidence", []),
        "gold_answer": q.get("answer"),
        "fused": [{k: v for k, v in p.items() if k != "text"} for p in fused[:80]],
        "kept": kept,
        "reranked_ids": [p["id"] for p in scored],
        "gold_passage": {**fused[gold_rank - 1], "fused_rank": gold_rank} if gold_rank else None,
        "ruling": {k: ruling[k] for k in ("verdict", "answer", "citations", "models")} if ruling else None,
        # the candidates and timings are long and shown elsewhere (the fused order) or not at all
        "wrench": {k: v for k, v in full.items() if k not in ("candidates", "timings")},
    }


def degraded_stages(wrench: dict[str, Any]) -> list[str]:
    """The stages of one search that did not really run: "arm:<name>" for a missing arm, "fusion", or a
    "rerank" that fell back to the fused order (an unavailable answer is added by the caller)."""
    return [
        f"arm:{name}" if kind == "arm" else name for kind, name, _ in degraded(wrench, ("fusion", "rerank"))
    ]


def summarise(rows: list[dict[str, Any]], stage_ms: dict[str, list[float]], answer: bool) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    n = len(ans) or 1

    def share(key: str, subset: list[dict[str, Any]]) -> float:
        return round(sum(bool(r.get(key)) for r in subset) / (len(subset) or 1), 3)

    def mrr(key: str, subset: list[dict[str, Any]]) -> float:
        return round(sum(1 / r[key] for r in subset if r.get(key)) / (len(subset) or 1), 3)

    report: dict[str, Any] = {
        "n": len(rows),
        "n_answerable": len(ans),
        "recall_at_8": share("found_8", ans),
        "recall_at_8_fused": share("found_8_fused", ans),
        "recall_at_80": share("found_80", ans),
        "mrr_at_10": mrr("rank_fused", ans),
        "mrr_at_10_reranked": mrr("rank_reranked", ans),
    }
    arm_names = sorted({a for r in ans for a in r.get("arms", {})})
    report["per_arm"] = {
        a: {
            "n": sum(a in r["arms"] for r in ans),
            "recall_at_8": round(sum(r["arms"].get(a, {}).get("found_8", False) for r in ans) / n, 3),
            "recall_at_80": round(sum(r["arms"].get(a, {}).get("found_80", False) for r in ans) / n, 3),
            "mrr_at_10": round(
                sum(1 / r["arms"][a]["rank"] for r in ans if r["arms"].get(a, {}).get("rank")) / n, 3
            ),
        }
        for a in arm_names
    }
    called = [r for r in rows if "category" in r]
    if called:
        voted = [r for r in called if r.get("category_voted")]
        voted_ans = [r for r in voted if r["answerable"]]
        report["category_leg"] = {
            "asks_with_a_map": len(called),
            "classified": sum(bool(r["category"].get("name")) for r in called),
            "abstained": sum(not r["category"].get("name") for r in called),
            "voted": len(voted),  # classified, on a game the leg votes for
            # of the answerable asks it voted on: its list of the mapped sections held the answer
            "list_held_the_answer": round(
                sum(r.get("arms", {}).get("category", {}).get("found_80", False) for r in voted_ans)
                / (len(voted_ans) or 1),
                3,
            ),
        }
    report["by_game"] = {
        g: {
            "n": len(sub),
            "recall_at_8": share("found_8", sub),
            "recall_at_8_fused": share("found_8_fused", sub),
            "recall_at_80": share("found_80", sub),
        }
        for g in sorted({r["game"] for r in ans})
        if (sub := [r for r in ans if r["game"] == g])
    }
    tags = sorted({t for r in rows for t in r["tags"]})
    report["by_tag"] = {}
    for t in tags:
        sub = [r for r in ans if t in r["tags"]]
        if sub:
            report["by_tag"][t] = {
                "n": len(sub),
                "recall_at_8": share("found_8", sub),
                "recall_at_8_fused": share("found_8_fused", sub),
                "recall_at_80": share("found_80", sub),
            }
    report["degraded"] = {
        stage: sum(any(d == stage or d.startswith(stage + ":") for d in r.get("degraded", [])) for r in rows)
        for stage in ("arm", "fusion", "rerank", "answer")
    }
    report["latency_ms"] = {k: pct(v) for k, v in sorted(stage_ms.items())}
    report["misses_at_8"] = [
        {"id": r["id"], "game": r["game"], "tags": r["tags"]} for r in ans if not r.get("found_8")
    ]
    if answer:
        unans = [r for r in rows if not r["answerable"]]
        # an unavailable answer is a degraded stage, never an abstain (nor a hit)
        abstained = [r for r in rows if r.get("verdict") == "not_in_book"]
        report["answered_correctly"] = share("answered_correctly", ans)
        # the found passages turned into the right quote: answered correctly / recall@8 (the same
        # denominator), so a reader that finds more and an answer that quotes better read apart
        found_8 = sum(bool(r.get("found_8")) for r in ans)
        report["conversion"] = (
            round(sum(bool(r.get("answered_correctly")) for r in ans) / found_8, 3) if found_8 else None
        )
        # the same, counting only the first quote (the one the answer leads with): a second quote from
        # another passage can make a ruling "correct" by hedging
        report["answered_correctly_lead"] = share("lead_correct", ans)
        # the answered rulings citing the evidence's own sentence (the one that decides), not only a
        # sentence of its passage
        report["answered_exactly"] = share("quoted_exactly", ans)
        answered = [r for r in rows if r.get("verdict") == "answered"]
        report["two_quote_share"] = round(
            sum(r.get("quotes", 0) >= 2 for r in answered) / (len(answered) or 1), 3
        )
        report["answered_share"] = round(sum(r.get("verdict") == "answered" for r in ans) / n, 3)
        report["abstain_precision"] = round(
            sum(not r["answerable"] for r in abstained) / (len(abstained) or 1), 3
        )
        report["abstain_recall"] = round(
            sum(r.get("verdict") == "not_in_book" for r in unans) / (len(unans) or 1), 3
        )
        report["invalid_citations"] = sum(r.get("invalid_citations", 0) for r in rows)
        cal = calibrate_threshold([(r["confidence"], r["answerable"]) for r in rows if "confidence" in r])
        report["abstain_calibration"] = (
            {
                "threshold": round(cal.threshold, 4),
                "answered_share": round(cal.answered_share, 3),
                "abstain_precision": round(cal.abstain_precision, 3),
                "abstain_recall": round(cal.abstain_recall, 3),
                "note": "the RULESAGE_EXTRACTIVE_THRESHOLD meeting precision >= 0.9 and recall >= 0.8 that "
                "answers the most, from this run's confidences",
            }
            if cal
            else {"note": "no threshold meets abstain precision >= 0.9 and recall >= 0.8 on this run"}
        )
        scored = [(r["confidence"], int(bool(r["answerable"]))) for r in rows if "confidence" in r]
        # how well the reported confidence separates answerable from silent-book questions (0.5: not at all)
        report["answerability_auc"] = (
            round(auc([c for c, _ in scored], [y for _, y in scored]), 3) if scored else None
        )
        report["verdicts"] = {
            v: sum(r.get("verdict") == v for r in rows) for v in ("answered", "not_in_book", "unavailable")
        }
    return report


def answer_threshold(rulings: list[dict[str, Any]]) -> dict[str, Any]:
    """The abstain threshold the answer service used, as every ruling's wrench names it (with where it was
    calibrated); rulings of a backend without one (the language models abstain on their own) name none."""
    seen = {
        (float(a["threshold"]), str(a.get("threshold_source", "")))
        for r in rulings
        if (a := (r.get("wrench") or {}).get("answer") or {}).get("threshold") is not None
    }
    backends = sorted({str((r.get("models") or {}).get("answer", "")) for r in rulings} - {""})
    if not seen:
        return {
            "value": None,
            "source": "",
            "applies": False,
            "backends": backends,
            "note": "no ruling names a threshold: the backend that answered abstains without one",
        }
    (value, source), *others = sorted(seen)
    note = "from the rulings' wrench"
    if others:
        note += (
            f"; the rulings name {len(seen)} thresholds (the mesh changed during the run), the lowest shown"
        )
    return {"value": value, "source": source, "applies": True, "backends": backends, "note": note}


def run_gold(
    shelf: Path,
    gold_path: Path,
    answer: bool = True,
    limit: int = 0,
    games: list[str] | None = None,
    trace: Trace | None = None,
) -> dict[str, Any]:
    """Every gold question (of ``games`` only, when given, with only their books ingested) asked through the
    real mesh. ``trace``, when given, is filled with what a report needs beyond the summary."""
    gold = load_gold(gold_path)
    if games:
        gold = [q for q in gold if q["game"] in games]
    if limit:
        gold = gold[:limit]
    ingest = ensure_shelf(shelf, games)
    url = db.database_url()
    cov, misses = coverage(url, gold)
    with mesh():
        report = asyncio.run(_gold(url, gold, answer, trace))
    if trace is not None and answer:
        trace.threshold = answer_threshold(
            [r["detail"]["ruling"] for r in trace.rows if r["detail"]["ruling"]]
        )
    return {"coverage": round(cov, 4), "coverage_misses": misses, **report, "ingest": ingest}


# The previous release's configuration that a setting can still select, timed beside the current one in
# the same bench run: the reader scored the fused order's first 48 candidates.
PREVIOUS_CONFIG = {"rulesage_rerank_candidates": 48}
TIMED = ("search_span_ms", "arms_fusion_ms", "rerank_ms", "answer_ms")


def run_bench(
    shelf: Path, gold_path: Path, rounds: int = 1, answer: bool = True, previous: bool = True
) -> dict[str, Any]:
    """Latency over the gold questions through the real mesh: the search span, the road's calls, every stage
    the services report (each arm, RRF, hydrate, the reader's parts) and, with ``answer``, the answer stage
    (not stored as a ruling). Each figure is p50/p95 over every question of every round. With ``previous``
    each question is also asked, right after, with the previous release's configuration (PREVIOUS_CONFIG),
    and the report gives its figures and the ratios current / previous: one run, one machine."""
    gold = load_gold(gold_path)
    ensure_shelf(shelf)
    url = db.database_url()

    class Run:
        def __init__(self, road: Road) -> None:
            self.road = road
            self.times: dict[str, list[float]] = defaultdict(list)
            self.stages: dict[str, list[float]] = defaultdict(list)
            self.degraded = 0

        async def ask(self, q: dict[str, Any]) -> None:
            out = await self.road.search(q["game"], q["question"])
            self.times["search_span_ms"].append(out.search_ms)
            degraded = bool(degraded_stages(out.wrench.to_json()))
            if answer:
                t0 = time.perf_counter()
                ruling = await self.road.answer(out, store=False)
                self.times["answer_ms"].append((time.perf_counter() - t0) * 1000.0)
                degraded = degraded or ruling.verdict == "unavailable"
            self.degraded += degraded
            for t in out.timings:
                self.stages[t.stage].append(t.ms)

        def report(self) -> dict[str, Any]:
            named = {"road.fuse_call": "arms_fusion_ms", "road.rerank_call": "rerank_ms"}
            for stage, key in named.items():
                if stage in self.stages:
                    self.times[key] = self.stages[stage]
            out: dict[str, Any] = {"n": len(gold) * rounds, **{k: pct(v) for k, v in self.times.items()}}
            out["stages_ms"] = {k: pct(v) for k, v in sorted(self.stages.items())}
            out["degraded_asks"] = self.degraded  # a fallen-back stage or an unavailable answer
            return out

    async def go() -> tuple[Run, Run | None]:
        current = Run(Road(url))
        before = None
        if previous:
            road = Road(url)
            for key, value in PREVIOUS_CONFIG.items():
                setattr(road.settings, key, value)
            before = Run(road)
        runs = [r for r in (current, before) if r is not None]
        try:
            for r in runs:  # warm-up, not counted
                await r.road.search(gold[0]["game"], gold[0]["question"])
            for _ in range(rounds):
                for q in gold:  # interleaved: the machine's drift falls on both alike
                    for r in runs:
                        await r.ask(q)
        finally:
            for r in runs:
                await r.road.close()
        return current, before

    with mesh():
        current, before = asyncio.run(go())
    report = current.report()
    if before is not None:
        prev = before.report()
        report["previous"] = {"config": PREVIOUS_CONFIG, **prev}
        report["ratio_to_previous"] = {
            key: {
                q: round(report[key][q] / prev[key][q], 3) for q in ("p50", "p95") if prev.get(key, {}).get(q)
            }
            for key in TIMED
            if key in report and key in prev
        }
    return report


def bench_text(report: dict[str, Any]) -> str:
    """The bench as a person reads it: p50/p95 per figure and stage, and the ratios to the previous
    configuration when it was timed beside."""
    prev = report.get("previous", {})
    head = f"{'':28s}{'p50 ms':>10s}{'p95 ms':>10s}"
    if prev:
        head += f"{'previous p50':>14s}{'p95':>8s}{'ratio p50':>11s}{'p95':>7s}"
    lines = [f"{report['n']} asks; degraded {report['degraded_asks']}", head]

    def row(name: str, cur: dict[str, float], old: dict[str, float] | None) -> str:
        line = f"{name:28s}{cur['p50']:10.1f}{cur['p95']:10.1f}"
        if old:
            r50 = cur["p50"] / old["p50"] if old.get("p50") else float("nan")
            r95 = cur["p95"] / old["p95"] if old.get("p95") else float("nan")
            line += f"{old['p50']:14.1f}{old['p95']:8.1f}{r50:11.2f}{r95:7.2f}"
        return line

    for key in TIMED:
        if key in report:
            lines.append(row(key, report[key], prev.get(key)))
    lines.append("stages:")
    for stage, cur in report["stages_ms"].items():
        lines.append(row("  " + stage, cur, prev.get("stages_ms", {}).get(stage)))
    if prev:
        lines.append(f"previous configuration: {prev['config']}")
    return "\n".join(lines)


# -- BEIR ------------------------------------------------------------------------------------------
def run_beir(folder: Path, limit: int = 0) -> dict[str, Any]:
    from rulesage.eval import beir

    url = db.database_url()
    db.migrate(url)
    loaded = beir.load_corpus(url, folder)
    queries, qrels = beir.load_queries(folder)
    if limit:
        queries = queries[:limit]
    with mesh():
        scores = asyncio.run(beir.evaluate(url, queries, qrels, loaded))
    return {"dataset": folder.name, "queries": len(queries), "corpus": loaded.size, **scores}


def report_text(report: dict[str, Any]) -> str:
    lines = []
    for key, value in report.items():
        if isinstance(value, dict | list):
            lines.append(f"{key}:")
            lines.append("  " + json.dumps(value, default=str)[:2000])
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines)
