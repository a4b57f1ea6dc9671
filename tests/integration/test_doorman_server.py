"""The Doorman over real gRPC on a free port, with the embedded classifier and, for the judge, a small local
OpenAI-compatible server; plus the `python -m services.doorman` entry point as a real process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rulesage import runner
from rulesage.v1 import doorman_pb2, doorman_pb2_grpc
from services.doorman.server import DoormanService, DoormanSettings

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


class _JudgeHandler(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions: HOLD when the question mentions 'secret handshake', else CLEAR."""

    seen: list[dict] = []  # noqa: RUF012 - shared by the test

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "body": body})
        question = body["messages"][-1]["content"]
        content = "HOLD: coded language" if "secret handshake" in question else "CLEAR"
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JudgeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


async def _screen(settings: DoormanSettings, texts: list[str]) -> list[doorman_pb2.ScreenResult]:
    running = await runner.start(DoormanService(settings), "127.0.0.1", 0)
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            health = await health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service="rulesage.v1.Doorman"), timeout=5
            )
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            stub = doorman_pb2_grpc.DoormanStub(channel)
            return [await stub.Screen(doorman_pb2.ScreenRequest(text=t), timeout=20) for t in texts]
    finally:
        await running.shutdown(0.5)


def test_screen_over_grpc_with_the_embedded_classifier() -> None:
    clean, rude, email = asyncio.run(
        _screen(
            DoormanSettings(),
            ["Can the robber go back to the desert?", "fuck this stupid rule", "mail me: bob@example.com"],
        )
    )
    assert clean.decision == doorman_pb2.CLEAR and clean.reason == "clean"
    assert list(clean.checks) == ["rules", "profanity-check", "screen-model"]
    stages = {t.stage for t in clean.timings}
    assert {"doorman.rules", "doorman.profanity", "doorman.screen_model", "doorman.screen"} <= stages
    assert rude.decision == doorman_pb2.HOLD and rude.reason.startswith("profanity")
    assert email.decision == doorman_pb2.HOLD and email.reason == "contains an email address"


def test_the_judge_can_only_hold_more(judge_url: str) -> None:
    _JudgeHandler.seen.clear()
    settings = DoormanSettings(
        rulesage_doorman_judge_url=judge_url, rulesage_doorman_judge_model="tiny-judge"
    )
    clean, coded, link = asyncio.run(
        _screen(
            settings,
            [
                "Can the robber go back to the desert?",
                "Do we do the secret handshake before the first turn?",
                "rules at http://example.org",
            ],
        )
    )
    assert clean.decision == doorman_pb2.CLEAR and "judge:tiny-judge" in clean.checks
    assert coded.decision == doorman_pb2.HOLD and coded.reason == "judge: coded language"
    assert link.decision == doorman_pb2.HOLD and link.reason == "contains a link"
    # The judge is asked only about what the rules cleared.
    assert [s["path"] for s in _JudgeHandler.seen] == ["/v1/chat/completions"] * 2
    assert _JudgeHandler.seen[0]["body"]["model"] == "tiny-judge"


def test_an_unreachable_judge_holds() -> None:
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    settings = DoormanSettings(
        rulesage_doorman_judge_url=f"http://127.0.0.1:{dead_port}/v1",
        rulesage_doorman_judge_model="gone",
        rulesage_doorman_judge_timeout_s=2,
    )
    (result,) = asyncio.run(_screen(settings, ["Can the robber go back to the desert?"]))
    assert result.decision == doorman_pb2.HOLD
    assert "doorman error" in result.reason


def test_python_dash_m_entry_point_serves_and_stops(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    env = {
        **os.environ,
        "RULESAGE_PORT": "0",
        "RULESAGE_PORT_FILE": str(port_file),
        "RULESAGE_STATE_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    proc = subprocess.Popen([sys.executable, "-m", "services.doorman"], cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, "doorman exited early"
            assert time.monotonic() < deadline, "doorman did not start"
            time.sleep(0.1)
        port = int(port_file.read_text())

        async def call() -> doorman_pb2.ScreenResult:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = doorman_pb2_grpc.DoormanStub(channel)
                return await stub.Screen(doorman_pb2.ScreenRequest(text="WIN WIN WIN FREE GOLD"), timeout=10)

        result = asyncio.run(call())
        assert result.decision == doorman_pb2.HOLD
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0


def test_judge_url_without_model_is_a_startup_error() -> None:
    env = {**os.environ, "RULESAGE_DOORMAN_JUDGE_URL": "http://127.0.0.1:1/v1", "PYTHONPATH": str(ROOT)}
    env.pop("RULESAGE_DOORMAN_JUDGE_MODEL", None)
    out = subprocess.run(
        [sys.executable, "-m", "services.doorman"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "RULESAGE_DOORMAN_JUDGE_MODEL" in out.stderr
