"""The answerability features, the logistic model and its file, on constructed inputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from services.answer import answerability as ab
from services.answer.answerability import FEATURES, Reading, Term

READING = Reading(best_sentence=0.6, best_sentence_cosine=0.55, best_passage=0.7, best_passage_id=1)


def term(lexeme: str, df: int, holders: set[int], n: int = 1000) -> Term:
    return Term(lexeme, df, n, frozenset(holders))


def test_features_weigh_terms_by_idf_and_name_the_missing_concept() -> None:
    # "fate point" in a book that never says "fate": the rare, missing term dominates
    terms = [term("many", 300, {1, 2}), term("point", 120, {2}), term("fate", 0, set())]
    x = dict(zip(FEATURES, ab.features(READING, terms), strict=True))
    assert x["best_sentence"] == 0.6 and x["best_passage"] == 0.7
    assert 0.0 < x["coverage_shown"] < 0.5  # the heavy term is missing
    assert x["coverage_best"] < x["coverage_shown"]  # passage 1 holds only the common word
    assert x["missing_idf"] == pytest.approx(1.0)  # df 0: the largest idf possible
    assert 0.5 < x["unknown_share"] < 1.0
    covered = [term("many", 300, {1}), term("point", 120, {1})]
    y = dict(zip(FEATURES, ab.features(READING, covered), strict=True))
    assert y["coverage_shown"] == y["coverage_best"] == 1.0 and y["missing_idf"] == 0.0
    assert y["unknown_share"] == 0.0


def test_a_question_without_terms_reads_as_fully_covered() -> None:
    x = dict(zip(FEATURES, ab.features(READING, []), strict=True))
    assert x["coverage_shown"] == 1.0 and x["missing_idf"] == 0.0


def test_fit_separates_and_the_file_round_trips(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    pos = rng.normal(0.7, 0.1, size=(200, len(FEATURES)))
    neg = rng.normal(0.3, 0.1, size=(200, len(FEATURES)))
    x = np.vstack([pos, neg])
    y = np.array([1.0] * 200 + [0.0] * 200)
    model = ab.fit(x, y)
    scores = [model.probability(v) for v in x]
    assert ab.auc(scores, y.astype(int).tolist()) > 0.99
    assert all(0.0 <= s <= 1.0 for s in scores)
    path = tmp_path / "answerability.json"
    path.write_text(json.dumps(model.to_json()))
    again = ab.load(path)
    assert again is not None and again.identity.startswith("answerability@")
    assert again.probability(x[0]) == pytest.approx(model.probability(x[0]), abs=1e-4)
    bad = model.to_json() | {"features": ["best_sentence"]}
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match="trained on"):
        ab.load(path)
    assert ab.load(tmp_path / "absent.json") is None


def test_auc_counts_ties_half() -> None:
    assert ab.auc([0.9, 0.1], [1, 0]) == 1.0
    assert ab.auc([0.5, 0.5], [1, 0]) == 0.5
    assert np.isnan(ab.auc([0.5], [1]))
