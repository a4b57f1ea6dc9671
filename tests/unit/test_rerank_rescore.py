"""The offline rescoring's order and figures: the served prior as the rerank service applies it, and recall,
MRR and P@1 by the evaluation's gold rules (an "all" question needs every evidence item in the first 8)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from services.rerank.scorer import with_prior
from training.reranker.rescore import cascade_order, measure, parse_pairs, served_order


def passage(pid: int, text: str) -> dict[str, Any]:
    return {"id": pid, "text": text, "doc_key": "golf-rules", "page_start": 3, "page_end": 3}


RULE = "Nothing can be played on to a King in the waste pile."
OTHER = "Aces are low and the waste pile starts with one card."
SECOND = "A round ends when the stock is empty and no card can be moved."


def question(qid: str, quotes: list[str], every: bool = False) -> dict[str, Any]:
    q: dict[str, Any] = {
        "id": qid,
        "game": "solitaire-golf",
        "question": "can I play on a king?",
        "answerable": True,
        "evidence": [{"doc": "golf-rules", "page": 3, "quote": t} for t in quotes],
    }
    if every:
        q["all"] = True
    return q


def test_the_served_order_is_the_services() -> None:
    scores = np.asarray([1.0, 2.0, 1.9, 0.5])
    order = served_order(scores, 2.0)
    assert order == [int(i) for i in np.argsort(-with_prior(scores, 2.0), kind="stable")]
    assert order[0] == 0  # 2.0 - 2 ln 2 falls under 1.0
    assert served_order(np.asarray([1.0, 1.0, 1.0]), 0.0) == [0, 1, 2]  # ties keep the fused order


def test_a_cascade_keeps_by_one_mix_and_orders_by_the_other() -> None:
    keep = np.asarray([5.0, 4.0, 3.0, 2.0, 1.0])
    order = np.asarray([1.0, 2.0, 3.0, 4.0, 5.0])
    assert cascade_order(keep, order, 0.0, kept=3) == [2, 1, 0, 4, 3]  # kept {0, 1, 2}, led by order's best
    assert cascade_order(order, order, 0.0, kept=3) == served_order(order, 0.0)  # a mean is its own cascade


def test_figures_follow_the_gold_rules() -> None:
    rule, other, second = passage(1, RULE), passage(2, OTHER), passage(3, SECOND)
    qs = [question("a", [RULE]), question("b", [RULE]), question("c", [RULE])]
    orders = [[rule, other], [other, rule], [other] * 12 + [rule]]
    f = measure(orders, qs)
    assert (f.questions, f.recall_8, f.mrr_10, f.p_1) == (3, round(2 / 3, 3), 0.5, round(1 / 3, 3))

    both = question("d", [RULE, SECOND], every=True)
    only_one = measure([[rule] + [other] * 7 + [second]], [both])
    assert only_one.recall_8 == 0.0 and only_one.mrr_10 == 1.0  # recall asks for both, the rank for any
    assert measure([[second, rule]], [both]).recall_8 == 1.0


def test_pairs_are_checked() -> None:
    assert parse_pairs(["A=x.onnx", "B=y.onnx"], "--head") == {"A": "x.onnx", "B": "y.onnx"}
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        parse_pairs(["A"], "--head")
    with pytest.raises(SystemExit, match="twice"):
        parse_pairs(["A=x", "A=y"], "--head")
