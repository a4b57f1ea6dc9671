"""`rulesage up / down / status`: one command brings the mesh up on this machine.

``up`` starts Postgres (embedded unless DATABASE_URL is set), migrates, ingests the bundled demo shelf
when the database holds no game, starts each service as its own OS process on localhost, waits until every
health check says SERVING, then starts the gateway and prints its URL. It supervises the children: a crashed
service is restarted with exponential backoff and the restart is counted in ``rulesage status``. Ctrl-C,
SIGTERM or ``rulesage down`` stops everything and leaves no process behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from rulesage import db, mesh
from rulesage.config import ROOT, ConfigError, configured_database_url, state_dir

SERVICES = tuple(s.name for s in mesh.grpc_services())  # in the registry's start order
GATEWAY = mesh.gateway().name


def demo_shelf() -> Path:
    """The shelf `up` ingests into an empty database: the bundled demo ($RULESAGE_DEMO_SHELF overrides)."""
    return Path(os.environ.get("RULESAGE_DEMO_SHELF") or ROOT / "demo" / "shelf.toml")


START_TIMEOUT_S = 180.0


class LaunchError(RuntimeError):
    """The mesh could not come up; the message says what and why."""


# The answer service frees many mid-sized tensors per ask; after large frees glibc raises its mmap threshold
# and later ones come from (and fragment) the heap: its RSS drifted +12-13 % from minute 1 to minute 5 of the
# load bench. A fixed 256 KiB threshold hands them back to the kernel (then +0.7 %). Not for rerank: its 20-30
# MB head tensors would be mapped and faulted in on every request (rerank scoring p50 187 -> 415 ms).
ALLOCATOR = {"answer": {"MALLOC_MMAP_THRESHOLD_": "262144", "MALLOC_TRIM_THRESHOLD_": "524288"}}


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 0 < int(raw) < 65536:
        raise ConfigError(f"bad configuration: {name}={raw!r}: expected a port number")
    return int(raw)


def ports() -> dict[str, int]:
    """Every process's port on this machine, gateway included, from the registry."""
    return {name: mesh.default_port(name) for name in mesh.MESH}


def state_file() -> Path:
    return state_dir() / "mesh.json"


def logs_dir() -> Path:
    path = state_dir() / "logs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def grpc_health(addr: str, timeout: float = 1.0) -> str:
    """SERVING, NOT_SERVING, or DOWN (no answer)."""
    try:
        with grpc.insecure_channel(addr) as ch:
            resp = health_pb2_grpc.HealthStub(ch).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=timeout
            )
            return health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
    except grpc.RpcError:
        return "DOWN"


def http_health(url: str, timeout: float = 1.0) -> str:
    import httpx

    try:
        r = httpx.get(url + "/healthz", timeout=timeout)
        return "SERVING" if r.status_code == 200 else f"HTTP {r.status_code}"
    except httpx.HTTPError:
        return "DOWN"


@dataclass
class Child:
    name: str
    port: int
    cmd: list[str]
    proc: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    next_start: float = 0.0
    backoff: float = 1.0
    last_exit: int | None = None
    started_at: float = 0.0

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class MeshState:
    supervisor_pid: int
    database: str
    gateway_url: str
    state: str = "starting"  # starting | ready | stopping | failed
    error: str = ""
    services: dict[str, dict[str, Any]] = field(default_factory=dict)


class Supervisor:
    def __init__(self) -> None:
        self.ports = ports()
        self.children: dict[str, Child] = {}
        self.embedded = not configured_database_url()
        self.url = ""
        self.stopping = False
        self.state = MeshState(os.getpid(), "", f"http://127.0.0.1:{self.ports[GATEWAY]}")

    # -- state file -----------------------------------------------------------------------------------------
    def write_state(self) -> None:
        self.state.services = {
            c.name: {
                "address": c.addr if c.name != GATEWAY else self.state.gateway_url,
                "pid": c.proc.pid if c.proc and c.proc.poll() is None else None,
                "restarts": c.restarts,
                "last_exit": c.last_exit,
            }
            for c in self.children.values()
        }
        tmp = state_file().with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self.state), indent=2))
        tmp.replace(state_file())

    # -- children -------------------------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["DATABASE_URL"] = self.url
        env["RULESAGE_HOST"] = "127.0.0.1"
        env["PYTHONUNBUFFERED"] = "1"
        # glibc gives each allocating thread its own arena; two keep the model services' RSS from creeping
        env.setdefault("MALLOC_ARENA_MAX", "2")
        for name in SERVICES:
            env[f"RULESAGE_{name.upper()}_ADDR"] = f"127.0.0.1:{self.ports[name]}"
        return env

    def spawn(self, child: Child) -> None:
        env = self.env()
        env["RULESAGE_PORT"] = str(child.port)
        for key, value in ALLOCATOR.get(child.name, {}).items():
            env.setdefault(key, value)
        metrics = _int_env("RULESAGE_METRICS_PORT", 0)
        if metrics:  # one Prometheus endpoint per process: RULESAGE_METRICS_PORT + its place in the mesh
            env["RULESAGE_METRICS_PORT"] = str(metrics + list(mesh.MESH).index(child.name))
        log = (logs_dir() / f"{child.name}.log").open("ab")
        child.proc = subprocess.Popen(child.cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(ROOT))
        child.started_at = time.monotonic()
        log.close()

    def log_tail(self, name: str, chars: int = 1500) -> str:
        path = logs_dir() / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else ""

    def wait_ready(self, child: Child, deadline: float) -> None:
        while time.monotonic() < deadline:
            if child.proc is not None and child.proc.poll() is not None:
                code = child.proc.returncode
                raise LaunchError(
                    f"{child.name} exited with code {code} while starting:\n{self.log_tail(child.name)}"
                )
            status = http_health(self.state.gateway_url) if child.name == GATEWAY else grpc_health(child.addr)
            if status == "SERVING":
                return
            time.sleep(0.3)
        raise LaunchError(f"{child.name} did not become SERVING in time:\n{self.log_tail(child.name)}")

    # -- lifecycle ------------------------------------------------------------------------------------------
    def check_ports(self) -> None:
        taken = [f"{p} ({n})" for n, p in self.ports.items() if not port_free(p)]
        if taken:
            raise LaunchError(
                "port(s) already taken: "
                + ", ".join(taken)
                + ". Is another mesh running (`rulesage status`)? "
                "Set RULESAGE_BASE_PORT / RULESAGE_GATEWAY_PORT to use others."
            )

    def start_database(self) -> None:
        self.url = db.database_url(start_embedded=True)
        self.state.database = "embedded" if self.embedded else "DATABASE_URL"
        db.migrate(self.url)
        from rulesage.embed import identity

        with db.connection(self.url) as conn:
            games = conn.execute("SELECT count(*) FROM games").fetchone()
            space = conn.execute("SELECT model FROM embedding_space WHERE active").fetchone()
        empty = not games or games[0] == 0
        stale = space is not None and space[0] != identity().model
        if empty or stale:
            from rulesage.ingest.pipeline import ingest_shelf

            shelf = demo_shelf()
            why = (
                "empty database" if empty else f"embedding model changed to {identity().model}: re-embedding"
            )
            print(f"{why}; ingesting the demo shelf {shelf} ...", flush=True)
            summary = ingest_shelf(self.url, shelf, progress=True)
            print(f"demo shelf ingested: {summary.to_dict()}", flush=True)
        from rulesage.indexing import draw_all

        # a new shelf, a new reranker or embedder, or an older database: draw what is missing
        drawn = draw_all(self.url, progress=True)
        if any(drawn.values()):
            print("index-time work: " + ", ".join(f"{k} {v}" for k, v in drawn.items()), flush=True)

    def start(self) -> None:
        self.check_ports()
        self.write_state()
        self.start_database()
        for svc in mesh.MESH.values():
            self.children[svc.name] = Child(
                svc.name, self.ports[svc.name], [sys.executable, "-m", svc.module]
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        for name in SERVICES:  # start all at once: the model loads overlap
            self.spawn(self.children[name])
        for name in SERVICES:
            self.wait_ready(self.children[name], deadline)
            print(f"  {name:8s} SERVING on {self.children[name].addr}", flush=True)
        self.spawn(self.children[GATEWAY])
        self.wait_ready(self.children[GATEWAY], deadline)
        self.state.state = "ready"
        self.write_state()
        print(f"RuleSage is up: {self.state.gateway_url}", flush=True)

    def supervise(self) -> None:
        """Restart crashed children with backoff until asked to stop."""
        while not self.stopping:
            now = time.monotonic()
            for child in self.children.values():
                if child.proc is None or child.proc.poll() is None:
                    continue
                if child.next_start == 0.0:
                    child.last_exit = child.proc.returncode
                    child.next_start = now + child.backoff
                    print(
                        f"{child.name} exited ({child.last_exit}); restarting in {child.backoff:.0f}s",
                        flush=True,
                    )
                    child.backoff = min(child.backoff * 2, 30.0)
                    self.write_state()
                elif now >= child.next_start:
                    child.restarts += 1
                    child.next_start = 0.0
                    self.spawn(child)
                    self.write_state()
            for child in self.children.values():  # a child that stayed up a minute earns a fresh backoff
                if child.proc is not None and child.proc.poll() is None and now - child.started_at > 60:
                    child.backoff = 1.0
            time.sleep(0.5)

    def stop(self, grace: float = 10.0) -> None:
        self.stopping = True
        self.state.state = "stopping"
        with contextlib.suppress(OSError):
            self.write_state()
        order = [GATEWAY, *reversed(SERVICES)]
        procs = [self.children[n].proc for n in order if n in self.children]
        for p in procs:
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        end = time.monotonic() + grace
        for p in procs:
            if p is None:
                continue
            try:
                p.wait(max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        if self.embedded:
            db.stop_embedded()
        with contextlib.suppress(FileNotFoundError):
            state_file().unlink()


def up_foreground() -> int:
    sup = Supervisor()

    def on_signal(signum: int, _frame: Any) -> None:
        sup.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        sup.start()
        if not sup.stopping:
            sup.supervise()
        print("stopping RuleSage ...", flush=True)
        return 0
    except (LaunchError, db.DatabaseError, ConfigError) as exc:
        sup.state.state = "failed"
        sup.state.error = str(exc)
        print(f"rulesage up failed: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        failed = sup.state.state == "failed"
        sup.stop()
        if failed:  # leave the reason for `rulesage up --detach` to print
            (state_dir() / "last-error.txt").write_text(sup.state.error)


def read_state() -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(state_file().read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if not _alive(int(data.get("supervisor_pid", 0))):
        return None
    return data


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


# `up --detach` waits as long as the supervisor keeps writing (a progress bar redraws several times a
# second while the demo shelf is read; each step prints a line): silence this long, and not ready, is a stall.
STALL_S = 300.0
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def last_step(log_tail: str) -> str:
    """The supervisor's latest word: the last non-empty line or progress-bar frame of its log."""
    frames = [f.strip() for f in re.split(r"[\r\n]", _ANSI.sub("", log_tail))]
    return next((f for f in reversed(frames) if f), "")


def _step_name(step: str) -> str:
    """What a step is called, without its changing counts ("ingest:  35%|...| 6/17" -> "ingest")."""
    return step.split(":", 1)[0].strip()[:40]


def _read_tail(path: Path, chars: int = 4096) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - chars))
            return fh.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def wait_until_ready(
    proc: Any,
    log_path: Path,
    out: TextIO,
    err: TextIO,
    *,
    on_stall: Any = None,
    stall_s: float = STALL_S,
    poll_s: float = 0.5,
    state: Any = None,
    clock: Any = time.monotonic,
    sleep: Any = time.sleep,
) -> int:
    """Wait for the supervisor ``proc`` to report the mesh ready, showing its progress on ``err`` (one
    redrawn line on a terminal, a line per step otherwise). Fails when the supervisor exits (with its
    error) or writes nothing for ``stall_s`` (naming its last step; ``on_stall`` is called first).
    ``clock`` and ``sleep`` are the monotonic clock and the pause between looks (a test drives both)."""
    read = state or read_state
    tty = err.isatty()
    size, last_change, shown = -1, clock(), ""
    printed_at = 0.0
    while True:
        if proc.poll() is not None:
            error_file = state_dir() / "last-error.txt"
            reason = error_file.read_text() if error_file.exists() else _read_tail(log_path, 2000)
            print(("\n" if tty and shown else "") + f"rulesage up failed: {reason}", file=err)
            return 1
        st = read()
        if st and st.get("state") == "ready":
            if tty and shown:
                print("\r\x1b[K", end="", file=err, flush=True)
            print(f"RuleSage is up: {st['gateway_url']}", file=out)
            return 0
        try:
            now_size = log_path.stat().st_size
        except OSError:
            now_size = 0
        now = clock()
        if now_size != size:
            size, last_change = now_size, now
            step = last_step(_read_tail(log_path))
            if step and step != shown:
                if tty:
                    print("\r\x1b[K" + step[:110], end="", file=err, flush=True)
                elif _step_name(step) != _step_name(shown) or now - printed_at > 30:
                    print(f"  {step[:110]}", file=err, flush=True)
                    printed_at = now
                shown = step
        elif now - last_change > stall_s:
            if on_stall is not None:
                on_stall()
            print(
                ("\n" if tty and shown else "")
                + f"rulesage up: stalled: nothing new from the supervisor for {stall_s:.0f} s"
                + f" (last: {shown or 'nothing written'}); it was stopped. See {log_path}",
                file=err,
            )
            return 1
        sleep(poll_s)


def _stop_stalled(proc: subprocess.Popen[bytes]) -> None:
    """Stop a stalled supervisor with everything it started (its own session: one process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    with contextlib.suppress(FileNotFoundError):
        state_file().unlink()
    if not configured_database_url():
        db.stop_embedded()


def up_detached(out: TextIO = sys.stdout) -> int:
    """Start the supervisor in the background and return once the mesh is ready, showing its progress on
    stderr; notices go to ``out`` (a command that prints JSON sends them to stderr). It waits as long as
    the supervisor makes progress (the first up exports the model and reads the demo shelf)."""
    if read_state() is not None:
        print("RuleSage is already running: see `rulesage status`", file=sys.stderr)
        return 1
    with contextlib.suppress(FileNotFoundError):
        (state_dir() / "last-error.txt").unlink()
    log_path = logs_dir() / "supervisor.log"
    log = log_path.open("ab")
    proc = subprocess.Popen(
        [sys.executable, "-m", "rulesage.cli", "up"],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=str(ROOT),
    )
    log.close()
    return wait_until_ready(proc, log_path, out, sys.stderr, on_stall=lambda: _stop_stalled(proc))


def down(timeout: float = 60.0, out: TextIO = sys.stdout) -> int:
    st = read_state()
    if st is None:
        stopped_db = db.stop_embedded() if not configured_database_url() else False
        print(
            "RuleSage is not running" + (" (stopped a leftover embedded Postgres)" if stopped_db else ""),
            file=out,
        )
        return 0
    pid = int(st["supervisor_pid"])
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + timeout
    while time.monotonic() < end and _alive(pid):
        time.sleep(0.2)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    for svc in st.get("services", {}).values():  # belt and braces: nothing may outlive `down`
        child = svc.get("pid")
        if child and _alive(int(child)):
            os.kill(int(child), signal.SIGKILL)
    print("RuleSage stopped", file=out)
    return 0


def status() -> dict[str, Any]:
    st = read_state()
    if st is None:
        return {"running": False, "gateway_url": None, "services": {}}
    services = {}
    for name, svc in st.get("services", {}).items():
        addr = svc["address"]
        health = http_health(addr) if name == GATEWAY else grpc_health(addr)
        services[name] = {**svc, "health": health}
    return {
        "running": True,
        "state": st.get("state"),
        "database": st.get("database"),
        "gateway_url": st.get("gateway_url"),
        "services": services,
    }
