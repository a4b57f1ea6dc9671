#!/usr/bin/env python3
"""Generate the gRPC/protobuf stubs in rulesage/v1/ from protos/rulesage/v1/*.proto.

usage: python scripts/gen_protos.py [--out DIR]

The one way stubs are made; tests/unit/test_stubs_fresh.py regenerates into a temporary folder and fails
when the committed stubs differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "protos"


def generate(out: Path) -> list[Path]:
    import grpc_tools
    from grpc_tools import protoc

    protos = sorted(str(p.relative_to(PROTO_ROOT)) for p in (PROTO_ROOT / "rulesage" / "v1").glob("*.proto"))
    include = str(Path(grpc_tools.__file__).parent / "_proto")
    out.mkdir(parents=True, exist_ok=True)
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *protos,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    pkg = out / "rulesage" / "v1"
    (pkg / "__init__.py").write_text(
        '"""Generated from protos/rulesage/v1 by scripts/gen_protos.py; do not edit."""\n'
    )
    return sorted(pkg.glob("*.py*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=ROOT, help="root the rulesage/v1 package is written under"
    )
    ns = parser.parse_args()
    files = generate(ns.out)
    print(f"generated {len(files)} files under {ns.out / 'rulesage' / 'v1'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
