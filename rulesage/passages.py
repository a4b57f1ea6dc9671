"""Every conversion of a passage between its shapes, in one place.

A passage is a row of the library (``rulesage.store.passages.StoredPassage``), then on the wire the
contract's ``rulesage.v1.Passage`` (fusion hydrates it with its fused score and per-arm ranks; the reader
adds its score), then in a ruling the typed ``PassageView`` (kept passages) and ``Candidate`` (the wrench's
fused order).
The answer service reads the wire form into its own view (``services.answer.server.shown_of``) with the
stored vectors it needs to quote.
"""

from __future__ import annotations

from typing import Any

from rulesage.core.models import Candidate, PassageView
from rulesage.core.rrf import Fused
from rulesage.store.passages import StoredPassage
from rulesage.v1 import common_pb2


def to_pb(row: StoredPassage, fused: Fused) -> common_pb2.Passage:
    """A library row on the wire, with its place in the election."""
    return common_pb2.Passage(
        id=row.id,
        text=row.text,
        doc_key=row.doc_key,
        doc_title=row.doc_title,
        doc_kind=row.doc_kind,
        doc_version=row.doc_version,
        game=row.game,
        page_start=row.page_start,
        page_end=row.page_end,
        heading_path=row.heading_path,
        rule_id=row.rule_id,
        section_id=row.section_id,
        amends=row.amends,
        fused_score=fused.score,
        ranks=[common_pb2.ArmRank(arm=a, rank=k) for a, k in sorted(fused.ranks.items())],
    )


def _ranks(p: common_pb2.Passage) -> dict[str, int]:
    return {r.arm: r.rank for r in p.ranks}


def _rerank_score(p: common_pb2.Passage) -> float | None:
    return round(p.rerank_score, 4) if p.has_rerank_score else None


def to_view(p: common_pb2.Passage) -> PassageView:
    """A kept passage as a ruling shows it (pages 0 on the wire: none)."""
    return PassageView(
        id=p.id,
        text=p.text,
        doc_key=p.doc_key,
        doc_title=p.doc_title,
        doc_kind=p.doc_kind,
        doc_version=p.doc_version,
        game=p.game,
        page_start=p.page_start or None,
        page_end=p.page_end or None,
        heading_path=list(p.heading_path),
        rule_id=p.rule_id,
        section_id=p.section_id,
        fused_score=round(p.fused_score, 6),
        ranks=_ranks(p),
        rerank_score=_rerank_score(p),
    )


def to_candidate(p: common_pb2.Passage) -> Candidate:
    """A fused candidate as the wrench lists it: its ranks and scores, not its text."""
    return Candidate(
        id=p.id, fused_score=round(p.fused_score, 6), ranks=_ranks(p), rerank_score=_rerank_score(p)
    )


def to_json(p: common_pb2.Passage) -> dict[str, Any]:
    """``to_view`` as JSON: what the evaluation matches gold evidence against."""
    return to_view(p).to_json()
