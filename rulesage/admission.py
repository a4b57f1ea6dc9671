"""Back-pressure for the CPU/GPU-bound services: bounded concurrency with a bounded queue.

At most ``concurrency`` requests work at once and at most ``max_queue`` wait; past that the service sheds load
(the servicer answers RESOURCE_EXHAUSTED) rather than letting memory grow with a queue nobody bounds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class Saturated(Exception):
    """More requests are waiting than the queue allows."""


class Gate:
    """An asyncio.Semaphore plus a count of waiters."""

    def __init__(self, concurrency: int, max_queue: int) -> None:
        self._sem = asyncio.Semaphore(concurrency)
        self.max_queue = max_queue
        self.waiting = 0

    @contextlib.asynccontextmanager
    async def slot(self, wait_s: float | None = None) -> AsyncIterator[None]:
        """A turn; Saturated when the queue is full, or when no turn came within ``wait_s`` seconds."""
        if self._sem.locked() and self.waiting >= self.max_queue:
            raise Saturated(f"{self.waiting} requests already waiting")
        self.waiting += 1
        try:
            if wait_s is None:
                await self._sem.acquire()
            else:
                try:
                    await asyncio.wait_for(self._sem.acquire(), wait_s)
                except TimeoutError:
                    raise Saturated(f"no turn within {wait_s:g} s") from None
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self._sem.release()
