"""The cross reader served: a tiny real cross-encoder (one layer, random weights) exported to ONNX by the
same code that exports the shipped one, read through ONNX Runtime."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from rulesage.pairs import PairTokens
from rulesage.pairs import is_pair_reader as is_reader
from rulesage.v1 import common_pb2
from services.rerank import choice
from services.rerank.blend import BlendScorer, blend, on_scale, ranks
from services.rerank.choice import chosen_model, load_scorer
from services.rerank.cross import BELOW, CrossScorer
from services.rerank.scorer import MODEL_FILE, RuntimeOptions, with_prior
from services.rerank.server import read
from services.rerank.window import WINDOW_CHARS, reader_text, window
from tests.support.tiny_reader import tiny_reader as make_tiny_reader
from tests.support.tiny_reader import trained_scores
from training.reader.measure import beats_head, choose, order_figures

QUESTION = "If my creature's toughness drops to zero from a -4/-4 effect, when does it die?"
TEXTS = [
    "704.5f If a creature has toughness 0 or less, it's put into its owner's graveyard.",
    "Lethal damage is damage equal to or greater than a creature's toughness.",
    "The robber is moved when a seven is rolled.",
    "A player may mulligan any number of times.",
    "Backgammon checkers move in the direction of their home board.",
    "Tapping a permanent turns it sideways.",
]


@pytest.fixture(scope="module")
def tiny_reader(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_reader(tmp_path_factory.mktemp("reader"), depth=4, fused_prior=1.0, max_tokens=64)


@pytest.fixture(scope="module")
def scorer(tiny_reader: Path, tmp_path_factory: pytest.TempPathFactory) -> CrossScorer:
    return CrossScorer(tiny_reader, RuntimeOptions(threads=1, batch=3), tmp_path_factory.mktemp("models"))


def test_the_graph_scores_as_the_trained_cross_encoder(tiny_reader: Path, scorer: CrossScorer) -> None:
    # the trainer's model given the shipped weights, against the served ONNX graph
    want = trained_scores(tiny_reader, 64, QUESTION, TEXTS)
    assert np.allclose(scorer.read(QUESTION, TEXTS), want, atol=1e-4)
    assert np.ptp(want) > 1e-3  # a reader that tells the texts apart


def test_pairs_are_cut_longest_first_as_training_cut_them() -> None:
    from transformers import AutoTokenizer

    from rulesage.embed import package_model_dir

    tok = AutoTokenizer.from_pretrained(str(package_model_dir()))
    long = "The active player chooses the order of the triggers. " * 40
    for text in (TEXTS[0], long):
        ids, types = PairTokens(64).pairs(QUESTION, [text])
        want = tok(QUESTION, text, truncation=True, max_length=64)
        assert ids[0] == want["input_ids"] and types[0] == want["token_type_ids"]
    assert len(PairTokens(64).pairs(QUESTION, [long])[0][0]) == 64


def test_a_pair_scores_the_same_whatever_its_batch_mates(scorer: CrossScorer) -> None:
    together = scorer.read(QUESTION, TEXTS)
    apart = np.concatenate([scorer.read(QUESTION, [t]) for t in TEXTS])
    assert np.allclose(together, apart, atol=1e-4)


def test_only_the_read_depth_is_read_the_rest_keeps_the_fused_order_below(scorer: CrossScorer) -> None:
    scores = scorer.score(QUESTION, TEXTS)
    read_part = scorer.read(QUESTION, TEXTS[:4])
    assert scorer.depth == 4 and np.allclose(scores[:4], read_part, atol=1e-5)
    assert scores[4] == pytest.approx(float(read_part.min()) - BELOW)
    assert scores[4] > scores[5] and scores[4:].max() < scores[:4].min()
    assert scorer.score(QUESTION, []).shape == (0,)


def test_the_servicer_reads_headings_then_the_window_and_blends_the_fused_order(scorer: CrossScorer) -> None:
    long = "Combat damage is dealt simultaneously. " * 60
    candidates = [
        common_pb2.Passage(
            id=i, text=t, doc_key="cr", doc_kind="rulebook", game="mtg", heading_path=["7. Rules", f"70{i}"]
        )
        for i, t in enumerate([*TEXTS[:3], long])
    ]
    got = read(scorer, QUESTION, "mtg", candidates, keep=8)
    texts = [reader_text(c.heading_path, c.text) for c in candidates]
    want = [float(s) - 1.0 * math.log1p(i) for i, s in enumerate(scorer.read(QUESTION, texts))]
    assert np.allclose(got.scores, want, atol=1e-4)


def test_the_reader_reads_two_headings_and_the_window() -> None:
    long = "a" * 3000
    assert reader_text(["Part", "Chapter", "Section"], "text") == "Chapter > Section\ntext"
    assert reader_text([], long) == window(long) and len(window(long)) == WINDOW_CHARS


def test_the_model_setting_chooses_the_reader_the_head_or_the_cosine(
    tiny_reader: Path, tmp_path: Path
) -> None:
    assert chosen_model("interim") is None
    assert chosen_model(str(tiny_reader)) == tiny_reader and is_reader(tiny_reader)
    assert not is_reader(tmp_path) and not is_reader(MODEL_FILE)
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "reader.json").write_text("{}")
    assert not is_reader(tmp_path)  # no score layer: not a reader
    if MODEL_FILE.exists():
        assert chosen_model("head") == MODEL_FILE
    with pytest.raises(FileNotFoundError, match="RULESAGE_RERANK_MODEL"):
        chosen_model(str(tmp_path / "missing"))
    scorer = load_scorer(RuntimeOptions(threads=1), str(tiny_reader))
    assert isinstance(scorer, CrossScorer) and scorer.identity.endswith("/top4+fused-prior1")


def test_the_graph_is_exported_once_per_weights(tiny_reader: Path, tmp_path: Path) -> None:
    CrossScorer(tiny_reader, RuntimeOptions(threads=1), tmp_path)
    (graph,) = tmp_path.glob("cross-reader-*-fp32.onnx")
    stamp = graph.stat().st_mtime_ns
    CrossScorer(tiny_reader, RuntimeOptions(threads=1), tmp_path)
    assert graph.stat().st_mtime_ns == stamp and len(list(tmp_path.glob("*.onnx"))) == 1


def test_the_held_out_order_figures_and_the_choice() -> None:
    labels = [[0, 1, 0], [1, 0, 0]]
    fused = [np.array([0.0, -1.0, -2.0]), np.array([0.0, -1.0, -2.0])]
    assert order_figures(fused, labels) == {"recall_at_8": 1.0, "mrr_at_10": 0.75}
    figures = {
        "reader": {
            "top16/prior0": {"recall_at_8": 0.80, "mrr_at_10": 0.600},
            "top16/prior1": {"recall_at_8": 0.85, "mrr_at_10": 0.630},
            "top24/prior0.5": {"recall_at_8": 0.89, "mrr_at_10": 0.641},
            "top24/prior1": {"recall_at_8": 0.90, "mrr_at_10": 0.618},
            "top40/prior0.5": {"recall_at_8": 0.90, "mrr_at_10": 0.646},
        }
    }
    # the best is read at 40; 24 comes within half a point at a little over half the cost
    assert choose(figures) == (24, 0.5, 0.0)
    figures["reader"]["top16/prior1"]["mrr_at_10"] = 0.643
    assert choose(figures) == (16, 1.0, 0.0)
    # a blend with the head's order competes with the reader alone at each depth
    figures["blend"] = {
        "top16/prior1/head0.5": {"recall_at_8": 0.91, "mrr_at_10": 0.660},
        "top16/prior0/head0.25": {"recall_at_8": 0.91, "mrr_at_10": 0.660},
        "top24/prior1/head0.5": {"recall_at_8": 0.91, "mrr_at_10": 0.664},
    }
    assert choose(figures) == (16, 0.0, 0.25)  # a tie goes to the smaller prior, then the smaller share
    # a reader ships only when it orders the held-out questions better than the head alone
    chosen = figures["blend"]["top16/prior0/head0.25"]
    assert beats_head(figures, chosen)  # the head was not measured
    figures["head"] = {"recall_at_8": 0.93, "mrr_at_10": 0.660}
    assert not beats_head(figures, chosen)  # a tie on MRR@10, more recall@8: the head
    figures["head"]["recall_at_8"] = 0.90
    assert beats_head(figures, chosen)


def test_a_blend_fuses_the_two_orders_by_rank_never_by_score() -> None:
    head = np.array([10.0, 9.0, 1.0, 0.0])
    reader = np.array([0.1, 5.0, 4.0, -3.0])
    assert ranks(reader).tolist() == [3, 1, 2, 4]
    want = [
        s / (60 + h) + (1 - s) / (60 + r)
        for s in (0.5,)
        for h, r in zip([1, 2, 3, 4], [3, 1, 2, 4], strict=True)
    ]
    assert np.allclose(blend(head, reader, 0.5), want)
    assert np.argsort(-blend(head, reader, 0.5)).tolist() == [1, 0, 2, 3]
    assert np.argsort(-blend(head, reader, 0.25), kind="stable").tolist() == [1, 2, 0, 3]
    # only ranks count: rescaling either model changes nothing
    assert np.array_equal(blend(head, reader, 0.5), blend(head * 1e3 - 7, reader / 9, 0.5))
    with pytest.raises(ValueError):
        blend(head, reader[:3], 0.5)
    with pytest.raises(ValueError):
        blend(head, reader, 1.5)


def test_the_blended_order_is_served_on_the_heads_scale() -> None:
    head, order = np.array([2.5, 1.0, -0.5, -4.0]), np.array([0.01, 0.03, 0.02, 0.0])
    got = on_scale(order, head)
    assert sorted(got.tolist()) == sorted(np.float32(head).tolist())  # the head's values, re-dealt
    assert np.argsort(-got).tolist() == np.argsort(-order).tolist() == [1, 2, 0, 3]
    assert np.allclose(with_prior(np.array([1.0, 1.0]), 2.0), [1.0, 1.0 - 2.0 * math.log(2)])


@pytest.fixture()
def blended_reader(tiny_reader: Path, tmp_path: Path) -> Path:
    """The tiny reader, its reader.json asking for a blend with the shipped head."""
    import shutil

    folder = tmp_path / "blended"
    shutil.copytree(tiny_reader, folder)
    cfg = json.loads((folder / "reader.json").read_text())
    (folder / "reader.json").write_text(json.dumps({**cfg, "head_share": 0.5}))
    return folder


@pytest.mark.skipif(not MODEL_FILE.exists(), reason="no head shipped")
def test_the_servicer_gives_each_model_what_it_reads_and_serves_the_blend(blended_reader: Path) -> None:
    scorer = load_scorer(RuntimeOptions(threads=1, batch=3), str(blended_reader))
    assert isinstance(scorer, BlendScorer) and "+rrf(head 0.5" in scorer.identity
    candidates = [
        common_pb2.Passage(
            id=i, text=t, doc_key="cr", doc_kind="rulebook", game="mtg", heading_path=["7. Rules", f"70{i}"]
        )
        for i, t in enumerate(TEXTS)
    ]
    got = read(scorer, QUESTION, "mtg", candidates, keep=8)
    head = scorer.head.score(QUESTION, TEXTS)  # the head reads windows
    reader = scorer.reader.score(QUESTION, [reader_text(c.heading_path, c.text) for c in candidates])
    assert np.allclose(got.scores, scorer.combine(head, reader), atol=1e-4)
    order = blend(with_prior(head, scorer.head.prior), with_prior(reader, scorer.reader.prior), 0.5)
    assert np.argsort(-np.asarray(got.scores)).tolist() == np.argsort(-order, kind="stable").tolist()
    assert set(got.drawn) == set(range(len(TEXTS)))  # the head's window states, drawn to be stored


def test_a_blend_without_its_head_fails_fast(
    blended_reader: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(choice, "MODEL_FILE", tmp_path / "no-head.onnx")
    with pytest.raises(FileNotFoundError, match="blends with the head"):
        load_scorer(RuntimeOptions(threads=1), str(blended_reader))
