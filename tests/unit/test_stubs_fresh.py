"""Committed gRPC stubs are exactly what scripts/gen_protos.py makes from protos/: stale stubs fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_stubs_match_the_protos(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_protos.py"), "--out", str(tmp_path)], check=True
    )
    fresh = {p.name: p.read_bytes() for p in (tmp_path / "rulesage" / "v1").iterdir() if p.is_file()}
    committed = {p.name: p.read_bytes() for p in (ROOT / "rulesage" / "v1").iterdir() if p.is_file()}
    assert sorted(fresh) == sorted(committed), "stub files differ: run scripts/gen_protos.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale stubs (run scripts/gen_protos.py): {stale}"
