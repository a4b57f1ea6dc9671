"""Load test: N simulated players asking through the gateway's POST /api/ask on loopback for a bounded time.

    .venv/bin/python bench/load.py [--players 50] [--seconds 300] [--checkpoint-s 60] [--start] [--json]

Questions are drawn at random (seeded) from data/questions/*.jsonl — player-style questions written for
training the reranker, never the gold file — keeping those whose game is on the running shelf (a question
filed under a family goes to one of that family's games). Each player asks, waits for the ruling, and asks
again until the time is up; the loop stops by itself and waits for the asks in flight.

Reports: throughput (rulings/s), p50/p95/p99 end to end (measured by the client) and per stage (from each
ruling's wrench: its stage timings, search span, answer and total), errors by kind (HTTP status, transport,
and degraded rulings by the stage missing), and each mesh process's memory (PSS, psutil over the pids in
`rulesage status --json`, plus Postgres) sampled every 5 s, with the check "memory flat within 10% from
minute 1 to the end" (minute 5 in the full run): the mean over the 30 s after the checkpoint against the mean
over the last 30 s.

The gateway rate-limits asks per client (RULESAGE_ASK_RATE, default 6/minute) and every player here is the
same loopback client: the mesh under test must run with a high limit. ``--start`` brings a mesh up with
RULESAGE_ASK_RATE=100000/minute (in the state folder and ports of the environment: RULESAGE_STATE_DIR,
RULESAGE_BASE_PORT, RULESAGE_GATEWAY_PORT, RULESAGE_DEMO_SHELF) and takes it down at the end; without it the
running mesh is used and any 429 is reported as "rate_limited".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from rulesage.core.models import degraded as wrench_degraded  # noqa: E402

QUESTION_FILES = sorted((ROOT / "data" / "questions").glob("*.jsonl"))
BENCH_ASK_RATE = "100000/minute"
FLAT_WITHIN = 0.10


# -- the mesh ---------------------------------------------------------------------------------------------


def rulesage(
    *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rulesage.cli", *args],
        env=env or dict(os.environ),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def mesh_status() -> dict[str, Any]:
    out = rulesage("status", "--json", timeout=60)
    try:
        return json.loads(out.stdout)  # type: ignore[no-any-return]
    except json.JSONDecodeError:
        return {"running": False, "services": {}}


def postgres_pid() -> int | None:
    from rulesage.config import state_dir

    pidfile = state_dir() / "pgdata" / "postmaster.pid"
    try:
        return int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def mesh_pids() -> dict[str, int]:
    pids = {n: int(s["pid"]) for n, s in mesh_status().get("services", {}).items() if s.get("pid")}
    pg = postgres_pid()
    if pg:
        pids["postgres"] = pg
    return pids


def pss_mb(name: str, pid: int) -> float | None:
    """Proportional set size (PSS) in MB: resident memory with each shared page split among the processes
    sharing it. Postgres counts its postmaster and every backend; summing their RSS instead would count the
    shared buffers once per backend that touched them (it grew 13 % that way while no memory was added)."""
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)] if name == "postgres" else [proc]
        return round(sum(p.memory_full_info().pss for p in procs) / 2**20, 1)
    except psutil.Error:
        return None


WINDOW_S = 30.0  # each end of the flatness check is the mean of the samples over this long, not one sample


def window_mean(trace: list[dict[str, Any]], lo: float, hi: float) -> dict[str, float]:
    out: dict[str, list[float]] = defaultdict(list)
    for snap in trace:
        if lo <= snap["t"] <= hi:
            for name, mb in snap["pss_mb"].items():
                if mb is not None:
                    out[name].append(mb)
    return {n: round(statistics.fmean(v), 1) for n, v in out.items() if v}


# -- questions --------------------------------------------------------------------------------------------


def load_questions(games: list[dict[str, Any]], rng: random.Random) -> list[tuple[str, str]]:
    slugs = {g["slug"] for g in games}
    by_family: dict[str, list[str]] = defaultdict(list)
    for g in games:
        by_family[g.get("family", "")].append(g["slug"])
    out = []
    for path in QUESTION_FILES:
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            game, question = str(row.get("game", "")), str(row.get("question", "")).strip()
            if not question:
                continue
            if game in slugs:
                out.append((game, question))
            elif game in by_family:
                out.append((rng.choice(sorted(by_family[game])), question))
    return out


# -- the players ------------------------------------------------------------------------------------------


@dataclass
class Sample:
    t: float  # seconds since the start
    e2e_ms: float
    kind: str  # "ok", or the error's kind
    stages: dict[str, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)


def stage_ms(ruling: dict[str, Any]) -> dict[str, float]:
    w = ruling.get("wrench") or {}
    out: dict[str, float] = defaultdict(float)
    for t in w.get("timings") or []:
        out[str(t.get("stage"))] += float(t.get("ms") or 0.0)
    for key in ("search_span_ms", "answer_ms", "total_ms"):
        if isinstance(w.get(key), int | float):
            out["wrench." + key.removesuffix("_ms")] = float(w[key])
    return dict(out)


def degraded(ruling: dict[str, Any]) -> list[str]:
    """ "<arm or stage>:<state>" for what of the ruling's road did not really run."""
    return [f"{name}:{state}" for _, name, state in wrench_degraded(ruling.get("wrench") or {})]


def error_kind(status: int) -> str:
    if status == 429:
        return "rate_limited (429)"
    return f"http_{status}"


async def player(
    i: int,
    client: httpx.AsyncClient,
    url: str,
    questions: list[tuple[str, str]],
    t0: float,
    stop_at: float,
    samples: list[Sample],
    seed: int,
) -> None:
    rng = random.Random(seed * 1000 + i)
    while time.monotonic() < stop_at:
        game, question = rng.choice(questions)
        start = time.monotonic()
        try:
            r = await client.post(url, json={"game": game, "question": question})
            e2e = (time.monotonic() - start) * 1000
            if r.status_code == 201:
                ruling = r.json()
                samples.append(Sample(start - t0, e2e, "ok", stage_ms(ruling), degraded(ruling)))
                continue
            samples.append(Sample(start - t0, e2e, error_kind(r.status_code)))
        except httpx.TimeoutException:
            samples.append(Sample(start - t0, (time.monotonic() - start) * 1000, "client_timeout"))
        except httpx.HTTPError as exc:
            samples.append(Sample(start - t0, (time.monotonic() - start) * 1000, type(exc).__name__))
        await asyncio.sleep(0.2)  # a refused or failed ask: no hot loop


async def sample_memory(
    pids: dict[str, int], t0: float, checkpoint_s: float, stop: asyncio.Event, memory: dict[str, Any]
) -> None:
    memory["start"] = {n: pss_mb(n, p) for n, p in pids.items()}
    memory["trace"] = []
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=5)
        now = time.monotonic() - t0
        snap = {n: pss_mb(n, p) for n, p in pids.items()}
        memory["trace"].append({"t": round(now, 1), "pss_mb": snap})
    memory["end_sample"] = {n: pss_mb(n, p) for n, p in pids.items()}
    trace = memory["trace"]
    last = trace[-1]["t"] if trace else 0.0
    if last >= checkpoint_s + 2 * WINDOW_S:
        memory["checkpoint"] = window_mean(trace, checkpoint_s, checkpoint_s + WINDOW_S)
        memory["checkpoint_t"] = [checkpoint_s, checkpoint_s + WINDOW_S]
        memory["end"] = window_mean(trace, last - WINDOW_S, last)
        memory["end_t"] = [round(last - WINDOW_S, 1), last]
    else:
        memory["end"] = memory["end_sample"]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return round(ordered[k], 1)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": pct(values, 50),
        "p95": pct(values, 95),
        "p99": pct(values, 99),
        "mean": round(statistics.fmean(values), 1) if values else float("nan"),
    }


def flat_check(memory: dict[str, Any]) -> dict[str, Any]:
    mid, end = memory.get("checkpoint"), memory.get("end") or {}
    if not mid:
        return {"evaluated": False, "why": "the run ended before the checkpoint"}
    per = {}
    for name, m1 in mid.items():
        e = end.get(name)
        if not m1 or e is None:
            per[name] = {"ok": False, "why": "process gone (restarted or crashed?)"}
            continue
        change = (e - m1) / m1
        per[name] = {
            "minute1_mb": m1,
            "end_mb": e,
            "change": round(change, 4),
            "ok": abs(change) <= FLAT_WITHIN,
        }
    return {"evaluated": True, "within": FLAT_WITHIN, "ok": all(p["ok"] for p in per.values()), "per": per}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    st = mesh_status()
    if not st.get("running"):
        raise SystemExit("load: RuleSage is not running (start it, or pass --start)")
    base = str(st["gateway_url"])
    async with httpx.AsyncClient(timeout=30) as c:
        games = (await c.get(f"{base}/api/games")).json()["games"]
    rng = random.Random(args.seed)
    questions = load_questions(games, rng)
    if not questions:
        raise SystemExit(
            f"load: no question in {[p.name for p in QUESTION_FILES]} is about a game on the shelf"
        )
    pids = mesh_pids()
    samples: list[Sample] = []
    memory: dict[str, Any] = {}
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=args.players, max_keepalive_connections=args.players)
    t0 = time.monotonic()
    stop_at = t0 + args.seconds
    async with httpx.AsyncClient(timeout=args.ask_timeout, limits=limits) as client:
        mem_task = asyncio.create_task(sample_memory(pids, t0, args.checkpoint_s, stop, memory))
        await asyncio.gather(
            *(
                player(i, client, f"{base}/api/ask", questions, t0, stop_at, samples, args.seed)
                for i in range(args.players)
            )
        )
        wall_s = time.monotonic() - t0
        stop.set()
        await mem_task
    after = mesh_pids()
    ok = [s for s in samples if s.kind == "ok"]
    per_stage: dict[str, list[float]] = defaultdict(list)
    for s in ok:
        for name, ms in s.stages.items():
            per_stage[name].append(ms)
    errors = Counter(s.kind for s in samples if s.kind != "ok")
    degraded_kinds = Counter(d for s in ok for d in s.degraded)
    return {
        "gateway": base,
        "players": args.players,
        "seconds": args.seconds,
        "wall_s": round(wall_s, 1),
        "ask_rate_note": (
            f"the mesh was started by this run with RULESAGE_ASK_RATE={BENCH_ASK_RATE}"
            if args.start
            else "the running mesh was used: it must run with a high RULESAGE_ASK_RATE "
            f"(e.g. {BENCH_ASK_RATE}); 429s are counted as rate_limited"
        ),
        "shelf_games": len(games),
        "questions": len(questions),
        "asks": len(samples),
        "rulings": len(ok),
        "throughput_rulings_per_s": round(len(ok) / wall_s, 2) if wall_s else 0.0,
        "e2e_ms": summary([s.e2e_ms for s in ok]),
        "stages_ms": {name: summary(v) for name, v in sorted(per_stage.items())},
        "errors": dict(errors.most_common()),
        "degraded_rulings": sum(1 for s in ok if s.degraded),
        "degraded_by_stage": dict(degraded_kinds.most_common()),
        "memory_mb": {
            "checkpoint_s": memory.get("checkpoint_t"),
            "start": memory.get("start"),
            "minute1": memory.get("checkpoint"),
            "end": memory.get("end"),
            "trace": memory.get("trace"),  # every 5 s: is a growth a step (warm-up) or a slope (a leak)?
        },
        "memory_flat": flat_check(memory),
        "restarted_during_run": sorted(n for n, p in pids.items() if after.get(n) != p),
    }


def text_report(r: dict[str, Any]) -> str:
    lines = [
        f"load: {r['players']} players for {r['seconds']} s against {r['gateway']} ({r['wall_s']} s wall)",
        f"  {r['ask_rate_note']}",
        f"  questions: {r['questions']} over {r['shelf_games']} games (data/questions, not the gold file)",
        f"  asks {r['asks']}, rulings {r['rulings']}, throughput {r['throughput_rulings_per_s']} rulings/s",
        "  end to end ms: " + _fmt(r["e2e_ms"]),
        "  per stage ms (from the wrench):",
    ]
    for name, s in r["stages_ms"].items():
        lines.append(f"    {name:28s} {_fmt(s)}")
    lines.append(f"  errors: {r['errors'] or 'none'}")
    lines.append(f"  degraded rulings: {r['degraded_rulings']} {r['degraded_by_stage'] or ''}".rstrip())
    mem = r["memory_mb"]
    lines.append(f"  PSS MB (start / mean of the 30 s from {mem['checkpoint_s']} s / mean of the last 30 s):")
    for name in sorted(mem["start"] or {}):
        m1 = (mem["minute1"] or {}).get(name)
        lines.append(f"    {name:10s} {mem['start'][name]} / {m1} / {(mem['end'] or {}).get(name)}")
    flat = r["memory_flat"]
    if not flat["evaluated"]:
        lines.append(f"  memory flat within 10% from minute 1 to the end: not evaluated ({flat['why']})")
    else:
        bad = [n for n, p in flat["per"].items() if not p["ok"]]
        verdict = "PASS" if flat["ok"] else f"FAIL ({', '.join(bad)})"
        lines.append(f"  memory flat within 10% from minute 1 to the end: {verdict}")
    if r["restarted_during_run"]:
        lines.append(f"  restarted during the run: {r['restarted_during_run']}")
    return "\n".join(lines)


def _fmt(s: dict[str, float]) -> str:
    return f"n={s['n']} p50={s['p50']} p95={s['p95']} p99={s['p99']} mean={s['mean']}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--players", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=300.0)
    ap.add_argument("--checkpoint-s", type=float, default=60.0, help="when 'minute 1' memory is read")
    ap.add_argument("--ask-timeout", type=float, default=120.0, help="client timeout per ask, seconds")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--start", action="store_true", help=f"start a mesh with RULESAGE_ASK_RATE={BENCH_ASK_RATE}"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.players < 1 or args.seconds <= 0:
        ap.error("--players and --seconds must be positive")
    if args.start:
        up = rulesage("up", "--detach", env={**os.environ, "RULESAGE_ASK_RATE": BENCH_ASK_RATE})
        if up.returncode != 0:
            print(up.stdout + up.stderr, file=sys.stderr)
            return 1
    try:
        report = asyncio.run(run(args))
    finally:
        if args.start:
            rulesage("down")
    print(json.dumps(report, indent=2) if args.json else text_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
