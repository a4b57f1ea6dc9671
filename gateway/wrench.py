"""The wrench as the page shows it, derived from a stored ruling at render time (pure: no I/O).

The fused-score ceiling is never read from storage: it is computed here from the ruling's own voted lists as
arms/(k+1), and printed beside its formula, so an old ruling is judged by the arithmetic of its own ask.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from rulesage.core import rrf
from rulesage.core.models import StageState
from rulesage.core.rrf import CEILING_TOLERANCE
from rulesage.doorman_report import stored_report

_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")


def ceiling(voted: list[str], k: int) -> float:
    return rrf.ceiling(len(voted), k)


def ceiling_formula(voted: list[str], k: int) -> str:
    return rrf.ceiling_formula(len(voted), k)


def trace_link(trace_url: str, trace_id: str) -> str:
    """Link to the trace viewer, or "" when no viewer is configured or the id is not a trace id."""
    if not trace_url or not _TRACE_ID.match(trace_id or ""):
        return ""
    if "{trace_id}" in trace_url:
        return trace_url.replace("{trace_id}", trace_id)
    return trace_url.rstrip("/") + "/" + trace_id


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _voted(wrench: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    voted = [str(v) for v in wrench.get("voted") or []]
    if voted:
        return voted
    seen: list[str] = []  # an old ruling without a voted list: the lists that ranked something
    for row in rows:
        for name in row.get("ranks") or {}:
            if name not in seen:
                seen.append(str(name))
    return seen


def _row(p: dict[str, Any], voted: list[str], top: float) -> dict[str, Any]:
    ranks = p.get("ranks") or {}
    fused = _num(p.get("fused_score"))
    return {
        "id": p.get("id"),
        "label": _label(p),
        "ranks": [ranks.get(name) for name in voted],
        "fused": fused,
        "rerank": _num(p.get("rerank_score")),
        "bar": round(100 * fused / top) if fused and top else 0,
    }


def _label(p: dict[str, Any]) -> str:
    title = p.get("doc_title") or p.get("doc_key") or ""
    page = page_label(p.get("page_start"), p.get("page_end"))
    return f"{title}, {page}" if page else str(title)


def page_label(start: Any, end: Any) -> str:
    s, e = _num(start), _num(end)
    if not s:
        return ""
    if e and e > s:
        return f"pp. {int(s)}–{int(e)}"
    return f"p. {int(s)}"


def view(ruling: dict[str, Any], trace_url: str = "") -> dict[str, Any]:
    """Everything the wrench panel prints, ready for the template."""
    wrench: dict[str, Any] = ruling.get("wrench") or {}
    passages: list[dict[str, Any]] = ruling.get("passages") or []
    candidates: list[dict[str, Any]] = wrench.get("candidates") or []
    k = int(_num(wrench.get("k")) or rrf.K)
    voted = _voted(wrench, passages or candidates)
    top_ceiling = ceiling(voted, k)
    fused = [f for f in (_num(p.get("fused_score")) for p in [*passages, *candidates]) if f is not None]
    top_fused = max(fused) if fused else None
    timings: list[dict[str, Any]] = [
        {"stage": str(t.get("stage", "")), "ms": _num(t.get("ms")) or 0.0}
        for t in wrench.get("timings") or []
        if isinstance(t, dict)
    ]
    slowest = max((float(t["ms"]) for t in timings), default=0.0)
    for t in timings:  # log scale: an 88 ms search stays visible beside a 2.6 s answer
        t["bar"] = round(100 * math.log1p(t["ms"]) / math.log1p(slowest)) if slowest > 0 else 0
    arms = [
        {
            "arm": str(a.get("arm", "")),
            "state": str(a.get("state", "")),
            "detail": str(a.get("detail", "")),
            "hits": a.get("hits"),
            "ms": _num(a.get("ms")),
            "ok": str(a.get("state", "")) == StageState.OK,
            "category": a.get("category") if isinstance(a.get("category"), dict) else None,
        }
        for a in wrench.get("arms") or []
        if isinstance(a, dict)
    ]
    trace_id = str(wrench.get("trace_id") or ruling.get("trace_id") or "")
    return {
        "k": k,
        "voted": voted,
        "arms": arms,
        "missing": [a["arm"] for a in arms if not a["ok"]],
        "ceiling": top_ceiling,
        "ceiling_formula": ceiling_formula(voted, k),
        "top_fused": top_fused,
        "above_ceiling": top_fused is not None and top_fused > top_ceiling + CEILING_TOLERANCE,
        "passages": [_row(p, voted, top_ceiling) for p in passages],
        "candidates": [_row(c, voted, top_ceiling) for c in candidates],
        "guarantees": [str(g) for g in wrench.get("guarantees_fired") or []],
        "rerank": wrench.get("rerank") or {},
        "answer": wrench.get("answer") or {},
        "priors": wrench.get("priors") or {},
        "aliases": wrench.get("aliases") or [],
        "cards": [
            {
                "name": c.get("name", ""),
                "written": c.get("written", ""),
                "how": c.get("how", ""),
                "searched": bool(c.get("searched")),
            }
            for c in wrench.get("cards") or []
        ],
        "timings": timings,
        "search_span_ms": _num(wrench.get("search_span_ms")),
        "answer_ms": _num(wrench.get("answer_ms")),
        "total_ms": _num(wrench.get("total_ms")),
        "trace_id": trace_id,
        "trace_link": trace_link(trace_url, trace_id),
        "models": ruling.get("models") or {},
        "doorman": doorman_view(ruling),
    }


@functools.cache
def doorman_report() -> dict[str, Any] | None:
    """The doorman's last exam (rulesage/doorman_exam_report.json, shipped in the package), read once."""
    return stored_report()


def doorman_view(ruling: dict[str, Any]) -> dict[str, Any]:
    """The wrench's doorman panel: what it decided, why, who held the role, which checks ran."""
    info = (ruling.get("wrench") or {}).get("doorman") or {}
    report = doorman_report()
    state = str(ruling.get("public_state") or "pending")
    return {
        "state": state,
        "reason": str(ruling.get("public_reason") or ""),
        "holder": str(info.get("holder") or ""),
        "checks": [str(c) for c in info.get("checks") or []],
        "ms": _num(info.get("ms")),
        "exam_passed": bool(report and report.get("passed")),
        "exam_holder": str(report["doorman"]["name"]) if report else "",
    }


def format_ms(value: Any) -> str:
    ms = _num(value)
    if ms is None:
        return "—"
    if ms >= 1000:
        return f"{ms / 1000:.1f} s"
    if ms >= 10:
        return f"{ms:.0f} ms"
    return f"{ms:.1f} ms"
