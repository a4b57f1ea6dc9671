"""Two heads served as one graph: the blend's score is the weighted mean of the heads' plus the shift, its
encoder is theirs (so stored states carry over), and heads over different encoders are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from services.rerank.scorer import MODEL_FILE, RuntimeOptions, TrainedScorer, states_key
from training.reranker.blend import Pool, blend_graph, measure

pytestmark = pytest.mark.skipif(not MODEL_FILE.exists(), reason="no trained reranker shipped")


def changed(tmp_path: Path, name: str, part: str) -> Path:
    """The shipped file with every float weight of its head (or its encoder) scaled: another model."""
    model = onnx.load(str(MODEL_FILE))
    for init in model.graph.initializer:
        if init.name.startswith("head/") == (part == "head") and init.data_type == onnx.TensorProto.FLOAT:
            a = numpy_helper.to_array(init)
            if a.size > 1:
                init.CopyFrom(numpy_helper.from_array((a * 1.5).astype(a.dtype), init.name))
                if part == "encoder":
                    break
    path = tmp_path / name / MODEL_FILE.name
    path.parent.mkdir()
    onnx.save(model, str(path))
    return path


def test_the_blend_scores_the_weighted_mean_of_its_heads_plus_the_shift(tmp_path: Path) -> None:
    other = changed(tmp_path, "other", "head")
    out = tmp_path / "blend" / MODEL_FILE.name
    out.parent.mkdir()
    onnx.save(blend_graph(MODEL_FILE, other, 0.25, 3.0), str(out))
    opts = RuntimeOptions(threads=1)
    a, b, blend = (TrainedScorer(p, opts) for p in (MODEL_FILE, other, out))
    question = "can I move the robber back onto the desert?"
    texts = ["The robber starts on the desert.", "Move the robber to any other hex.", "Roll two dice."]
    sa, ca = a.score_and_cosine(question, texts)
    sb, _ = b.score_and_cosine(question, texts)
    sm, cm = blend.score_and_cosine(question, texts)
    assert not np.allclose(sa, sb)
    assert np.allclose(sm, 0.25 * sa + 0.75 * sb + 3.0, atol=1e-4)
    assert np.allclose(cm, ca)
    # one encoder: the states drawn for either head are the blend's
    assert blend.states_key == a.states_key == states_key(other, a.tokens.max_tokens)


def test_heads_over_different_encoders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="different encoders"):
        blend_graph(MODEL_FILE, changed(tmp_path, "enc", "encoder"), 0.5, 0.0)


def test_the_held_out_measure_reads_the_served_order() -> None:
    def pool(public: bool, ids: list[int], supporters: set[int]) -> Pool:
        return Pool(public, ids, supporters, np.zeros((1, 384)), [])

    pools = [pool(False, list(range(20)), {12}), pool(True, list(range(20)), {0})]
    # pool 1's holder is 13th fused and scored 0.5 above the rest: served, 0.5 - 2 ln 13 = -4.63 falls
    # under the 10th fused candidate's -2 ln 10 = -4.61, so it is neither kept nor in the first ten
    scores = [np.where(np.arange(20) == 12, 0.5, 0.0), np.zeros(20)]
    m = measure(pools, scores, prior=2.0)
    assert (m["recall@8"], m["mrr@10"], m["real_recall@8"], m["real_mrr@10"]) == (0.5, 0.5, 1.0, 1.0)
    assert measure(pools, scores, prior=0.0)["recall@8"] == 1.0
    assert (m["questions"], m["real_posts"]) == (2, 1)


def test_a_bare_pool_keeps_what_the_measures_read_and_drops_the_states() -> None:
    from training.reranker.asked import figures
    from training.reranker.blend import Pool

    states = np.ones((12, 384), dtype=np.float32)
    situated = Pool(True, [1, 2], {2}, states, [states, states], asked=states)
    plain = Pool(False, [3, 4], {3}, states, [states, states])
    bare = [situated.bare(), plain.bare()]
    assert [(p.public, p.ids, p.supporters) for p in bare] == [(True, [1, 2], {2}), (False, [3, 4], {3})]
    assert all(p.windows == [] and p.question.size == 0 for p in bare)
    assert bare[0].asked is not None and bare[0].asked.size == 0 and bare[1].asked is None
    scores = [np.array([0.0, 1.0]), np.array([1.0, 0.0])]
    assert figures(bare, scores, 0.0) == figures([situated, plain], scores, 0.0)
