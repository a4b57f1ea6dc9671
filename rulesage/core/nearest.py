"""Exact nearest neighbours by cosine (pure): the ranking pgvector's ``<=>`` gives unit vectors, ties to
the smaller id, as ``rulesage.store.vectors`` orders its own scans."""

from __future__ import annotations

import numpy as np


def nearest_ids(
    queries: np.ndarray, vectors: np.ndarray, ids: np.ndarray, depth: int, chunk: int = 4096
) -> np.ndarray:
    """For each row of ``queries``, the ``depth`` ids of ``vectors`` (rows of ``ids``, ascending) nearest it
    by cosine, best first: an array of shape (queries, min(depth, len(ids)))."""
    if queries.ndim != 2 or vectors.ndim != 2 or len(ids) != len(vectors):
        raise ValueError("queries and vectors must be matrices, and ids one per vector")
    if len(ids) > 1 and not bool(np.all(np.diff(ids) > 0)):
        raise ValueError("ids must be ascending")
    k = min(depth, len(ids))
    out = np.zeros((len(queries), k), dtype=np.int64)
    if not k or not len(queries):
        return out
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    for b in range(0, len(queries), chunk):
        q = queries[b : b + chunk]
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-12)
        sims = q @ unit.T
        # a stable sort of the negated similarities keeps the smaller id first among equals
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        out[b : b + len(q)] = ids[order]
    return out
