"""Stored window states: the int8 packing, the staleness checks, and scoring from states (real model)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from services.rerank import codec, states
from services.rerank.choice import load_scorer
from services.rerank.scorer import RuntimeOptions, TrainedScorer


@settings(max_examples=50, deadline=None)
@given(
    arrays(
        np.float32,
        st.tuples(st.integers(1, 40), st.just(384)),
        elements=st.floats(-12, 12, width=32),
    )
)
def test_pack_round_trips_within_a_quantisation_step(h: np.ndarray) -> None:
    back = codec.unpack(codec.pack(h))
    assert back.shape == h.shape and back.dtype == np.float32
    step = np.abs(h).max(axis=1, keepdims=True) / 127.0
    assert (np.abs(back - h) <= step * 0.5001 + 1e-12).all()


def test_pack_is_small_and_refuses_a_wrong_shape() -> None:
    h = np.random.default_rng(0).normal(size=(256, 384)).astype(np.float32)
    assert len(codec.pack(h)) == 4 + 4 * 256 + 256 * 384  # ~1 byte per value
    assert codec.unpack(codec.pack(np.zeros((3, 384), np.float32))).tolist() == np.zeros((3, 384)).tolist()
    with pytest.raises(ValueError):
        codec.pack(np.zeros(384, np.float32))


def test_a_stale_row_is_a_miss_never_a_wrong_state() -> None:
    h = np.ones((5, 384), np.float32)
    row = states.Stored("model-a", states.text_sha("the text"), codec.pack(h))
    assert states.usable(row, "model-a", "the text") is not None
    assert states.usable(row, "model-b", "the text") is None  # drawn by another model
    assert states.usable(row, "model-a", "the text, amended") is None  # the passage changed
    assert states.usable(None, "model-a", "the text") is None


PASSAGES = [
    "The robber may be moved to any terrain hex, including the desert.",
    "Longest Road: the first player to build a continuous road of five segments takes this card.",
    "Shuffle the development cards and place them face down. " * 30,  # longer than the window
]


def test_scoring_from_stored_states_matches_scoring_from_text() -> None:
    scorer = load_scorer(RuntimeOptions(threads=1), "head")
    assert isinstance(scorer, TrainedScorer)
    q = "can I move the robber back onto the desert?"
    fresh, cosine = scorer.score_and_cosine(q, PASSAGES)
    stored = [codec.unpack(codec.pack(s)) for s in scorer.window_states(PASSAGES)]
    assert [len(s) for s in stored] == [len(r) for r in scorer.tokens.windows(PASSAGES)]
    from_states, cos2 = scorer.score_and_cosine(q, PASSAGES, stored)
    # a window just drawn is read as it will be stored: its first ask scores what every later one does
    assert np.array_equal(fresh, from_states) and np.array_equal(cosine, cos2)
    # some stored, some not: the missing one is encoded on the spot, to the same score
    mixed, _ = scorer.score_and_cosine(q, PASSAGES, [stored[0], None, stored[2]])
    assert np.array_equal(mixed, from_states)
    # and int8 storage moves a score (20 x cosine + correction) by a few hundredths of the unstored one
    raw = scorer.head_scores(scorer.question_states(q), scorer.window_states(PASSAGES))[0]
    assert np.allclose(raw, from_states, atol=0.15) and list(np.argsort(-raw)) == list(np.argsort(-fresh))


def _perturbed(tmp_path, part: str):  # type: ignore[no-untyped-def]
    """The shipped model file with one initializer of its encoder or of its head changed."""
    import onnx
    from onnx import numpy_helper

    from services.rerank.scorer import MODEL_FILE

    model = onnx.load(str(MODEL_FILE))
    for init in model.graph.initializer:
        if init.name.startswith("head/") == (part == "head") and init.data_type == onnx.TensorProto.FLOAT:
            a = numpy_helper.to_array(init).copy()
            if a.size > 1:
                a.flat[0] += 1.0
                init.CopyFrom(numpy_helper.from_array(a, init.name))
                break
    path = tmp_path / part / MODEL_FILE.name
    path.parent.mkdir()
    onnx.save(model, str(path))
    return path


def test_stored_states_are_keyed_by_the_encoder_half_not_the_head(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from services.rerank.scorer import MODEL_FILE, sha256_file, states_key

    head, encoder = _perturbed(tmp_path, "head"), _perturbed(tmp_path, "encoder")
    assert len({sha256_file(p) for p in (MODEL_FILE, head, encoder)}) == 3
    # a retrained head over the same frozen encoder reads the states already drawn; a new encoder does not
    assert states_key(head, 256) == states_key(MODEL_FILE, 256)
    assert states_key(encoder, 256) != states_key(MODEL_FILE, 256)
    assert states_key(MODEL_FILE, 128) != states_key(MODEL_FILE, 256)
    scorer = TrainedScorer(head, RuntimeOptions(threads=1))
    assert scorer.states_key == states_key(MODEL_FILE, scorer.tokens.max_tokens)
