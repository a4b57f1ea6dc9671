"""Faults on the real mesh: `rulesage up --detach` on a fresh state folder (its own embedded Postgres, the
tiny shelf), players asking through the gateway's POST /api/ask the whole time, and each service killed
with SIGKILL in turn — lexical, dense, aisle, fusion, rerank, answer, doorman — then Postgres itself.

What must hold:
- every ask gets a stored ruling, or a clear refusal (JSON {"error": ...}, no stack trace); a degraded ruling
  says in its wrench which stage was missing and why, and invents nothing (no citation without the answering
  stage; every citation verbatim in its passage);
- the ask right after a kill shows that stage missing; the launcher restarts the service, `rulesage status
  --json` counts the restart, and asks come back whole;
- the doorman down means held, never published (never on the wall);
- Postgres killed and restarted: the services reconnect by themselves (same pids, no restart) and asks
  succeed again;
- no ruling that was accepted (returned with an id) is lost: all are re-read from the database at the end.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from rulesage import mesh as mesh_registry
from rulesage.core.text import find_quote
from tests.support.isolated_mesh import FIXTURES, IsolatedMesh, isolated_mesh

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SERVICES = tuple(s.name for s in mesh_registry.grpc_services())
ARMS = tuple(s.name for s in mesh_registry.arms())
QUESTIONS = [
    ("solitaire-golf", "what is the goal of golf?"),
    ("solitaire-klondike", "can I move a king to an empty tableau pile?"),
    ("solitaire-golf", "which cards can I put on the foundation?"),
    ("solitaire-klondike", "how many cards do I deal from the stock?"),
]
ASK_TIMEOUT_S = 90.0


@dataclass
class Asked:
    """One POST /api/ask and what came back."""

    game: str
    question: str
    started: float
    ended: float
    status: int  # 0: no HTTP answer at all
    body: dict[str, Any]
    note: str = ""

    @property
    def ruling(self) -> dict[str, Any] | None:
        return self.body if self.status == 201 else None


@dataclass
class Mesh:
    """The isolated mesh under test, the asks made of it, and its database."""

    iso: IsolatedMesh
    db_url: str = ""
    log: list[Asked] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def env(self) -> dict[str, str]:
        return self.iso.env

    @property
    def state(self) -> Path:
        return self.iso.state

    @property
    def gateway(self) -> str:
        return self.iso.gateway_url

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return self.iso.cli(*args, timeout=timeout)

    def status(self) -> dict[str, Any]:
        return self.iso.status(timeout=60)

    def ask(self, client: httpx.Client, game: str, question: str, note: str = "") -> Asked:
        t0 = time.monotonic()
        try:
            r = client.post(f"{self.gateway}/api/ask", json={"game": game, "question": question})
            status, text = r.status_code, r.text
        except httpx.HTTPError as exc:
            status, text = 0, json.dumps({"transport": f"{type(exc).__name__}: {exc}"})
        try:
            body = json.loads(text)
        except json.JSONDecodeError:
            body = {"unparsed": text[:2000]}
        asked = Asked(game, question, t0, time.monotonic(), status, body, note)
        with self.lock:
            self.log.append(asked)
        return asked

    def ask_once(self, note: str = "", i: int = 0) -> Asked:
        game, question = QUESTIONS[i % len(QUESTIONS)]
        with httpx.Client(timeout=ASK_TIMEOUT_S) as c:
            return self.ask(c, game, question, note)

    def sql(self, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.db_url, autocommit=True, connect_timeout=5) as conn:
            return conn.execute(query, args).fetchall()  # type: ignore[arg-type]


class Players:
    """A few players asking in a loop on their own threads until stopped."""

    def __init__(self, mesh: Mesh, n: int = 2) -> None:
        self.mesh = mesh
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._play, args=(i,), daemon=True) for i in range(n)]

    def _play(self, i: int) -> None:
        with httpx.Client(timeout=ASK_TIMEOUT_S) as c:
            k = i
            while not self.stop.is_set():
                game, question = QUESTIONS[k % len(QUESTIONS)]
                asked = self.mesh.ask(c, game, question, note="player")
                k += 1
                if asked.status != 201:
                    self.stop.wait(0.5)  # a refused ask: do not spin

    def __enter__(self) -> Players:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(ASK_TIMEOUT_S + 5)


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mesh]:
    tiny = FIXTURES / "tiny-shelf.toml"
    with isolated_mesh(tmp_path_factory.mktemp("faults"), tiny, RULESAGE_ASK_RATE="100000/minute") as iso:
        m = Mesh(iso)
        try:
            m.db_url = db_uri(m)
            with Players(m):
                yield m
        finally:
            down = m.cli("down")
            assert down.returncode == 0, down.stderr


def db_uri(m: Mesh) -> str:
    """The mesh's embedded Postgres URI (starting it when it is down), from a process of its own."""
    code = "from rulesage import db; print(db.embedded_uri())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=m.env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-1500:])
    return out.stdout.strip().splitlines()[-1]


# -- what every answer must look like ----------------------------------------------------------------------


def check_honest(a: Asked) -> None:
    """A stored ruling that invents nothing and names what was missing, or a clear refusal."""
    assert "Traceback" not in json.dumps(a.body), a.body
    if a.status != 201:
        assert a.status in (400, 429, 500, 502, 503, 504), (a.status, a.body)
        assert isinstance(a.body.get("error"), str) and a.body["error"], (a.status, a.body)
        return
    r = a.body
    assert r["id"] and r["verdict"] in ("answered", "not_in_book", "unavailable"), r
    w = r["wrench"]
    for stage in ("fusion", "rerank", "answer"):
        part = w.get(stage) or {}
        if part.get("state") not in (None, "ok"):
            assert part.get("detail"), f"{stage} missing without a reason: {part}"
    for arm in w.get("arms", []):
        if arm["state"] != "ok":
            assert arm["detail"], f"arm {arm['arm']} missing without a reason"
    if (w.get("answer") or {}).get("state") != "ok":
        assert r["verdict"] != "answered" and r["citations"] == [], "citations without the answering stage"
    if r["verdict"] == "answered":
        assert r["citations"], "an answer without a citation"
    texts = {p["id"]: p["text"] for p in r["passages"]}
    for c in r["citations"]:
        assert c["passage_id"] in texts, c
        assert find_quote(texts[c["passage_id"]], c["quote"]) is not None, f"quote not verbatim: {c}"


def wrench_state(r: dict[str, Any], stage: str) -> str:
    w = r["wrench"]
    if stage in ARMS:
        arms = {a["arm"]: a["state"] for a in w.get("arms", [])}
        return arms.get(stage, "absent")
    return str((w.get(stage) or {}).get("state", "absent"))


def whole(a: Asked) -> bool:
    """A ruling where every stage and arm took part."""
    r = a.ruling
    if r is None:
        return False
    stages = (*ARMS, "fusion", "rerank", "answer")
    return all(wrench_state(r, s) == "ok" for s in stages)


def wait_for(what: str, probe: Callable[[], Any], timeout: float, every: float = 0.5) -> Any:
    end = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < end:
        last = probe()
        if last:
            return last
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def ruling_state(m: Mesh, rid: str) -> tuple[str, str]:
    r = httpx.get(f"{m.gateway}/api/rulings/{rid}", timeout=30).json()
    return r["public_state"], r["public_reason"]


def wall_ids(m: Mesh) -> set[str]:
    r = httpx.get(f"{m.gateway}/api/wall", timeout=30).json()
    return {x["id"] for x in r["rulings"]}


# -- the tests --------------------------------------------------------------------------------------------


def test_mesh_answers_whole_before_any_fault(mesh: Mesh) -> None:
    a = wait_for("a whole ruling", lambda: (lambda x: x if whole(x) else None)(mesh.ask_once("warm")), 60)
    check_honest(a)
    assert a.body["public_state"] == "pending"
    state, reason = wait_for(
        "the doorman's decision",
        lambda: (lambda s: s if s[0] != "pending" else None)(ruling_state(mesh, a.body["id"])),
        30,
    )
    assert state == "cleared", reason


def expect_missing(name: str, a: Asked) -> None:
    """The ask right after ``name`` was killed: that stage is missing, with its reason, nothing invented."""
    check_honest(a)
    r = a.ruling
    assert r is not None, f"{name} down: the ask should still give a stored ruling, got {a.status} {a.body}"
    if name == "doorman":
        return  # the road never calls the doorman; see test_doorman_down_means_held
    assert wrench_state(r, name) != "ok", f"{name} was down but the wrench says ok"
    if name == "dense":
        for arm in ARMS:
            if mesh_registry.get(arm).needs_vectors and arm != "dense":
                assert wrench_state(r, arm) != "ok", f"{arm} needs the question's vector from dense"
    if name in ARMS:
        assert wrench_state(r, "fusion") == "ok" and r["passages"], "one arm down must not stop the search"
    if name == "fusion":
        assert r["verdict"] == "unavailable" and r["passages"] == [] and wrench_state(r, "rerank") != "ok"
    if name == "rerank":
        assert r["passages"] and "fused order" in r["wrench"]["rerank"]["detail"]
    if name == "answer":
        assert r["verdict"] == "unavailable" and r["passages"], "the passages found are still shown"


@pytest.mark.parametrize("name", SERVICES)
def test_killed_service_degrades_then_comes_back(mesh: Mesh, name: str) -> None:
    before = mesh.status()["services"][name]
    assert before["health"] == "SERVING" and before["pid"]
    os.kill(before["pid"], signal.SIGKILL)
    hit = mesh.ask_once(f"{name} killed")
    expect_missing(name, hit)
    if name == "doorman":
        state, reason = wait_for(
            "the screening",
            lambda: (lambda s: s if s[0] != "pending" else None)(ruling_state(mesh, hit.body["id"])),
            30,
        )
        assert state == "held" and "doorman" in reason, (state, reason)

    def restarted() -> dict[str, Any] | None:
        svc = mesh.status()["services"][name]
        ok = svc["restarts"] >= before["restarts"] + 1 and svc["health"] == "SERVING"
        return svc if ok else None

    after = wait_for(f"the launcher to restart {name}", restarted, 90, every=1)
    assert after["pid"] != before["pid"] and after["last_exit"] == -signal.SIGKILL
    t0 = time.monotonic()
    back = wait_for(
        f"a whole ruling after {name} came back",
        lambda: (lambda x: x if whole(x) else None)(mesh.ask_once(f"{name} back")),
        45,
        every=0.2,
    )
    check_honest(back)
    print(f"{name}: whole again {time.monotonic() - t0:.1f}s after SERVING")


def test_doorman_down_means_held_never_published(mesh: Mesh) -> None:
    """Every ruling the doorman could not screen is held, and none of them is on the wall."""
    rows = mesh.sql(
        "SELECT id, public_state FROM rulings WHERE public_reason LIKE %s", ("doorman unavailable%",)
    )
    assert rows, "the doorman kill left no unscreened ruling (the kill test should have made one)"
    assert {s for _, s in rows} == {"held"}
    assert not wall_ids(mesh) & {rid for rid, _ in rows}


def test_postgres_killed_then_back_services_reconnect(mesh: Mesh) -> None:
    before = mesh.status()["services"]
    pid = int((mesh.state / "pgdata" / "postmaster.pid").read_text().split()[0])
    os.kill(pid, signal.SIGKILL)
    wait_for("the postmaster to die", lambda: not Path(f"/proc/{pid}").exists(), 10, every=0.1)
    down = mesh.ask_once("postgres down")
    check_honest(down)
    assert down.status != 201, "a ruling cannot be stored while Postgres is down"
    # restart the server the way `rulesage up` starts it (retrying while its orphaned backends exit)
    wait_for("Postgres to start again", lambda: _try(lambda: db_uri(mesh)), 90, every=1)
    t0 = time.monotonic()
    back = wait_for(
        "a whole ruling after Postgres came back",
        lambda: (lambda x: x if whole(x) else None)(mesh.ask_once("postgres back")),
        60,
        every=0.5,
    )
    check_honest(back)
    print(f"postgres: whole again {time.monotonic() - t0:.1f}s after it restarted")
    after = mesh.status()["services"]
    for name in SERVICES:  # reconnected by themselves: nobody was restarted
        assert after[name]["pid"] == before[name]["pid"], f"{name} was restarted"
        assert after[name]["restarts"] == before[name]["restarts"], name
        assert after[name]["health"] == "SERVING", name


def test_database_outage_is_a_clear_503(mesh: Mesh) -> None:
    downs = [a for a in mesh.log if a.note == "postgres down"]
    assert downs, "the Postgres test did not run"
    a = downs[0]
    assert a.status == 503 and "database" in a.body["error"].lower(), (a.status, a.body)


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:
        return None


def test_every_answer_was_honest_and_no_accepted_ruling_is_lost(mesh: Mesh) -> None:
    time.sleep(1)  # let the players' last asks land
    with mesh.lock:
        log = list(mesh.log)
    assert len(log) >= 20, f"only {len(log)} asks ran"
    for a in log:
        check_honest(a)
    accepted = {a.body["id"] for a in log if a.status == 201}
    assert len(accepted) >= 15
    stored = {r[0] for r in mesh.sql("SELECT id FROM rulings WHERE id = ANY(%s)", (list(accepted),))}
    assert accepted == stored, f"lost: {sorted(accepted - stored)}"
    refused = [(a.note, a.status, a.body.get("error", a.body)) for a in log if a.status != 201]
    print(f"{len(log)} asks, {len(accepted)} accepted and all re-read; refused: {refused}")
