"""The sentence reader: its served graph, the order it serves over the quote selector's, the setting that
picks it, its training rows and its held-out choice."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from services.answer.backends.extractive import BiEncoderScorer, ExtractiveBackend, Reader, read_sentences
from services.answer.selector import load
from services.answer.sentences import SentenceReader, reorder, sentence_text
from services.answer.settings import AnswerSettings
from tests.support.answer_passages import MOVE as READ_MOVE
from tests.support.answer_passages import SPELLS as READ_SPELLS
from tests.support.tiny_reader import tiny_reader as make_tiny_reader
from tests.support.tiny_reader import trained_scores

MOVE = dataclasses.replace(READ_MOVE, rerank_score=9.0)
SPELLS = dataclasses.replace(READ_SPELLS, rerank_score=4.0)
QUESTION = "how far can I move on my turn?"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_reader(tmp_path_factory.mktemp("sentences"), top=3, weight=2.0, max_tokens=64)


@pytest.fixture(scope="module")
def reader(folder: Path, tmp_path_factory: pytest.TempPathFactory) -> SentenceReader:
    return SentenceReader(folder, threads=1, models=tmp_path_factory.mktemp("models"))


def test_the_graph_scores_as_the_trained_cross_encoder(folder: Path, reader: SentenceReader) -> None:
    texts = [sentence_text("Movement", "You can move up to your speed."), "Spells have a casting time."]
    want = trained_scores(folder, 64, QUESTION, texts)
    assert np.allclose(reader.read(QUESTION, texts), want, atol=1e-4)
    assert reader.top == 3 and reader.weight == 2.0 and reader.identity.endswith("/top3x2")


def test_reorder_adds_the_readers_logit_over_the_read_and_keeps_the_rest_below() -> None:
    logits = np.array([3.0, 2.5, 2.0, 1.0, -1.0])
    top = [0, 1, 2]
    read = np.array([0.0, 1.0, 3.0])  # the reader prefers the selector's third
    out = reorder(logits, read, top, 1.0)
    assert list(np.argsort(-out, kind="stable")) == [2, 1, 0, 3, 4]
    assert out[[3, 4]].max() < out[top].min()  # unread below every read one, in the selector's order
    assert out[3] > out[4]
    alone = reorder(logits, read, top, 100.0)  # a large weight: the reader's order among those it read
    assert list(np.argsort(-alone, kind="stable"))[:3] == [2, 1, 0]
    assert np.array_equal(reorder(logits, np.zeros(0), [], 1.0), logits)


def test_order_reads_only_the_selectors_best(reader: SentenceReader) -> None:
    texts = ["a", "b", "c", "d", "e"]
    logits = np.array([0.0, 5.0, 1.0, 4.0, 3.0])
    out, read = reader.order(QUESTION, texts, logits)
    assert np.allclose(read, reader.read(QUESTION, ["b", "d", "e"]))
    assert set(np.argsort(-out, kind="stable")[:3]) == {
        1,
        3,
        4,
    }  # the selector's three best, whatever order the reader gives them
    assert list(np.argsort(-out, kind="stable")[3:]) == [2, 0]


def test_the_setting_picks_a_reader_or_none_and_refuses_a_folder_without_one(
    folder: Path, tmp_path: Path
) -> None:
    assert AnswerSettings(rulesage_answer_sentence_reader="off").sentence_reader_folder() is None
    assert AnswerSettings(rulesage_answer_sentence_reader=str(folder)).sentence_reader_folder() == folder
    with pytest.raises(ValueError, match="RULESAGE_ANSWER_SENTENCE_READER"):
        AnswerSettings(rulesage_answer_sentence_reader=str(tmp_path))


def test_the_reading_orders_by_the_reader_and_keeps_the_selectors_answerability(
    reader: SentenceReader,
) -> None:
    scorer = BiEncoderScorer()
    model = load()
    plain, sure = read_sentences(QUESTION, [SPELLS, MOVE], scorer, model)
    read, sure_read = read_sentences(QUESTION, [SPELLS, MOVE], scorer, model, reader)
    assert sure_read == sure  # the answerability reads the selector's scores, its calibrated scale
    assert sorted((c.passage.id, c.start) for c in read) == sorted((c.passage.id, c.start) for c in plain)
    # the reader's pick among the selector's best three leads the reading
    best3 = plain[:3]
    texts = [
        sentence_text(c.passage.heading_path[-1] if c.passage.heading_path else "", c.text) for c in best3
    ]
    want = best3[
        int(
            np.argmax(
                reader.read(QUESTION, texts) * reader.weight
                + np.log([c.score / (1 - c.score) for c in best3])
            )
        )
    ]
    assert (read[0].passage.id, read[0].start) == (want.passage.id, want.start)
    backend = ExtractiveBackend(model.threshold, reader=Reader(model, model.threshold, "x", scorer, reader))
    assert backend.identity.endswith(reader.identity)


def test_rows_take_the_answering_sentence_and_negatives_away_from_it() -> None:
    from training.sentences.data import row_of

    text = (
        "Intro sentence about movement here. You can move up to your speed on your turn always. "
        "It continues the rule above here. Spells are cast with actions and slots."
    )
    spans = [(0, 35), (36, 86), (87, 120), (121, len(text))]
    holds = [False, True, False, False]

    def passage(pid: int, hold: list[bool], cos: list[float]) -> dict[str, object]:
        return {
            "heading_path": ["Movement"],
            "text": text,
            "holds": any(hold),
            "sentences": [
                {"start": s, "end": e, "cosine": c, "holds": h}
                for (s, e), h, c in zip(spans, hold, cos, strict=True)
            ],
        }

    ask = {
        "question": QUESTION,
        "source": "https://example.org/post",
        "passages": [
            passage(1, holds, [0.5, 0.4, 0.9, 0.6]),
            passage(2, [False] * 4, [0.8, 0.7, 0.6, 0.3]),
        ],
    }
    row = row_of(ask)
    assert row is not None and row["public"]
    assert row["positive"] == "Movement: You can move up to your speed on your turn always."
    negatives = [row[f"negative_{i}"] for i in range(1, 6)]
    # the neighbours of the answering sentence (0.5 and 0.9 in passage 1) are never negatives
    assert negatives.count("Movement: Intro sentence about movement here.") == 1  # passage 2's only
    assert "Movement: It continues the rule above here." in negatives  # passage 2's copy
    assert len(negatives) == 5
    ask["passages"][0]["sentences"][1]["end"] = 50  # the answer cut to five words: no positive left
    assert row_of(ask) is None


def test_the_choice_needs_a_cell_beating_the_selector() -> None:
    from training.sentences.measure import choose, hit

    order = np.array([2.0, 1.8, 0.0])
    sentence, passage = np.array([False, True, False]), np.array([False, True, True])
    assert hit(order, sentence, passage, 0.5) == (False, True, False)
    assert hit(order, sentence, passage, 0.1) == (False, False, False)
    held = {
        "selector": {"lead": 0.6, "quoted": 0.7, "exact": 0.4},
        "reader": {
            "top4/w1": {"lead": 0.64, "quoted": 0.7, "exact": 0.5},
            "top8/w1": {"lead": 0.645, "quoted": 0.7, "exact": 0.5},
            "top8/w2": {"lead": 0.6, "quoted": 0.7, "exact": 0.5},
            "top4/w4": {"lead": 0.7, "quoted": 0.69, "exact": 0.6},  # cites the answer's passage less
        },
    }
    assert choose(held) == (4, 1.0)  # the shallowest within half a point of the best
    held["reader"] = {"top4/w1": {"lead": 0.6, "quoted": 0.7, "exact": 0.4}}
    assert choose(held) == (0, 0.0)  # no better than the selector: nothing to ship


def test_an_answerability_model_reading_the_reader_needs_it(tmp_path: Path, reader: SentenceReader) -> None:
    from services.answer.selector import ASK_FEATURES, MODEL, READ_FEATURES, ask_features, read_columns

    d = json.loads(MODEL.read_text(encoding="utf-8"))
    # a one-stump model over the reader's best logit: answerable above 0
    d["answerability"] = {
        "kind": "trees",
        "features": ["best", "read_best"],
        "baseline": 0.0,
        "trees": [
            {
                "feature": [1, 0, 0],
                "threshold": [0.0, 0.0, 0.0],
                "left": [1, 0, 0],
                "right": [2, 0, 0],
                "leaf": [False, True, True],
                "value": [0.0, -3.0, 3.0],
                "missing_left": [True, False, False],
            }
        ],
    }
    path = tmp_path / "answerer.json"
    path.write_text(json.dumps(d), encoding="utf-8")
    model = load(path)
    assert model.needs_reader and not load().needs_reader
    with pytest.raises(ValueError, match="sentence reader"):
        Reader(model, model.threshold, "x", BiEncoderScorer())
    scorer = BiEncoderScorer()
    with pytest.raises(ValueError, match="reads the sentence reader"):
        read_sentences(QUESTION, [SPELLS, MOVE], scorer, model)
    _, sure = read_sentences(QUESTION, [SPELLS, MOVE], scorer, model, reader)
    assert sure in (pytest.approx(1 / (1 + np.exp(3.0))), pytest.approx(1 / (1 + np.exp(-3.0))))
    assert read_columns(np.array([1.0, 3.0, 2.0])) == (3.0, 1.0)
    assert read_columns(None) == (0.0, 0.0)
    row = ask_features(QUESTION, [], np.zeros(0), np.array([2.0]))
    assert [row[ASK_FEATURES.index(n)] for n in READ_FEATURES] == [2.0, 5.0]


def test_build_splits_by_the_careful_readers_split_and_drops_what_the_guard_touches(tmp_path: Path) -> None:
    import shutil

    from rulesage.config import shared_dir
    from training.questions import eval_guard
    from training.sentences.data import build

    evaluation = tmp_path / "eval"
    evaluation.mkdir()
    shutil.copy(shared_dir() / "eval" / "reserved.py", evaluation / "reserved.py")
    (evaluation / "reserved.json").write_text(json.dumps({"runs": [], "threads": []}))
    (evaluation / "gold.jsonl").write_text(json.dumps({"question": "An evaluated question, word for word?"}))
    text = "Movement. You can move up to your speed on each of your turns. Other rules follow here later."
    sentences = [(0, 9, False), (10, 62, True), (63, len(text), False)]

    def ask(question: str, split: str, answerable: bool = True) -> dict[str, object]:
        passages = [
            {
                "heading_path": [f"H{k}"],
                "text": text,
                "holds": k == 0 and answerable,
                "sentences": [
                    {"start": s, "end": e, "cosine": 0.5 - k / 10, "holds": h and k == 0 and answerable}
                    for s, e, h in sentences
                ],
            }
            for k in range(4)
        ]
        return {
            "game": "g",
            "question": question,
            "answerable": answerable,
            "split": split,
            "source": "written",
            "passages": passages,
        }

    asks = [
        ask("How far can I move?", "train"),
        ask("Can I move twice?", "val"),
        ask("Who deals the cards?", "silent", answerable=False),
        ask("An evaluated question, word for word?", "train"),
        {"game": "g", "question": "q", "answerable": True, "split": "train", "degraded": ["fusion"]},
    ]
    path = tmp_path / "asks.jsonl"
    path.write_text("".join(json.dumps(a) + "\n" for a in asks))
    counts = build(path, tmp_path / "rows", eval_guard(evaluation))
    assert counts["counts"] == {
        "train": 1,
        "train-public": 0,
        "val": 1,
        "silent": 1,
        "dropped-eval-overlap": 1,
        "degraded": 1,
    }
    (train,) = [json.loads(x) for x in (tmp_path / "rows" / "train.jsonl").read_text().splitlines()]
    assert train["question"] == "How far can I move?" and train["positive"].startswith("H0: You can move")
    (val,) = [json.loads(x) for x in (tmp_path / "rows" / "val.jsonl").read_text().splitlines()]
    assert val["question"] == "Can I move twice?" and len(val["passages"]) == 4
