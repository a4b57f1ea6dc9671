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

from rulesage.config import state_dir

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def free_block(size: int) -> int:
    """A base port with ``size`` consecutive free ports above it."""
    for base in range(52000, 60000, 97):
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


def cli(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rulesage.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_up_status_ask_restart_down(tmp_path: Path) -> None:
    models = state_dir() / "models"  # reuse the exported embedder instead of exporting it again
    (tmp_path / "state").mkdir()
    if models.exists():
        (tmp_path / "state" / "models").symlink_to(models)
    base = free_block(9)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RULESAGE_") and k != "DATABASE_URL"},
        "RULESAGE_STATE_DIR": str(tmp_path / "state"),
        "RULESAGE_BASE_PORT": str(base),
        "RULESAGE_GATEWAY_PORT": str(base + 8),
        "RULESAGE_DEMO_SHELF": str(ROOT / "tests" / "fixtures" / "tiny-shelf.toml"),
    }
    up = cli(env, "up", "--detach")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert f"http://127.0.0.1:{base + 8}" in up.stdout

        st = json.loads(cli(env, "status", "--json").stdout)
        assert st["running"] and st["gateway_url"] == f"http://127.0.0.1:{base + 8}"
        names = {"lexical", "dense", "aisle", "fusion", "rerank", "answer", "doorman", "gateway"}
        assert set(st["services"]) == names
        assert {s["health"] for s in st["services"].values()} == {"SERVING"}

        ask = cli(env, "ask", "--game", "solitaire-golf", "what is the goal of golf?", "--json")
        assert ask.returncode == 0, ask.stderr
        ruling = json.loads(ask.stdout)
        assert ruling["id"] and ruling["verdict"] in ("answered", "not_in_book", "unavailable")
        assert ruling["wrench"]["search_span_ms"] > 0
        assert set(ruling["wrench"]["voted"]) >= {"lexical"}

        bad = cli(env, "ask", "--game", "no-such-game", "what?")
        assert bad.returncode == 2 and "unknown game" in bad.stderr

        # a crashed service comes back by itself and status counts the restart
        os.kill(st["services"]["lexical"]["pid"], signal.SIGKILL)
        end = time.monotonic() + 60
        while time.monotonic() < end:
            lex = json.loads(cli(env, "status", "--json").stdout)["services"]["lexical"]
            if lex["restarts"] >= 1 and lex["health"] == "SERVING":
                break
            time.sleep(1)
        assert lex["restarts"] >= 1 and lex["health"] == "SERVING"
        pids = [s["pid"] for s in json.loads(cli(env, "status", "--json").stdout)["services"].values()]
    finally:
        down = cli(env, "down")
    assert down.returncode == 0, down.stderr
    assert json.loads(cli(env, "status", "--json").stdout)["running"] is False
    for pid in pids:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    for port in range(base, base + 9):
        assert not listening(port), f"port {port} still listening after down"
    pg = [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])]
    assert not pg, f"processes left behind: {[p.info['cmdline'] for p in pg]}"
