"""The evaluation's summary of answered rulings: conversion is answered correctly over recall@8, so finding
and quoting read apart."""

from __future__ import annotations

from typing import Any

import pytest

from rulesage.eval.runs import summarise


def row(
    i: int, found: bool, correct: bool, answerable: bool = True, verdict: str = "answered"
) -> dict[str, Any]:
    return {
        "id": f"q{i}",
        "game": "solitaire-golf",
        "tags": [],
        "answerable": answerable,
        "degraded": [],
        "found_8": found,
        "found_8_fused": found,
        "found_80": found,
        "rank_fused": 1 if found else None,
        "rank_reranked": 1 if found else None,
        "arms": {},
        "verdict": verdict,
        "answered_correctly": correct,
        "lead_correct": correct,
        "quoted_exactly": False,
        "quotes": 1,
        "invalid_citations": 0,
        "confidence": 0.9 if answerable else 0.1,
    }


def test_conversion_is_answered_correctly_over_recall_at_8() -> None:
    rows = [
        row(0, found=True, correct=True),
        row(1, found=True, correct=True),
        row(2, found=True, correct=False),  # found, and quoted from the wrong passage
        row(3, found=False, correct=False),
        row(4, found=False, correct=False, answerable=False, verdict="not_in_book"),  # not counted
    ]
    report = summarise(rows, {}, answer=True)
    assert report["recall_at_8"] == 0.75 and report["answered_correctly"] == 0.5
    assert report["conversion"] == pytest.approx(2 / 3, abs=5e-4)


def test_conversion_is_undefined_when_nothing_was_found() -> None:
    report = summarise([row(0, found=False, correct=False)], {}, answer=True)
    assert report["conversion"] is None


def test_no_conversion_without_an_answer_stage() -> None:
    assert "conversion" not in summarise([row(0, found=True, correct=True)], {}, answer=False)
