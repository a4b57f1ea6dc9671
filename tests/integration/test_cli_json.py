"""Every command given --json prints JSON and nothing else on stdout; notices and progress go to stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.isolated_mesh import FIXTURES, isolated_env

pytestmark = pytest.mark.integration


def test_json_commands_print_only_json(tmp_path: Path) -> None:
    shelf = FIXTURES / "tiny-shelf.toml"
    mesh = isolated_env(tmp_path, shelf)
    try:
        status = mesh.cli("status", "--json")
        assert json.loads(status.stdout) == {"running": False, "gateway_url": None, "services": {}}

        ingest = mesh.cli("ingest", "--shelf", str(shelf), "--json", timeout=900)
        assert ingest.returncode == 0, ingest.stderr
        assert json.loads(ingest.stdout)["documents"] == 2

        # eval brings a mesh up for the run and takes it down: its notices must not reach stdout
        gold = str(FIXTURES / "tiny-gold.jsonl")
        ev = mesh.cli("eval", "--shelf", str(shelf), "--gold", gold, "--json", timeout=900)
        assert ev.returncode == 0, ev.stderr[-3000:]
        report = json.loads(ev.stdout)
        assert report["n"] == 2 and report["invalid_citations"] == 0
        assert report["coverage"] == 1.0, report["coverage_misses"]  # both quotes found in the current books
        assert report["degraded"] == {"arm": 0, "fusion": 0, "rerank": 0, "answer": 0}
        assert "RuleSage is up" in ev.stderr and "RuleSage stopped" in ev.stderr
    finally:
        mesh.cli("down")
