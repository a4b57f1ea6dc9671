"""The asking sentences' share: the centred mix and the held-out choice of weight and depth."""

from __future__ import annotations

import numpy as np

from services.rerank.scorer import mix_asked
from training.reranker.asked import choose, figures
from training.reranker.blend import Pool


def test_the_mix_moves_candidates_within_the_group_only() -> None:
    whole = np.array([5.0, 4.0, 3.0, 1.0], dtype=np.float32)
    top = np.array([0, 1, 2])
    asked = np.array([0.0, 2.0, 1.0], dtype=np.float32)  # lower on the whole, and reversing the first two
    mixed = mix_asked(whole, top, asked, 0.5)
    assert mixed[3] == whole[3]  # outside the group: untouched
    assert np.isclose(mixed[top].mean(), whole[top].mean())  # the group keeps its level against the rest
    assert mixed[1] > mixed[0]  # and is reordered within
    assert np.allclose(mix_asked(whole, top, asked, 0.0), whole)
    assert np.allclose(mix_asked(whole, np.array([], dtype=int), asked[:0], 0.5), whole)


def pool(supporter: int, public: bool = False, situated: bool = True) -> Pool:
    state = np.zeros((3, 4), np.float32)
    return Pool(public, [10, 11, 12], {supporter}, state, [state] * 3, state if situated else None)


def test_figures_split_real_and_situated_posts() -> None:
    pools = [pool(10), pool(11, public=True), pool(12, situated=False)]
    scores = [np.array([3.0, 2.0, 1.0])] * 3  # served order 10, 11, 12 (no prior)
    f = figures(pools, scores, 0.0)
    assert (f["n"], f["real_n"], f["situated_n"]) == (3, 1, 2)
    assert f["recall@8"] == 1.0
    assert f["mrr@10"] == round((1 + 1 / 2 + 1 / 3) / 3, 4)
    assert f["real_mrr@10"] == 0.5 and f["situated_mrr@10"] == 0.75


def grid_row(r8: float, mrr: float) -> dict[str, float]:
    return {"recall@8": r8, "mrr@10": mrr}


def test_the_choice_is_the_shallowest_depth_near_the_best() -> None:
    whole = grid_row(0.92, 0.748)
    grid = {
        (0.5, 4): grid_row(0.91, 0.7545),  # near the best but loses recall: not chosen
        (0.5, 8): grid_row(0.92, 0.7535),  # within the tolerance of the best, the shallowest: chosen
        (0.25, 8): grid_row(0.92, 0.7520),
        (0.5, 24): grid_row(0.926, 0.7540),
    }
    assert choose(grid, whole) == (0.5, 8)
    # nothing orders better than the whole post: read it alone
    assert choose({(0.5, 8): grid_row(0.93, 0.740)}, whole) == (0.0, 0)
