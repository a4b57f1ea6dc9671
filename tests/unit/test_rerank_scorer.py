"""The scorer's token handling and batching, and both scorers on real models (no mocks)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.rerank.choice import load_scorer
from services.rerank.scorer import (
    CLS,
    SEP,
    CosineScorer,
    RuntimeOptions,
    Tokens,
    TrainedScorer,
    head_tail,
    length_batches,
    pad,
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
