"""The scorer's token handling and batching, and both scorers on real models (no mocks)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.rerank.choice import load_scorer
from services.rerank.scorer import (
    CLS,
    MODEL_FILE,
    SEP,
    CosineScorer,
    RuntimeOptions,
    Tokens,
    TrainedScorer,
    head_tail,
    length_batches,
    pad,
    with_prior,
)


def test_head_tail_keeps_both_ends() -> None:
    assert head_tail(list(range(10)), 20) == list(range(10))
    assert head_tail(list(range(10)), 4) == [0, 1, 8, 9]
    assert head_tail(list(range(10)), 5) == [0, 1, 7, 8, 9]


@given(st.lists(st.integers(), max_size=600), st.integers(min_value=1, max_value=300))
def test_head_tail_never_exceeds_span(ids: list[int], span: int) -> None:
    out = head_tail(ids, span)
    assert len(out) == min(len(ids), span)
    if len(ids) > span:
        assert out[: span // 2] == ids[: span // 2]
        assert out[span // 2 :] == ids[len(ids) - (span - span // 2) :]


@given(st.lists(st.integers(min_value=1, max_value=300), max_size=100), st.integers(1, 32))
def test_length_batches_cover_every_row_once_grouped_by_length(lengths: list[int], batch: int) -> None:
    batches = length_batches(lengths, batch)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(1 <= len(b) <= batch for b in batches)
    assert [lengths[i] for i in flat] == sorted(lengths)  # shortest first: little padding per batch


def test_pad_masks_the_padding() -> None:
    ids, mask = pad([[1, 2, 3], [4]])
    assert ids.tolist() == [[1, 2, 3], [4, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]]


def test_windows_are_cut_head_and_tail_in_tokens() -> None:
    tok = Tokens(max_tokens=32)
    long = "alpha " * 300 + "omega"
    (row,) = tok.windows([long])
    assert len(row) == 32 and row[0] == CLS and row[-1] == SEP
    assert tok.tokenizer.decode(row[-2:-1]) == "omega"  # the tail of the window is read
    q = tok.question("can the robber go back to the desert?")
    assert q[0] == CLS and q[-1] == SEP and len(q) <= 64


PASSAGES = [
    "The robber may be moved to any terrain hex, including the desert.",
    "Longest Road: the first player to build a continuous road of five segments takes this card.",
    "Shuffle the development cards and place them face down.",
]


def test_interim_cosine_reads_the_question_and_says_what_it_is() -> None:
    scorer = CosineScorer(RuntimeOptions(threads=1))
    assert scorer.identity.startswith("interim:bi-encoder-cosine-of-window:")
    scores = scorer.score("can I move the robber back onto the desert?", PASSAGES)
    assert scores.shape == (3,)
    assert int(np.argmax(scores)) == 0
    assert scorer.score("anything", []).shape == (0,)


def test_batching_moves_scores_only_by_int8_noise() -> None:
    # Dynamic int8 quantisation scales activations per batch, so batch mates move a score slightly
    # (measured ~0.01 of cosine); the order must not change.
    one = CosineScorer(RuntimeOptions(threads=1, batch=1)).score("robber desert", PASSAGES)
    many = CosineScorer(RuntimeOptions(threads=1, batch=16)).score("robber desert", PASSAGES)
    assert np.allclose(one, many, atol=0.03)
    assert list(np.argsort(-one)) == list(np.argsort(-many))


def test_the_shipped_head_scores_and_names_itself() -> None:
    scorer = load_scorer(RuntimeOptions(threads=1), "head")
    assert isinstance(scorer, TrainedScorer)
    assert scorer.identity.startswith("reranker-int8.onnx@")
    scores = scorer.score("can I move the robber back onto the desert?", PASSAGES)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    assert int(np.argmax(scores)) == 0
    # Candidate order does not change a passage's score beyond int8 noise (20 x cosine scale).
    again = scorer.score("can I move the robber back onto the desert?", PASSAGES[::-1])
    assert np.allclose(scores, again[::-1], atol=0.6)
    # The shipped head starts from the cosine and corrects it: the anchor is reported beside the score.
    score, cosine = scorer.score_and_cosine("can I move the robber back onto the desert?", PASSAGES)
    assert np.allclose(score, scores, atol=0.6) and (np.abs(cosine) <= 1.0001).all()


def test_interim_is_chosen_on_request() -> None:
    assert isinstance(load_scorer(RuntimeOptions(threads=1), "interim"), CosineScorer)
    with pytest.raises(FileNotFoundError):
        load_scorer(RuntimeOptions(threads=1), "/nonexistent/model.onnx")


SITUATED = (
    "We were playing last night and my friend rolled a seven while the robber sat on my wheat field. "
    "Can the robber go back onto the desert?"
)


def test_the_head_mixes_in_the_asking_sentences_by_its_weight() -> None:
    whole_only = TrainedScorer(MODEL_FILE, RuntimeOptions(threads=1, asked_weight=0.0))
    half = TrainedScorer(MODEL_FILE, RuntimeOptions(threads=1, asked_weight=0.5))
    assert "+asked" not in whole_only.identity and half.identity.endswith(f"+asked0.5@{half.asked_depth}")
    windows, _ = half.fill_states(PASSAGES)
    read = half.read_question(SITUATED)
    assert read.asked is not None  # a situation, then the question: both are read
    whole = half.head_scores(read.whole, windows)[0]
    asked = half.head_scores(read.asked, windows)[0]
    assert not np.allclose(whole, asked)  # the asking sentence alone reads differently
    mixed, cosine = half.read_scores(read, windows)
    # every candidate is within the depth: the asked scores are centred on the whole post's over them
    assert np.allclose(mixed, 0.5 * whole + 0.5 * (asked - asked.mean() + whole.mean()), atol=1e-4)
    assert np.allclose(cosine, half.head_scores(read.whole, windows)[1])  # the anchor stays the whole post's
    assert np.allclose(whole_only.read_scores(read, windows)[0], whole)  # weight 0 ignores the asked states
    assert np.allclose(half.score_and_cosine(SITUATED, PASSAGES)[0], mixed)  # the served path is the same
    # a question that only asks has nothing to mix: it reads as a whole
    plain = half.read_question("Can the robber go back onto the desert?")
    assert plain.asked is None
    assert whole_only.read_question(SITUATED).asked is None  # not drawn when the model does not read it
    assert whole_only.read_question(SITUATED, asked=True).asked is not None  # unless a caller shares the pass


def test_the_asking_sentences_reread_only_the_first_candidates(tmp_path: Path) -> None:
    # the shipped head with a config that re-reads one candidate: only the served first moves
    (tmp_path / MODEL_FILE.name).symlink_to(MODEL_FILE)
    cfg = json.loads((MODEL_FILE.parent / "reranker.json").read_text())
    (tmp_path / "reranker.json").write_text(json.dumps({**cfg, "asked_weight": 0.5, "asked_depth": 1}))
    one = TrainedScorer(tmp_path / MODEL_FILE.name, RuntimeOptions(threads=1))
    assert one.identity.endswith("+asked0.5@1")
    windows, _ = one.fill_states(PASSAGES)
    read = one.read_question(SITUATED)
    whole = one.head_scores(read.whole, windows)[0]
    mixed = one.read_scores(read, windows)[0]
    first = int(np.argmax(with_prior(whole, one.prior)))
    rest = [i for i in range(len(PASSAGES)) if i != first]
    assert np.allclose(mixed[rest], whole[rest])
    # one candidate centred on itself keeps its score
    assert np.isclose(mixed[first], whole[first], atol=1e-4)
    # the weight setting overrides the file's; 0 reads the whole post only
    off = TrainedScorer(tmp_path / MODEL_FILE.name, RuntimeOptions(threads=1, asked_weight=0.0))
    assert "+asked" not in off.identity


def test_the_asked_weight_is_range_checked() -> None:
    with pytest.raises(ValueError, match="asked_weight"):
        TrainedScorer(MODEL_FILE, RuntimeOptions(threads=1, asked_weight=1.5))


def _negated_encoder(path: Path) -> None:
    """A stand-in question tower: the frozen encoder half with its states negated (a graph that reads the
    question differently from the windows' encoder, as a tuned tower does)."""
    import onnx
    from onnx import helper

    from services.rerank.scorer import ENCODER_HALF, halves

    (encoder,) = halves(MODEL_FILE, ENCODER_HALF)
    for node in encoder.graph.node:
        node.output[:] = ["raw_states" if o == "last_hidden_state" else o for o in node.output]
    encoder.graph.node.append(helper.make_node("Neg", ["raw_states"], ["last_hidden_state"]))
    onnx.save(encoder, str(path))


def test_a_question_tower_reads_the_question_and_the_frozen_encoder_the_windows(tmp_path: Path) -> None:
    (tmp_path / MODEL_FILE.name).symlink_to(MODEL_FILE)
    cfg = json.loads((MODEL_FILE.parent / "reranker.json").read_text())
    _negated_encoder(tmp_path / "question-int8.onnx")
    (tmp_path / "reranker.json").write_text(json.dumps({**cfg, "question_encoder": "question-int8.onnx"}))
    plain = TrainedScorer(MODEL_FILE, RuntimeOptions(threads=1))
    tower = TrainedScorer(tmp_path / MODEL_FILE.name, RuntimeOptions(threads=1))
    assert "+question@" in tower.identity and "+question@" not in plain.identity
    question = "Can the robber go back onto the desert?"
    assert np.allclose(tower.question_states(question), -plain.question_states(question), atol=1e-5)
    # the windows still read through the frozen encoder half: the shelf's stored states stay valid
    assert tower.states_key == plain.states_key
    for a, b in zip(tower.window_states(PASSAGES), plain.window_states(PASSAGES), strict=True):
        assert np.allclose(a, b)
    assert not np.allclose(tower.score(question, PASSAGES), plain.score(question, PASSAGES))
    # a config naming a tower that is not there fails at start, never serves the frozen question instead
    (tmp_path / "question-int8.onnx").unlink()
    with pytest.raises(FileNotFoundError, match="question tower"):
        TrainedScorer(tmp_path / MODEL_FILE.name, RuntimeOptions(threads=1))
