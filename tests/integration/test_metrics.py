"""Prometheus metrics of real gRPC servers: requests and errors by method and status code (the runner's
interceptor), stage latency histograms and doorman holds, scraped from /metrics of real service processes."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import httpx
import psycopg
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from rulesage import runner
from rulesage.v1 import arm_pb2, arm_pb2_grpc, doorman_pb2, doorman_pb2_grpc
from tests.integration.conftest import fresh_database

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SEARCH = "/rulesage.v1.Arm/Search"
SCREEN = "/rulesage.v1.Doorman/Screen"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Starter = Callable[..., tuple[int, int]]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(port: int) -> Samples:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


@pytest.fixture
def service_process(tmp_path: Path) -> Iterator[Starter]:
    """Starts ``python -m <module>`` with metrics on a free port; returns (gRPC port, metrics port)."""
    procs: list[subprocess.Popen[str]] = []

    def start(module: str, **env: str) -> tuple[int, int]:
        port_file = tmp_path / f"{module}.port"
        metrics = free_port()
        full = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RULESAGE_", "OTEL_"))},
            "RULESAGE_PORT": "0",
            "RULESAGE_PORT_FILE": str(port_file),
            "RULESAGE_METRICS_PORT": str(metrics),
            "RULESAGE_GRACE_S": "1",
            **env,
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", module],
            env=full,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(proc)
        end = time.monotonic() + 120
        while not port_file.exists():
            if proc.poll() is not None:
                raise AssertionError(f"{module} exited early: {proc.stdout.read() if proc.stdout else ''}")
            if time.monotonic() > end:
                raise AssertionError(f"{module} never became SERVING")
            time.sleep(0.2)
        return int(port_file.read_text()), metrics

    yield start
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def check_health(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5).status
    assert status == health_pb2.HealthCheckResponse.SERVING


def test_doorman_process_counts_requests_and_holds(service_process: Starter) -> None:
    port, metrics = service_process("services.doorman")
    check_health(port)
    before = scrape(metrics)
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = doorman_pb2_grpc.DoormanStub(ch)
        clear = stub.Screen(
            doorman_pb2.ScreenRequest(text="Can I move a card onto an empty pile?"), timeout=30
        )
        held = stub.Screen(doorman_pb2.ScreenRequest(text="this fucking game is shit, you idiot"), timeout=30)
    assert clear.decision == doorman_pb2.CLEAR and held.decision == doorman_pb2.HOLD, held.reason
    check_health(port)
    after = scrape(metrics)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert moved("rulesage_requests_total", service="doorman", method=SCREEN, code="OK") == 2
    assert moved("rulesage_request_seconds_count", service="doorman", method=SCREEN) == 2
    assert moved("rulesage_doorman_holds_total", reason=held.reason.split(" ", 1)[0]) == 1
    # health checks are neither traced nor counted: the probes would bury the questions
    assert not any("Health" in dict(labels).get("method", "") for _, labels in after)


def test_lexical_process_counts_errors_by_code_and_times_stages(service_process: Starter) -> None:
    with fresh_database("rs_metrics_") as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO families (slug) VALUES ('metrics-family')")
            conn.execute(
                "INSERT INTO games (slug, name, family_id) SELECT 'metrics-game', 'Metrics', id FROM families"
            )
        port, metrics = service_process("services.lexical", DATABASE_URL=url)
        before = scrape(metrics)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = arm_pb2_grpc.ArmStub(ch)
            for _ in range(2):
                stub.Search(arm_pb2.ArmRequest(question="how do I win?", game="metrics-game"), timeout=30)
            with pytest.raises(grpc.RpcError) as bad:
                stub.Search(arm_pb2.ArmRequest(question="how do I win?", game="no-such-game"), timeout=30)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        after = scrape(metrics)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert moved("rulesage_requests_total", service="lexical", method=SEARCH, code="OK") == 2
    assert moved("rulesage_requests_total", service="lexical", method=SEARCH, code="INVALID_ARGUMENT") == 1
    assert (
        moved("rulesage_request_errors_total", service="lexical", method=SEARCH, code="INVALID_ARGUMENT") == 1
    )
    assert moved("rulesage_request_errors_total", service="lexical", method=SEARCH, code="OK") == 0
    assert moved("rulesage_stage_seconds_count", service="lexical", stage="lexical.search") == 2
    assert moved("rulesage_request_seconds_count", service="lexical", method=SEARCH) == 3


class Probe:
    """A tiny service on raw bytes: answers, aborts, sets a code, or raises, as the request says."""

    name = "probe"
    service_names = ("test.Probe",)

    def register(self, server: grpc.aio.Server) -> None:
        async def call(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            if request == b"abort":
                await context.abort(grpc.StatusCode.NOT_FOUND, "no such thing")
            if request == b"set":
                context.set_code(grpc.StatusCode.FAILED_PRECONDITION)
                return b""
            if request == b"raise":
                raise ValueError("boom")
            return b"ok"

        handler = grpc.unary_unary_rpc_method_handler(call)
        server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler("test.Probe", {"Call": handler}),)
        )

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


def test_runner_interceptor_labels_every_outcome() -> None:
    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, {"service": "probe", **labels}) or 0.0

    method = "/test.Probe/Call"
    codes = ("OK", "NOT_FOUND", "FAILED_PRECONDITION", "UNKNOWN")
    before = {c: value("rulesage_requests_total", method=method, code=c) for c in codes}
    errors_before = value("rulesage_request_errors_total", method=method, code="UNKNOWN")

    async def scenario() -> dict[bytes, grpc.StatusCode]:
        running = await runner.start(Probe(), "127.0.0.1", 0)
        seen: dict[bytes, grpc.StatusCode] = {}
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{running.port}") as ch:
                call = ch.unary_unary(method)
                for req in (b"hello", b"abort", b"set", b"raise"):
                    try:
                        await call(req, timeout=10)
                        seen[req] = grpc.StatusCode.OK
                    except grpc.aio.AioRpcError as exc:
                        seen[req] = exc.code()
                await health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5)
        finally:
            await running.shutdown(0.5)
        return seen

    seen = asyncio.run(scenario())
    assert [c.name for c in seen.values()] == list(codes)  # what the client saw is what the metric says
    for c in codes:
        assert value("rulesage_requests_total", method=method, code=c) - before[c] == 1, c
    assert value("rulesage_request_errors_total", method=method, code="UNKNOWN") - errors_before == 1
    health = "/grpc.health.v1.Health/Check"
    assert value("rulesage_requests_total", method=health, code="OK") == 0


def test_a_taken_metrics_port_stops_the_service_with_the_reason(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("RULESAGE_", "OTEL_"))},
            "RULESAGE_PORT": "0",
            "RULESAGE_METRICS_PORT": str(port),
        }
        done = subprocess.run(
            [sys.executable, "-m", "services.doorman"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "RULESAGE_METRICS_PORT" in done.stderr and str(port) in done.stderr
