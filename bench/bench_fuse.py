"""Arms + fusion alone: call the running mesh's fusion.Fuse directly for every gold question and print the
client-side p50/p95 and each stage's p50/p95 from the timings the services report.

    .venv/bin/python bench/bench_fuse.py [--gold ../shared/eval/gold-dev.jsonl] [--rounds 2] [--json]

Needs `rulesage up` over an ingested shelf. Only each question's text and game are used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rulesage.config import shared_dir  # noqa: E402
from rulesage.runner import channel  # noqa: E402
from rulesage.v1 import fusion_pb2, fusion_pb2_grpc  # noqa: E402


def pct(xs: list[float]) -> dict[str, float]:
    return {"p50": round(float(np.percentile(xs, 50)), 2), "p95": round(float(np.percentile(xs, 95)), 2)}


async def run(gold: Path, rounds: int) -> dict[str, object]:
    qs = [json.loads(line) for line in gold.read_text().splitlines() if line.strip()]
    stages: dict[str, list[float]] = defaultdict(list)
    calls: list[float] = []
    async with channel("fusion") as ch:
        stub = fusion_pb2_grpc.FusionStub(ch)
        await stub.Fuse(fusion_pb2.FuseRequest(question=qs[0]["question"], game=qs[0]["game"]))  # warm-up
        for _ in range(rounds):
            for q in qs:
                t0 = time.perf_counter()
                res = await stub.Fuse(fusion_pb2.FuseRequest(question=q["question"], game=q["game"]))
                calls.append((time.perf_counter() - t0) * 1000)
                for t in res.timings:
                    stages[t.stage].append(t.ms)
    per_stage = {k: pct(v) for k, v in sorted(stages.items())}
    return {"n": len(calls), "fuse_call_ms": pct(calls), "stages_ms": per_stage}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gold", type=Path, default=shared_dir() / "eval" / "gold-dev.jsonl")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    out = asyncio.run(run(args.gold, args.rounds))
    if args.json:
        print(json.dumps(out))
    else:
        print(f"fuse call: {out['fuse_call_ms']} over {out['n']} calls")
        for k, v in out["stages_ms"].items():  # type: ignore[attr-defined]
            print(f"  {k:18s} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
