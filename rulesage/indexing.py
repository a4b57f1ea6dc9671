"""Index-time work after an ingest: what the request path reads instead of computing per request.

- the reranker's window states (services/rerank/states.py): a rerank encodes only the question;
- the extractive answer's sentence vectors (services/answer/sentence_index.py): an answer embeds only the
  question.

`rulesage ingest`, `rulesage up` and `rulesage eval` call ``draw_all`` after the shelf. The drawers are the
services' own, named by their registry entries (``Svc.index_drawers`` in rulesage.mesh) and imported by
name, so this module imports no service; each finds the live passages whose rows are missing or were drawn
by another model, and draws only those.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any


def text_sha(text: str) -> str:
    """What an index-time row is stamped with: the sha256 of the passage text it was drawn from."""
    return hashlib.sha256(text.encode()).hexdigest()


def in_batches(
    conn: Any,
    todo: Sequence[Any],
    write: Callable[[Any, Sequence[Any]], None],
    batch: int,
    desc: str,
    progress: bool,
) -> int:
    """Hand ``todo`` to ``write(conn, chunk)`` a chunk at a time, each in its own transaction (an interrupted
    run keeps what it drew), with a progress bar when asked; returns how many rows were handled."""
    bar = None
    if progress and todo:
        from tqdm import tqdm

        bar = tqdm(total=len(todo), unit="passage", desc=desc)
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        with conn.transaction():
            write(conn, chunk)
        if bar is not None:
            bar.update(len(chunk))
    if bar is not None:
        bar.close()
    return len(todo)


def draw_all(url: str, progress: bool = False, seconds: dict[str, float] | None = None) -> dict[str, int]:
    """Every registered index-time drawer over the database at ``url``; how many passages each drew (and, into
    ``seconds`` when given, how long each took)."""
    import time

    from rulesage import mesh

    drawn: dict[str, int] = {}
    for svc in mesh.MESH.values():
        for d in svc.index_drawers:
            t0 = time.perf_counter()
            drawn[d.key] = d.load()(url, progress=progress)
            if seconds is not None:
                seconds[d.key] = round(time.perf_counter() - t0, 1)
    return drawn
