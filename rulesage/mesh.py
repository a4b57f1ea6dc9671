"""The mesh, declared once: every process's name, contract port, role and entry point.

Everything that needs the list of services reads it from here: the runner (default ports and addresses),
the launcher (what to start, in which order), the CLI (``rulesage serve NAME``), fusion (which arms vote,
and which of them wait for the question's vectors), the evaluation (per-arm figures), the load bench, the
tests, and the k8s manifests (every per-service manifest under k8s/ is rendered from this table by
scripts/gen_k8s.py, and tests/unit/test_k8s.py fails when the committed files differ from what it renders).

To add a search arm: write ``services/<name>/`` (a server module whose service answers ``rulesage.v1.Arm``
and a ``__main__`` that calls ``runner.main``), then add one ``Svc`` with ``role=Role.ARM`` below. Fusion
fans out to it, the launcher starts it and the wrench's ceiling counts its vote. Then
``python scripts/gen_k8s.py`` writes its Deployment, Service, disruption budget, network-policy edges
(fusion may call it) and, as its ``Pod`` says, its autoscaler and GPU patch.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rulesage.config import ConfigError

BASE_PORT = 50061  # the first gRPC contract port; $RULESAGE_BASE_PORT moves the whole block on one machine


class Role(StrEnum):
    ARM = "arm"  # answers Arm.Search; fusion fans out to it and its lists vote in the election
    STAGE = "stage"  # a stage of the road after the arms (fusion, rerank, answer) or beside it (doorman)
    GATEWAY = "gateway"  # the HTTP front door


def load_entry(entry: str) -> Any:
    """What a "package.module:attribute" entry point names, imported on demand."""
    module, _, attr = entry.partition(":")
    return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Drawer:
    """Index-time work a service's requests read instead of computing: ``entry`` names a function
    ``(url, progress=False) -> int`` (passages drawn); ``key`` is its count's name in ingest reports."""

    key: str
    entry: str

    def load(self) -> Callable[..., int]:
        return load_entry(self.entry)


@dataclass(frozen=True)
class Pod:
    """How a service runs on Kubernetes beyond what its contract implies: the rest of its Deployment in
    k8s/base/mesh/<name>.yaml (rendered by scripts/gen_k8s.py). Sizes are Kubernetes quantities."""

    cpu: str = "100m"  # requests
    memory: str = "256Mi"
    cpu_limit: str = "1"
    memory_limit: str = "512Mi"
    autoscaled: bool = False  # replicas owned by its HorizontalPodAutoscaler (k8s/base/hpa.yaml), never set
    cpu_utilization: int = 60  # autoscaled: the HPA's target average CPU utilization, in percent
    seed_models: bool = False  # an init container copies the image's models into the empty state volume
    env: tuple[tuple[str, str], ...] = ()  # fixed (name, value) pairs
    # variables set to the container's CPU limit: thread counts sized to the pod, not to the node's cores
    cpu_limit_env: tuple[str, ...] = ()
    secret_env: tuple[tuple[str, str], ...] = ()  # (variable, Secret): the Secret's key of the same name
    gpu: bool = False  # k8s/components/gpu (overlays/prod-gpu) runs it on an NVIDIA GPU node, CUDA image
    gpu_env: tuple[tuple[str, str], ...] = ()  # fixed (name, value) pairs set only under components/gpu


@dataclass(frozen=True)
class Svc:
    name: str
    port: int  # contract port: the k8s containerPort and, offset by $RULESAGE_BASE_PORT, the local port
    role: Role
    entry: str  # "package.module:Factory" of the servicer (the gateway: its ASGI app module)
    needs_vectors: bool = False  # an arm that waits for the question's vectors (Embedder.Embed)
    embedder: bool = False  # also serves Embedder.Embed: the one place the question is embedded
    database: bool = True  # opens a database pool (k8s: DATABASE_URL and the postgres-client label)
    index_drawers: tuple[Drawer, ...] = ()  # run after every ingest (rulesage.indexing.draw_all)
    doc: str = ""  # what it does, in a line (the head of its k8s manifest)
    pod: Pod = Pod()  # its Kubernetes Deployment

    @property
    def module(self) -> str:
        """What ``python -m`` runs for this process."""
        return self.entry.partition(":")[0].rpartition(".")[0]

    def factory(self) -> Callable[[], Any]:
        """The servicer class (or factory) named by ``entry``, imported on demand."""
        return load_entry(self.entry)


# Model-bound services size ONNX Runtime's threads by their CPU limit (os.cpu_count() sees the whole node).
_ORT_THREADS = "RULESAGE_ORT_THREADS"

MESH: dict[str, Svc] = {
    s.name: s
    for s in (
        Svc(
            "lexical",
            50061,
            Role.ARM,
            "services.lexical.server:LexicalService",
            doc="full-text arm (Postgres tsvector + pg_trgm).",
        ),
        Svc(
            "dense",
            50062,
            Role.ARM,
            "services.dense.server:DenseService",
            needs_vectors=True,
            embedder=True,
            doc="vector arm (pgvector, exact top-k within a family) and the question Embedder (ONNX).",
            pod=Pod(
                cpu="250m",
                memory="512Mi",
                cpu_limit="2",
                memory_limit="1Gi",
                seed_models=True,
                cpu_limit_env=(_ORT_THREADS,),
            ),
        ),
        Svc(
            "aisle",
            50063,
            Role.ARM,
            "services.aisle.server:AisleService",
            needs_vectors=True,
            doc="aisle arm (aliases and headings).",
        ),
        Svc(
            "category",
            50068,
            Role.ARM,
            "services.category.server:CategoryService",
            needs_vectors=True,
            doc="the category leg (the question put in one category of the game's map; the mapped sections"
            " voted).",
        ),
        Svc(
            "fusion",
            50064,
            Role.STAGE,
            "services.fusion.server:FusionService",
            doc="fans out to the arms, fuses their lists with RRF and hydrates the fused passages.",
        ),
        Svc(
            "rerank",
            50065,
            Role.STAGE,
            "services.rerank.server:RerankService",
            index_drawers=(Drawer("reranker_states_drawn", "services.rerank.states:draw_missing"),),
            doc="the careful reader (ONNX Runtime; CPU or GPU): the cross reader over the fused order's top,"
            " or the head over the windows' stored encoder states.",
            pod=Pod(
                cpu="1",
                memory="1Gi",
                cpu_limit="4",
                memory_limit="2Gi",
                autoscaled=True,
                seed_models=True,
                cpu_limit_env=(_ORT_THREADS, "RULESAGE_RERANK_THREADS"),
                gpu=True,
                gpu_env=(("RULESAGE_RERANK_DEVICE", "cuda"),),
            ),
        ),
        Svc(
            "answer",
            50066,
            Role.STAGE,
            "services.answer.server:AnswerService",
            index_drawers=(Drawer("sentence_vectors_drawn", "services.answer.sentence_index:draw_missing"),),
            doc="quote-before-answer writer (extractive | llama-cpp | openai).",
            pod=Pod(
                cpu="500m",
                memory="1Gi",
                cpu_limit="4",
                memory_limit="4Gi",
                autoscaled=True,
                seed_models=True,
                # freed tensors go back to the kernel: without these RSS drifted +12 % over a 5-minute load
                # (the launcher sets the same for its child process)
                env=(("MALLOC_MMAP_THRESHOLD_", "262144"), ("MALLOC_TRIM_THRESHOLD_", "524288")),
                cpu_limit_env=(_ORT_THREADS,),
                gpu=True,
            ),
        ),
        Svc(
            "doorman",
            50067,
            Role.STAGE,
            "services.doorman.server:DoormanService",
            database=False,
            doc="screens rulings before the public wall.",
            # The learned screen embeds each question with MiniLM (~90 MB of weights, beside the profanity
            # classifier), and the runtime image has no torch to export it again: the models are seeded.
            pod=Pod(memory="512Mi", memory_limit="1Gi", seed_models=True),
        ),
        Svc(
            "gateway",
            8080,
            Role.GATEWAY,
            "gateway.app:create_app",
            doc="the HTTP front door (FastAPI): the page, /ask, the wrench, the public wall, admin review.",
            pod=Pod(
                cpu="200m",
                autoscaled=True,
                cpu_utilization=70,
                secret_env=(("RULESAGE_ADMIN_TOKEN", "rulesage-admin"),),
            ),
        ),
    )
}


def grpc_services() -> list[Svc]:
    """Every gRPC service, in start order (arms first: fusion's first asks find them up)."""
    return [s for s in MESH.values() if s.role is not Role.GATEWAY]


def arms() -> list[Svc]:
    return [s for s in MESH.values() if s.role is Role.ARM]


def embedder() -> Svc:
    found = [s for s in MESH.values() if s.embedder]
    if len(found) != 1:
        raise ConfigError(f"the mesh needs exactly one embedder, found {[s.name for s in found]}")
    return found[0]


def gateway() -> Svc:
    return next(s for s in MESH.values() if s.role is Role.GATEWAY)


def get(name: str) -> Svc:
    try:
        return MESH[name]
    except KeyError:
        raise ConfigError(f"no service {name!r} in the mesh (known: {', '.join(MESH)})") from None


def _port_env(var: str) -> int | None:
    raw = os.environ.get(var, "").strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"bad configuration: {var}={raw!r}: expected a port number")
    return int(raw)


def default_port(name: str) -> int:
    """Where ``name`` listens on one machine. gRPC services: $RULESAGE_BASE_PORT (default 50061) plus the
    service's offset from BASE_PORT; the gateway: $RULESAGE_GATEWAY_PORT (default 8080)."""
    svc = get(name)
    if svc.role is Role.GATEWAY:
        return _port_env("RULESAGE_GATEWAY_PORT") or svc.port
    base = _port_env("RULESAGE_BASE_PORT")
    if base is None:
        return svc.port
    port = base + svc.port - BASE_PORT
    if not 0 < port < 65536:
        raise ConfigError(f"bad configuration: RULESAGE_BASE_PORT={base}: {name} would land on port {port}")
    return port


def address(name: str) -> str:
    """Where a client finds service ``name``: $RULESAGE_<NAME>_ADDR, else localhost on its default port."""
    var = f"RULESAGE_{name.upper()}_ADDR"
    raw = os.environ.get(var, "").strip()
    if not raw:
        return f"127.0.0.1:{default_port(name)}"
    host, sep, port = raw.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"bad configuration: {var}={raw!r}: expected host:port")
    return raw
