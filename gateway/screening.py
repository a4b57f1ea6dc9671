"""The doorman off the road: after a ruling is stored the gateway asks the doorman in the background (the
player never waits). CLEAR -> 'cleared'; HOLD or any failure -> 'held' with the reason. A sweeper re-screens
rulings left 'pending' (stored by the CLI, or by a gateway that restarted before its screening finished)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import grpc

from rulesage import rulings
from rulesage.runner import GRPC_OPTIONS
from rulesage.v1 import doorman_pb2, doorman_pb2_grpc

log = logging.getLogger(__name__)


def _info(t0: float, holder: str, checks: list[str] | None = None) -> dict[str, Any]:
    return {"holder": holder, "checks": checks or [], "ms": round((time.perf_counter() - t0) * 1000.0, 1)}


class Screening:
    def __init__(
        self,
        pool: Any,
        doorman_address: str,
        timeout_s: float = 20.0,
        sweep_interval_s: float = 30.0,
        sweep_grace_s: float = 30.0,
    ) -> None:
        self.pool = pool
        self.address = doorman_address
        self.timeout_s = timeout_s
        self.sweep_interval_s = sweep_interval_s
        self.sweep_grace_s = sweep_grace_s
        self._channel: grpc.aio.Channel | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sweeper: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._channel = grpc.aio.insecure_channel(self.address, options=GRPC_OPTIONS)
        if self.sweep_interval_s > 0:
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="doorman-sweeper")

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._channel is not None:
            await self._channel.close()

    def schedule(self, rid: str, question: str) -> None:
        """Screen in the background; the caller never waits. A lost task is picked up by the sweeper."""
        task = asyncio.create_task(self.screen(rid, question), name=f"screen-{rid}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def idle(self) -> None:
        """Wait for background screenings in flight (tests, graceful shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def ask_doorman(self, question: str) -> tuple[bool, str]:
        """(cleared, reason). Fails one way: any error or timeout is a hold with its reason."""
        cleared, reason, _ = await self.consult(question)
        return cleared, reason

    async def consult(self, question: str) -> tuple[bool, str, dict[str, Any]]:
        """(cleared, reason, the doorman's info for the wrench: holder, checks, ms)."""
        t0 = time.perf_counter()
        try:
            if self._channel is None:
                raise RuntimeError("screening not started")
            stub = doorman_pb2_grpc.DoormanStub(self._channel)
            result = await stub.Screen(doorman_pb2.ScreenRequest(text=question), timeout=self.timeout_s)
        except grpc.aio.AioRpcError as exc:
            return False, f"doorman unavailable ({exc.code().name})", _info(t0, "unreachable")
        except Exception as exc:
            log.warning("doorman call failed: %s", exc)
            return False, f"doorman unavailable ({type(exc).__name__})", _info(t0, "unreachable")
        info = _info(t0, result.holder or "unnamed", list(result.checks))
        if result.decision == doorman_pb2.CLEAR:
            return True, result.reason or "clean", info
        return False, result.reason or "held by the doorman", info

    async def screen(self, rid: str, question: str) -> tuple[bool, str]:
        cleared, reason, info = await self.consult(question)
        try:
            async with self.pool.connection() as conn:
                await rulings.record_screening(conn, rid, cleared, reason, info)
        except Exception as exc:  # stays pending; the sweeper will try again
            log.warning("could not record the doorman's decision on %s: %s", rid, exc)
        return cleared, reason

    async def sweep_once(self, grace_s: float | None = None) -> int:
        """Screen every ruling still pending after the grace period; returns how many were screened."""
        grace = self.sweep_grace_s if grace_s is None else grace_s
        async with self.pool.connection() as conn:
            waiting = await rulings.pending(conn, older_than_s=grace)
        for rid, question in waiting:
            await self.screen(rid, question)
        return len(waiting)

    async def _sweep_forever(self) -> None:
        while True:
            try:
                n = await self.sweep_once()
                if n:
                    log.info("doorman sweeper screened %d pending ruling(s)", n)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("doorman sweep failed: %s", exc)
            await asyncio.sleep(self.sweep_interval_s)
