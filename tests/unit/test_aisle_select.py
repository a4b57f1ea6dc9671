"""The aisle: errata first when slots run short, at most 4 documents, 8 per document, at most 32."""

from __future__ import annotations

from services.aisle.select import Document, Hit, ballot, choose_documents


def test_errata_and_faq_take_the_slots_first() -> None:
    docs = [
        Document(1, "core", "rulebook", True),
        Document(2, "exp1", "expansion", True),
        Document(3, "exp2", "expansion", True),
        Document(4, "glossary", "reference", False),
        Document(5, "fix", "errata", True),
        Document(6, "faq", "faq", True),
    ]
    chosen = [d.key for d in choose_documents(docs)]
    assert chosen == ["fix", "faq", "core", "exp1"]


def test_ballot_keeps_eight_per_document_and_at_most_32() -> None:
    per_doc = [[Hit(d * 100 + i, 1.0 - i / 100 - d / 1000, d) for i in range(12)] for d in range(5)]
    out = ballot(per_doc)
    assert len(out) == 32
    for d in range(5):
        assert sum(h.document_id == d for h in out) <= 8
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)
