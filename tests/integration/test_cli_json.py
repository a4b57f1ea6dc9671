"""Every command given --json prints JSON and nothing else on stdout; notices and progress go to stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rulesage.config import models_dir
from tests.support.isolated_mesh import FIXTURES, ROOT, free_block

pytestmark = pytest.mark.integration


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rulesage.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_json_commands_print_only_json(tmp_path: Path) -> None:
    base = free_block(8)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RULESAGE_") and k != "DATABASE_URL"},
        "RULESAGE_STATE_DIR": str(tmp_path / "state"),
        "RULESAGE_MODELS_DIR": str(models_dir()),
        "RULESAGE_BASE_PORT": str(base),
        "RULESAGE_GATEWAY_PORT": str(free_block(1, base + 100)),
    }
    shelf = str(FIXTURES / "tiny-shelf.toml")
    try:
        status = run(env, "status", "--json")
        assert json.loads(status.stdout) == {"running": False, "gateway_url": None, "services": {}}

        ingest = run(env, "ingest", "--shelf", shelf, "--json")
        assert ingest.returncode == 0, ingest.stderr
        assert json.loads(ingest.stdout)["documents"] == 2

        # eval brings a mesh up for the run and takes it down: its notices must not reach stdout
        ev = run(env, "eval", "--shelf", shelf, "--gold", str(FIXTURES / "tiny-gold.jsonl"), "--json")
        assert ev.returncode == 0, ev.stderr[-3000:]
        report = json.loads(ev.stdout)
        assert report["n"] == 2 and report["invalid_citations"] == 0
        assert report["degraded"] == {"arm": 0, "fusion": 0, "rerank": 0, "answer": 0}
        assert "RuleSage is up" in ev.stderr and "RuleSage stopped" in ev.stderr
    finally:
        run(env, "down")
