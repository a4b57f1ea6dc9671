"""`rulesage up --detach / status / ask / down` on a fresh state folder: the whole mesh as real processes
on an embedded Postgres of its own, a crashed service restarted, and nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from rulesage import mesh
from tests.support.isolated_mesh import FIXTURES, ROOT, free_block, isolated_mesh

pytestmark = pytest.mark.integration
SERVICES = set(mesh.MESH)


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_up_status_ask_restart_down(tmp_path: Path) -> None:
    with isolated_mesh(tmp_path, FIXTURES / "tiny-shelf.toml") as mesh:
        st = mesh.status()
        assert st["running"] and st["gateway_url"] == mesh.gateway_url
        assert set(st["services"]) == SERVICES
        assert {s["health"] for s in st["services"].values()} == {"SERVING"}

        ask = mesh.cli("ask", "--game", "solitaire-golf", "what is the goal of golf?", "--json")
        assert ask.returncode == 0, ask.stderr
        ruling = json.loads(ask.stdout)
        assert ruling["id"] and ruling["verdict"] in ("answered", "not_in_book", "unavailable")
        assert ruling["wrench"]["search_span_ms"] > 0
        assert "lexical" in ruling["wrench"]["voted"]

        bad = mesh.cli("ask", "--game", "no-such-game", "what?")
        assert bad.returncode == 2 and "unknown game" in bad.stderr

        # a crashed service comes back by itself and status counts the restart
        os.kill(st["services"]["lexical"]["pid"], signal.SIGKILL)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            lex = mesh.status()["services"]["lexical"]
            if lex["restarts"] >= 1 and lex["health"] == "SERVING":
                break
            time.sleep(1)
        assert lex["restarts"] >= 1 and lex["health"] == "SERVING"
        pids = [s["pid"] for s in mesh.status()["services"].values()]
        down = mesh.cli("down")
        assert down.returncode == 0, down.stderr

    assert mesh.status()["running"] is False
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    for port in range(mesh.base, mesh.base + 9):
        assert not listening(port), f"port {port} still listening after down"
    left = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


def test_a_taken_port_stops_up_with_a_clear_message(tmp_path: Path) -> None:
    base = free_block(9)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base + 3))
        s.listen()
        env_dir = tmp_path / "state"
        env_dir.mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("RULESAGE_") and k != "DATABASE_URL"},
            "RULESAGE_STATE_DIR": str(env_dir),
            "RULESAGE_BASE_PORT": str(base),
            "RULESAGE_GATEWAY_PORT": str(base + 8),
        }
        up = subprocess.run(
            [sys.executable, "-m", "rulesage.cli", "up", "--detach"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert up.returncode == 1
    assert f"port(s) already taken: {base + 3} (fusion)" in up.stderr
    assert not (env_dir / "mesh.json").exists()
