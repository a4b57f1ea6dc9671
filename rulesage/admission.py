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
    async def slot(self) -> AsyncIterator[None]:
        if self._sem.locked() and self.waiting >= self.max_queue:
            raise Saturated(f"{self.waiting} requests already waiting")
        self.waiting += 1
        try:
            await self._sem.acquire()
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self._sem.release()
