"""How window states are stored (pure): int8 values with one float32 scale per token (absmax / 127).

The scorer reads a window it has just drawn through the same codec (``pack`` then ``unpack``), so a window
scores the same on its first ask as when its states come back from the database.
"""

from __future__ import annotations

import struct

import numpy as np

_HEADER = struct.Struct("<HH")  # tokens, dim


def pack(states: np.ndarray) -> bytes:
    """(tokens, dim) float32 -> bytes: header, float32 scale per token (absmax / 127), int8 values."""
    if states.ndim != 2:
        raise ValueError(f"states must be (tokens, dim), not {states.shape}")
    tokens, dim = states.shape
    scale = (np.abs(states).max(axis=1) / 127.0).astype(np.float32)
    scale[~(scale > 0)] = 1.0  # an all-zero token stores zeros
    q = np.clip(np.rint(states / scale[:, None]), -127, 127).astype(np.int8)
    return _HEADER.pack(tokens, dim) + scale.tobytes() + q.tobytes()


def unpack(blob: bytes) -> np.ndarray:
    tokens, dim = _HEADER.unpack_from(blob)
    off = _HEADER.size
    scale = np.frombuffer(blob, dtype=np.float32, count=tokens, offset=off)
    off += 4 * tokens
    q = np.frombuffer(blob, dtype=np.int8, count=tokens * dim, offset=off).reshape(tokens, dim)
    return q.astype(np.float32) * scale[:, None]
