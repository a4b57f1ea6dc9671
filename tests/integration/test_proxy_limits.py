"""The guards key on the player, behind a real reverse proxy: Debian's nginx on loopback in front of two real
gateway processes (two replicas, round robin) sharing one Postgres.

- Two players (the client binds 127.0.0.2 and 127.0.0.3 as its source address; nginx appends what it saw to
  X-Forwarded-For) get two rate-limit buckets.
- Each player's bucket is shared by both replicas: the configured limit holds, not limit x replicas.
- A spoofed X-Forwarded-For is ignored: sent through nginx (it sits left of the address nginx appends), and
  sent straight to a gateway from an address outside RULESAGE_FORWARDED_ALLOW_IPS.
- One player's wrong admin tokens lock out that player, not the admin on another address.

Every request is bounded (a timeout), and the whole test makes a fixed, small number of them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.gateway_fixtures import seed_shelf, throwaway_database

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
if NGINX is None:
    pytest.skip(
        "needs nginx (apt-get install nginx-light; scripts/bootstrap.sh does it with RULESAGE_SYSTEM_DEPS=1)",
        allow_module_level=True,
    )

RATE = 3  # asks per minute per player
GAME = "dnd-5e-srd"
TOKEN = "proxy-admin-token"
TIMEOUT = httpx.Timeout(15.0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, f"{what} exited with {proc.returncode}"
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, f"{what} did not come up"
        time.sleep(0.2)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def mesh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    tmp = tmp_path_factory.mktemp("proxy")
    dead = f"127.0.0.1:{_free_port()}"
    procs: list[subprocess.Popen[bytes]] = []
    with throwaway_database() as url:
        seed_shelf(url)
        gateways = []
        try:
            for n in range(2):
                port = _free_port()
                env = {
                    **os.environ,
                    "PYTHONPATH": str(ROOT),
                    "DATABASE_URL": url,
                    "RULESAGE_HOST": "127.0.0.1",
                    "RULESAGE_PORT": str(port),
                    "RULESAGE_METRICS_PORT": "0",
                    "RULESAGE_ASK_RATE": f"{RATE}/minute",
                    "RULESAGE_LOGIN_RATE": "2/hour",
                    "RULESAGE_ADMIN_TOKEN": TOKEN,
                    "RULESAGE_SESSION_SECRET": "shared-by-both-replicas",
                    "RULESAGE_SWEEP_INTERVAL_S": "0",
                    # only nginx, on 127.0.0.1, is a trusted proxy
                    "RULESAGE_FORWARDED_ALLOW_IPS": "127.0.0.1",
                    "RULESAGE_STATE_DIR": str(tmp / f"gw{n}"),
                    **{f"RULESAGE_{s}_ADDR": dead for s in ("FUSION", "RERANK", "ANSWER", "DOORMAN")},
                }
                log = (tmp / f"gateway{n}.log").open("wb")
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "gateway"], cwd=ROOT, env=env, stdout=log, stderr=log
                    )
                )
                gateways.append(f"127.0.0.1:{port}")
            for g, p in zip(gateways, procs, strict=True):
                _wait_http(f"http://{g}/healthz", p, f"gateway {g}")

            proxy_port = _free_port()
            conf = tmp / "nginx.conf"
            conf.write_text(
                f"""
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {tmp}/nginx-access.log;
    client_body_temp_path {tmp}/body; proxy_temp_path {tmp}/proxy; fastcgi_temp_path {tmp}/fcgi;
    uwsgi_temp_path {tmp}/uwsgi; scgi_temp_path {tmp}/scgi;
    client_max_body_size 64k;
    upstream gateways {{ server {gateways[0]}; server {gateways[1]}; }}
    server {{
        listen 127.0.0.1:{proxy_port};
        location / {{
            proxy_pass http://gateways;
            proxy_connect_timeout 5s;
            proxy_read_timeout 30s;
            proxy_set_header Host $host;
            # what nginx (and ingress-nginx) does: append the address it saw to whatever the client sent
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
}}
"""
            )
            nginx = subprocess.Popen([NGINX, "-p", str(tmp), "-c", str(conf), "-g", "daemon off;"])
            procs.append(nginx)
            _wait_http(f"http://127.0.0.1:{proxy_port}/healthz", nginx, "nginx")
            yield {
                "proxy": f"http://127.0.0.1:{proxy_port}",
                "gateway": f"http://{gateways[0]}",
                "tmp": str(tmp),
            }
        finally:
            for p in reversed(procs):
                _stop(p)


def _player(source: str) -> httpx.Client:
    """A client whose connections come from ``source`` (any 127.x address is local on Linux)."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=source), timeout=TIMEOUT)


def _ask(c: httpx.Client, base: str, headers: dict[str, str] | None = None) -> int:
    # an empty question: counted by the limiter, then refused (400) before the road; past the limit, 429
    return c.post(f"{base}/api/ask", json={"game": GAME, "question": ""}, headers=headers or {}).status_code


def test_two_players_behind_the_proxy_get_two_buckets_shared_by_both_replicas(mesh: dict[str, str]) -> None:
    proxy = mesh["proxy"]
    with _player("127.0.0.2") as alice, _player("127.0.0.3") as bob:
        # round robin: alice's asks land on both replicas, and the limit is still RATE, not 2 x RATE
        assert [_ask(alice, proxy) for _ in range(RATE + 1)] == [400] * RATE + [429]
        # bob has his own bucket
        assert [_ask(bob, proxy) for _ in range(RATE)] == [400] * RATE
        assert _ask(bob, proxy) == 429
    access = (Path(mesh["tmp"]) / "nginx-access.log").read_text()
    assert "127.0.0.2" in access and "127.0.0.3" in access  # the proxy really saw two addresses


def test_a_spoofed_forwarded_for_is_ignored(mesh: dict[str, str]) -> None:
    with _player("127.0.0.4") as mallory:
        # through the proxy: the header's entries sit left of the address nginx appends, and are not believed
        codes = [_ask(mallory, mesh["proxy"], {"X-Forwarded-For": f"203.0.113.{i}"}) for i in range(RATE + 2)]
        assert codes == [400] * RATE + [429, 429]
        # straight to a gateway from an address outside the trusted set: the header is ignored, the
        # connection's own address (127.0.0.4) is the key, and that bucket is already full
        direct = _ask(mallory, mesh["gateway"], {"X-Forwarded-For": "198.51.100.7"})
        assert direct == 429
    with _player("127.0.0.5") as carol:  # a fresh player is not caught in mallory's bucket
        assert _ask(carol, mesh["proxy"]) == 400


def test_wrong_admin_tokens_lock_out_that_player_not_the_admin(mesh: dict[str, str]) -> None:
    proxy = mesh["proxy"]

    def login(c: httpx.Client, token: str) -> int:
        page = c.get(f"{proxy}/admin/login")
        csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        return c.post(f"{proxy}/admin/login", data={"token": token, "csrf": csrf}).status_code

    with _player("127.0.0.6") as guesser, _player("127.0.0.7") as admin:
        assert [login(guesser, f"guess{i}") for i in range(3)] == [401, 401, 429]
        assert login(admin, TOKEN) == 303  # the admin, on another address, still gets in
