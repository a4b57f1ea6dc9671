"""Exact nearest neighbours by cosine, as the ingest draws each ruling's nearest passages."""

from __future__ import annotations

import numpy as np
import pytest

from rulesage.core.nearest import nearest_ids


def test_nearest_by_cosine_best_first_whatever_the_lengths() -> None:
    vectors = np.array([[1.0, 0.0], [0.0, 5.0], [3.0, 3.0], [-1.0, 0.0]], dtype=np.float32)
    ids = np.array([10, 20, 30, 40])
    queries = np.array([[2.0, 0.1], [0.0, 0.5]], dtype=np.float32)  # lengths do not count, directions do
    got = nearest_ids(queries, vectors, ids, depth=3)
    assert got.tolist() == [[10, 30, 20], [20, 30, 10]]


def test_ties_go_to_the_smaller_id_and_depth_is_capped_by_the_passages() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    ids = np.array([3, 7, 9])
    got = nearest_ids(np.array([[1.0, 0.0]], dtype=np.float32), vectors, ids, depth=10)
    assert got.tolist() == [[3, 7, 9]]


def test_chunks_give_what_one_pass_gives() -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(50, 8)).astype(np.float32)
    queries = rng.normal(size=(33, 8)).astype(np.float32)
    ids = np.arange(100, 150)
    one = nearest_ids(queries, vectors, ids, depth=5)
    assert (nearest_ids(queries, vectors, ids, depth=5, chunk=4) == one).all()
    sims = (queries / np.linalg.norm(queries, axis=1, keepdims=True)) @ (
        vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    ).T
    assert (one[:, 0] == ids[sims.argmax(axis=1)]).all()


def test_nothing_to_search_and_bad_shapes() -> None:
    empty = nearest_ids(np.zeros((2, 3), np.float32), np.zeros((0, 3), np.float32), np.array([], np.int64), 4)
    assert empty.shape == (2, 0)
    with pytest.raises(ValueError, match="ascending"):
        nearest_ids(np.ones((1, 2), np.float32), np.ones((2, 2), np.float32), np.array([5, 1]), 1)
    with pytest.raises(ValueError, match="one per vector"):
        nearest_ids(np.ones((1, 2), np.float32), np.ones((2, 2), np.float32), np.array([1]), 1)
