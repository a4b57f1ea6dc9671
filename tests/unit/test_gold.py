"""The one gold loader and the one matching rule every figure uses (rulesage.eval.gold)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from rulesage.eval.gold import (
    Evidence,
    GoldError,
    first_rank,
    found,
    found_at,
    load_gold,
    quotes_evidence,
    supports_evidence,
)

QUOTE = "A creature with toughness 0 or less is put into its owner's graveyard"


@dataclass(frozen=True)
class Row:
    doc_key: str
    page_start: int | None
    page_end: int | None
    text: str


def passage(doc: str = "cr", start: int | None = 5, end: int | None = 6, text: str = QUOTE) -> dict:
    return {"doc_key": doc, "page_start": start, "page_end": end, "text": f"704.5f {text}."}


def test_a_passage_supports_evidence_of_its_document_on_its_pages() -> None:
    ev = {"doc": "cr", "page": 6, "quote": QUOTE}
    assert supports_evidence(passage(), ev)
    assert not supports_evidence(passage(doc="other"), ev)
    assert not supports_evidence(passage(start=7, end=9), ev)
    assert supports_evidence(passage(start=None, end=None), ev)  # no pages: the quote decides
    assert supports_evidence(passage(start=6, end=None), ev)  # one page
    assert not supports_evidence(passage(text="something else entirely"), ev)
    # a run of 8 of the quote's words is enough
    assert supports_evidence(passage(text="with toughness 0 or less is put into its"), ev)


def test_a_quote_is_the_evidences_own_sentence_only_in_a_passage_supporting_it() -> None:
    ev = {"doc": "cr", "page": 6, "quote": QUOTE}
    whole = passage(text=f"Other rules first. {QUOTE}, as a state-based action")
    assert quotes_evidence(whole, f"{QUOTE}, as a state-based action.", ev)  # the quote inside the sentence
    assert quotes_evidence(whole, "with toughness 0 or less is put into its owner's", ev)  # inside the quote
    assert not quotes_evidence(whole, "Other rules first.", ev)  # the right passage, another sentence
    assert not quotes_evidence(passage(doc="other"), QUOTE, ev)  # the sentence, from another book


def test_objects_and_mappings_match_alike() -> None:
    ev = Evidence("cr", 6, QUOTE)
    assert supports_evidence(Row("cr", 5, 6, QUOTE), ev) == supports_evidence(passage(), ev) is True
    assert supports_evidence(Row("cr", 7, 9, QUOTE), ev) is False


def test_any_or_all_evidence_and_the_rank_it_is_found_at() -> None:
    q = {
        "evidence": [
            {"doc": "cr", "page": 6, "quote": QUOTE},
            {"doc": "cr", "quote": "Mana abilities resolve"},
        ]
    }
    ps = [passage(text="nothing here at all"), passage(), passage(text="Mana abilities resolve")]
    assert found(ps, q) and first_rank(ps, q) == 2 and found_at(ps, q) == 2
    q_all = {**q, "all": True}
    assert found_at(ps, q_all) == 3 and found(ps[:2], q_all) is False and found(ps, q_all)
    assert found_at(ps[:1], q) is None and first_rank(ps[:1], q) is None


def test_a_broken_gold_file_names_its_line(tmp_path: Path) -> None:
    good = {"id": "q1", "game": "mtg", "question": "?", "answerable": True, "evidence": []}
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps(good) + "\n\n" + json.dumps({"id": "q2"}) + "\n")
    with pytest.raises(GoldError, match=r"gold\.jsonl:3: missing game, question, answerable, evidence"):
        load_gold(path)
    path.write_text(json.dumps(good) + "\n{not json\n")
    with pytest.raises(GoldError, match=r":2: not JSON"):
        load_gold(path)
    path.write_text(json.dumps({**good, "evidence": [{"doc": "cr"}]}) + "\n")
    with pytest.raises(GoldError, match="evidence must be"):
        load_gold(path)
    path.write_text(json.dumps(good) + "\n")
    assert load_gold(path) == [good]
