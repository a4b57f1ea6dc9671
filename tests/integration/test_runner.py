"""The service runner as a real process: health, reflection, graceful shutdown, bad config, a taken port."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def spawn(module: str, tmp_path: Path, **env: str) -> tuple[subprocess.Popen[str], Path]:
    port_file = tmp_path / f"{module}.port"
    full = {
        **os.environ,
        "RULESAGE_PORT": "0",
        "RULESAGE_PORT_FILE": str(port_file),
        "RULESAGE_GRACE_S": "2",
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
    return proc, port_file


def wait_port(proc: subprocess.Popen[str], port_file: Path, timeout: float = 120) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if port_file.exists():
            return int(port_file.read_text())
        if proc.poll() is not None:
            raise AssertionError(f"service exited early: {proc.stdout.read() if proc.stdout else ''}")
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("service never became SERVING")


def test_health_reflection_and_graceful_shutdown(shelf_url: str, tmp_path: Path) -> None:
    proc, port_file = spawn("services.lexical", tmp_path, DATABASE_URL=shelf_url)
    try:
        port = wait_port(proc, port_file)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            health = health_pb2_grpc.HealthStub(ch)
            for service in ("", "rulesage.v1.Arm"):
                status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
                assert status == health_pb2.HealthCheckResponse.SERVING
            reflect = reflection_pb2_grpc.ServerReflectionStub(ch)
            reply = next(
                iter(
                    reflect.ServerReflectionInfo(
                        iter([reflection_pb2.ServerReflectionRequest(list_services="")])
                    )
                )
            )
            names = {s.name for s in reply.list_services_response.service}
            assert {"rulesage.v1.Arm", "grpc.health.v1.Health"} <= names
            # SIGTERM: health flips to NOT_SERVING, then the process stops within the grace period, exit 0
            watch = health.Watch(health_pb2.HealthCheckRequest(service="rulesage.v1.Arm"), timeout=15)
            seen = [next(watch).status]
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(grpc.RpcError):  # the stream ends when the server stops
                seen.extend(r.status for r in watch)
        assert proc.wait(15) == 0
        assert seen[0] == health_pb2.HealthCheckResponse.SERVING
        assert health_pb2.HealthCheckResponse.NOT_SERVING in seen
    finally:
        if proc.poll() is None:
            proc.kill()


def test_bad_configuration_is_a_startup_error_naming_the_variable(tmp_path: Path) -> None:
    proc, _ = spawn("services.lexical", tmp_path, RULESAGE_PORT="not-a-port")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "RULESAGE_PORT='not-a-port'" in out


def test_a_taken_port_is_a_clear_startup_error(shelf_url: str, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc, _ = spawn("services.lexical", tmp_path, DATABASE_URL=shelf_url, RULESAGE_PORT=str(port))
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in out
