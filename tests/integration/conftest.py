"""Integration fixtures: a real Postgres (the embedded server; a throwaway database per session) holding a
small real shelf, and real gRPC services started in-process on free localhost ports."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rulesage import runner
from tests.support.throwaway_db import throwaway_database as fresh_database

ROOT = Path(__file__).resolve().parents[2]
MINI_SHELF = ROOT / "tests" / "fixtures" / "mini-shelf.toml"


@pytest.fixture(scope="session")
def shelf_url() -> Iterator[str]:
    """A database with the mini shelf ingested (real extraction, chunking and embedding)."""
    from rulesage.ingest.pipeline import ingest_shelf

    with fresh_database("rs_shelf_") as url:
        summary = ingest_shelf(url, MINI_SHELF, progress=False)
        assert not summary.failed, summary.failed
        yield url


class LoopThread:
    """An asyncio loop on its own thread, hosting in-process gRPC servers for synchronous tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 120) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@contextmanager
def env(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Mesh:
    """Services started in-process; ``addr[name]`` is where each listens."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lt = LoopThread()
        self.running: dict[str, runner.Running] = {}
        self.addr: dict[str, str] = {}

    def start(self, name: str, factory: Callable[[], Any], **overrides: str) -> str:
        async def go() -> runner.Running:
            return await runner.start(factory(), "127.0.0.1", 0)

        with env(DATABASE_URL=self.url, **{**self.env(), **overrides}):
            running = self.lt.run(go())
        self.running[name] = running
        self.addr[name] = f"127.0.0.1:{running.port}"
        return self.addr[name]

    def stop(self, name: str) -> None:
        running = self.running.pop(name)
        self.addr.pop(name, None)
        self.lt.run(running.shutdown(0.5))

    def env(self) -> dict[str, str]:
        return {f"RULESAGE_{n.upper()}_ADDR": a for n, a in self.addr.items()}

    def close(self) -> None:
        for name in list(self.running):
            self.stop(name)
        self.lt.close()


@pytest.fixture(scope="session")
def search_mesh(shelf_url: str) -> Iterator[Mesh]:
    """lexical, dense, aisle, category and fusion over the mini shelf."""
    from services.aisle.server import AisleService
    from services.category.server import CategoryService
    from services.dense.server import DenseService
    from services.fusion.server import FusionService
    from services.lexical.server import LexicalService

    mesh = Mesh(shelf_url)
    try:
        mesh.start("lexical", LexicalService)
        mesh.start("dense", DenseService)
        mesh.start("aisle", AisleService)
        mesh.start("category", CategoryService)
        mesh.start("fusion", FusionService)
        yield mesh
    finally:
        mesh.close()
