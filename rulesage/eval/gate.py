"""The evaluation gate the test script runs: a part of the real shelf, the real mesh, the real gold questions.

It ingests the games named in ``gate.toml`` (beside this file) from ../shared/corpus/shelf.toml into a
fresh state folder of its own, brings the mesh up on free ports, runs ``rulesage eval`` on gold-dev and
gold-real-dev restricted to those games, and prints each figure beside its floor. It fails (exit 1) when
reranked recall@8 or answered-correctly falls below its floor, when any citation is invalid, or when any
stage was degraded; it fails loudly (exit 2) when the shared evaluation folder is missing.

The floors in ``gate.toml`` are generated (``rulesage figures``) from the gate's condition in figures.json:
its last measured figures less a margin of two questions.

usage: rulesage gate [--json]
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

from rulesage.config import shared_dir

ROOT = Path(__file__).resolve().parents[2]
CONFIG = Path(__file__).with_suffix(".toml")


def free_block(size: int, start: int = 47000) -> int:
    for base in range(start, 64000, 97):
        try:
            for port in range(base, base + size):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no free port block")


def cli(env: dict[str, str], *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rulesage.cli", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check(name: str, report: dict[str, Any], floors: dict[str, float]) -> list[dict[str, Any]]:
    rows = []
    for key, floor in floors.items():
        value = report.get(key)
        ok = isinstance(value, int | float) and value >= floor
        rows.append({"set": name, "figure": key, "value": value, "floor": floor, "ok": ok})
    invalid = int(report.get("invalid_citations", 0) or 0)
    rows.append(
        {"set": name, "figure": "invalid_citations", "value": invalid, "floor": 0, "ok": invalid == 0}
    )
    degraded = report.get("degraded", {})
    bad = sum(int(v) for v in degraded.values()) if isinstance(degraded, dict) else 0
    rows.append({"set": name, "figure": "degraded_stages", "value": bad, "floor": 0, "ok": bad == 0})
    return rows


def main(argv: list[str], *, record: bool = False) -> int:
    as_json = "--json" in argv
    config = tomllib.loads(CONFIG.read_text())
    shelf = shared_dir() / "corpus" / "shelf.toml"
    golds = {name: shared_dir() / "eval" / f"{name}.jsonl" for name in config["floors"]}
    missing = [str(p) for p in [shelf, *golds.values()] if not p.exists()]
    if missing:
        print(f"eval gate: the shared evaluation material is missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    games: list[str] = config["games"]
    state = Path(tempfile.mkdtemp(prefix="rulesage-eval-gate-"))
    base = free_block(8)
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("RULESAGE_", "OTEL_")) and k != "DATABASE_URL"
        },
        "RULESAGE_STATE_DIR": str(state),
        "RULESAGE_MODELS_DIR": os.environ.get(
            "RULESAGE_MODELS_DIR",
            str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rulesage" / "models"),
        ),
        "RULESAGE_BASE_PORT": str(base),
        "RULESAGE_GATEWAY_PORT": str(free_block(1, base + 200)),
        "RULESAGE_SHARED": str(shared_dir()),
    }
    game_args = [a for g in games for a in ("--game", g)]
    t0 = time.monotonic()
    rows: list[dict[str, Any]] = []
    reports: dict[str, Any] = {}
    full: dict[str, Any] = {}
    try:
        # the shipped category maps too: the gate measures the road as it ships
        maps = ("--categories", str(ROOT / "data" / "categories"))
        ingest = cli(env, "ingest", "--shelf", str(shelf), *game_args, *maps, "--json")
        if ingest.returncode != 0:
            print(f"eval gate: ingest failed:\n{ingest.stderr[-3000:]}", file=sys.stderr)
            return 1
        up = cli(env, "up", "--detach", timeout=900)
        if up.returncode != 0:
            print(f"eval gate: the mesh did not come up:\n{up.stderr[-3000:]}", file=sys.stderr)
            return 1
        for name, gold in golds.items():
            run = cli(env, "eval", "--shelf", str(shelf), "--gold", str(gold), *game_args, "--json")
            if run.returncode != 0:
                print(f"eval gate: eval on {name} failed:\n{run.stderr[-3000:]}", file=sys.stderr)
                return 1
            report = json.loads(run.stdout)
            full[name] = report
            reports[name] = {
                k: report.get(k) for k in ("n", "n_answerable", *config["floors"][name], "degraded")
            }
            rows += check(name, report, config["floors"][name])
    finally:
        cli(env, "down", timeout=120)
    seconds = round(time.monotonic() - t0, 1)
    passed = all(r["ok"] for r in rows)
    if record:
        from rulesage.eval import figures

        gate_condition = figures.load()["gate"]["condition"]
        title = f"the evaluation gate ({len(games)} games of the shelf)"
        figures.record(gate_condition, "rulesage gate", full, title=title)
        print(
            f"recorded the gate's figures as {gate_condition!r}; `rulesage figures` moves the floors",
            file=sys.stderr,
        )
    if as_json:
        print(json.dumps({"passed": passed, "seconds": seconds, "games": games, "checks": rows}, indent=2))
    else:
        print(f"eval gate over {len(games)} games ({seconds} s):")
        for r in rows:
            mark = "ok  " if r["ok"] else "FAIL"
            print(f"  {mark} {r['set']:14s} {r['figure']:22s} {r['value']!s:>8}  floor {r['floor']}")
        for name, rep in reports.items():
            print(f"  {name}: {rep['n']} questions ({rep['n_answerable']} answerable)")
        print("eval gate " + ("passed" if passed else "FAILED"))
    return 0 if passed else 1
