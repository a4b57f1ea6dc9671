"""The doorman sits its exam: the real screening (the Screener the service builds from its settings,
in-process) over the exam's rows, and the fault drills of gate 5 (the classifier crashing, the screen model
crashing, the judge refusing connections, hanging past its timeout, answering HTTP 500, answering nonsense),
each of which must hold every question the screening cleared. rulesage/eval/doorman.py loads the frozen exam
and scores what was decided; ``holder`` and ``fingerprint`` name the doorman the exam (and every answer's
wrench) describes.

The judge model is off unless RULESAGE_DOORMAN_JUDGE_URL / _MODEL configure it, as in the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from services.doorman.judge import Judge
from services.doorman.learned import ScreenModel
from services.doorman.rules import RULES_VERSION
from services.doorman.screen import Screener

FAULTS = (
    "classifier crash",
    "screen-model crash",
    "judge down",
    "judge timeout",
    "judge HTTP 500",
    "judge nonsense",
)
# The code whose behaviour the exam measures: a report names the hash of these files (and of the model file).
SOURCES = ("rules.py", "lexicon.py", "normalise.py", "screen.py", "classifier.py", "learned.py", "judge.py")


class Sitting(Protocol):
    """A row of the exam as the doorman sees it."""

    id: str
    text: str


def fingerprint(screener: Screener) -> str:
    """Hash of the doorman's code, the classifier's version and the settings that change a decision."""
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in SOURCES:
        h.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
    h.update(f"{_classifier_version()}|{screener.profanity_threshold}|{screener.max_chars}".encode())
    h.update(f"|{screener.judge.model if screener.judge else ''}".encode())
    model = screener.screen_model
    h.update(f"|{model.identity}|{model.threshold}".encode() if model is not None else b"|screen-model off")
    if isinstance(model, ScreenModel):
        h.update(model.sha256.encode())
    return h.hexdigest()[:16]


def _classifier_version() -> str:
    try:
        return metadata.version("alt-profanity-check")
    except metadata.PackageNotFoundError:
        return "unknown"


def holder(screener: Screener) -> dict[str, str]:
    """Who holds the doorman's role: the rules, the classifier with its threshold, and the judge if any."""
    judge = screener.judge.model if screener.judge else ""
    model = screener.screen_model
    screen = f"screen-model {model.identity} (holds at >= {model.threshold:.2f})" if model is not None else ""
    name = (
        f"rules v{RULES_VERSION} + alt-profanity-check {_classifier_version()} "
        f"(holds at >= {screener.profanity_threshold:g})"
        + (f" + {screen}" if screen else "")
        + (f" + judge {judge}" if judge else "")
    )
    return {
        "name": name,
        "rules": f"v{RULES_VERSION}",
        "classifier": f"alt-profanity-check {_classifier_version()}",
        "threshold": f"{screener.profanity_threshold:g}",
        "screen_model": screen or "off",
        "judge": judge or "off",
        "fingerprint": fingerprint(screener),
    }


async def _decide(screener: Screener, rows: Sequence[Sitting], limit: int = 8) -> list[tuple[bool, str]]:
    sem = asyncio.Semaphore(limit)

    async def one(row: Sitting) -> tuple[bool, str]:
        async with sem:
            verdict, _ = await screener.screen(row.text)
            return verdict.cleared, verdict.reason

    return list(await asyncio.gather(*(one(r) for r in rows)))


# Fault drills (gate 5) ---------------------------------------------------------------------------------


class _FaultyJudge(BaseHTTPRequestHandler):
    mode = "500"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.server.mode == "500":  # type: ignore[attr-defined]
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = json.dumps({"choices": [{"message": {"content": "Sure! Happy to help with that."}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _http_judge(mode: str) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FaultyJudge)
    server.mode = mode  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.asynccontextmanager
async def _hanging_judge() -> AsyncIterator[str]:
    """Accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        with contextlib.suppress(Exception):
            await reader.read()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for w in held:
            w.close()
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _crash(_: str) -> float:
    raise RuntimeError("classifier crashed (drill)")


@dataclass
class _CrashingModel:
    """A screen model that raises on every question (the drill for the learned stage)."""

    threshold: float = 0.5
    identity: str = "drill"

    def score(self, _: str) -> tuple[float, str]:
        raise RuntimeError("screen model crashed (drill)")


async def fault_drills(
    base: Screener, rows: Sequence[Sitting], timeout_s: float = 0.5
) -> dict[str, dict[str, Any]]:
    """Screen ``rows`` under each fault; every one must be held. {fault: {rows, held, cleared_ids}}."""

    def faulty(
        classifier: Callable[[str], float] | None = None, judge_url: str = "", model: Any = None
    ) -> Screener:
        # the same screening (its class and settings), with one part broken
        judge = Judge(judge_url, "drill-judge", timeout_s=timeout_s) if judge_url else None
        return dataclasses.replace(
            base,
            classifier=classifier or base.classifier,
            screen_model=model or base.screen_model,
            judge=judge,
            timeout_s=timeout_s * 3,
        )

    async def drill(screener: Screener) -> dict[str, Any]:
        try:
            decided = await _decide(screener, rows, limit=32)
        finally:
            if screener.judge is not None:
                await screener.judge.stop()
        cleared = [r.id for r, (c, _) in zip(rows, decided, strict=True) if c]
        return {"rows": len(rows), "held": len(rows) - len(cleared), "cleared_ids": cleared}

    out: dict[str, dict[str, Any]] = {}
    screen_log = logging.getLogger("services.doorman.screen")
    level = screen_log.level
    screen_log.setLevel(logging.ERROR)  # each drilled failure would log a warning with its traceback
    try:
        out["classifier crash"] = await drill(faulty(classifier=_crash))
        out["screen-model crash"] = await drill(faulty(model=_CrashingModel()))
        out["judge down"] = await drill(faulty(judge_url=_closed_port()))
        async with _hanging_judge() as url:
            out["judge timeout"] = await drill(faulty(judge_url=url))
        for name, mode in (("judge HTTP 500", "500"), ("judge nonsense", "nonsense")):
            with _http_judge(mode) as url:
                out[name] = await drill(faulty(judge_url=url))
    finally:
        screen_log.setLevel(level)
    return out


# The sitting -------------------------------------------------------------------------------------------


async def sit_async(
    screener: Screener, rows: Sequence[Sitting]
) -> tuple[list[tuple[bool, str]], dict[str, dict[str, Any]]]:
    """(cleared, reason) for each row, then the fault drills over the rows the screening cleared."""
    decided = await _decide(screener, rows)
    cleared = [r for r, (c, _) in zip(rows, decided, strict=True) if c]
    return decided, await fault_drills(screener, cleared)
