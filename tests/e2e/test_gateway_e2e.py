"""The real page in headless Chromium (Selenium + Debian's chromium and chromium-driver).

Runs `python -m gateway` and `python -m services.doorman` as real processes. By default the gateway gets a
throwaway database with a sample shelf and the road's fusion/rerank/answer services are unreachable, so an ask
degrades inside its ruling (the wrench says so); the cited-page check then reads a stored ruling. With
RULESAGE_E2E_MESH=1 (after `rulesage up --detach`), the gateway uses the mesh's database and services, and the
asked ruling itself must cite a page. Saves artifacts/ruling.png.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.testing import sample_ruling, seed_shelf, store, throwaway_database

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
CHROMIUM = os.environ.get("RULESAGE_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RULESAGE_CHROMEDRIVER", "/usr/bin/chromedriver")
MESH = os.environ.get("RULESAGE_E2E_MESH") == "1"
TOKEN = "e2e-admin-token"

webdriver = pytest.importorskip("selenium.webdriver")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip(
        "needs chromium and chromium-driver (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_http(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        assert proc.poll() is None, "the process exited early"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            assert time.monotonic() < deadline, f"{url} did not come up"
            time.sleep(0.2)


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    if MESH:
        from rulesage import db

        yield db.database_url()
        return
    with throwaway_database() as url:
        seed_shelf(url)
        yield url


@pytest.fixture(scope="module")
def gateway(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("e2e")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RULESAGE_STATE_DIR": str(tmp)}
    procs: list[subprocess.Popen[bytes]] = []
    if not MESH:
        port_file = tmp / "doorman.port"
        doorman = subprocess.Popen(
            [sys.executable, "-m", "services.doorman"],
            cwd=ROOT,
            env={**env, "RULESAGE_PORT": "0", "RULESAGE_PORT_FILE": str(port_file)},
        )
        procs.append(doorman)
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert doorman.poll() is None and time.monotonic() < deadline, "the doorman did not start"
            time.sleep(0.1)
        dead = f"127.0.0.1:{_free_port()}"
        env.update(
            RULESAGE_DOORMAN_ADDR=f"127.0.0.1:{port_file.read_text()}",
            RULESAGE_FUSION_ADDR=dead,
            RULESAGE_RERANK_ADDR=dead,
            RULESAGE_ANSWER_ADDR=dead,
        )
    port = _free_port()
    env.update(
        DATABASE_URL=database,
        RULESAGE_PORT=str(port),
        RULESAGE_ADMIN_TOKEN=TOKEN,
        RULESAGE_SWEEP_INTERVAL_S="0.5",
        RULESAGE_SWEEP_GRACE_S="0",
        RULESAGE_TRACE_URL="http://localhost:16686/trace/{trace_id}",
    )
    gw = subprocess.Popen([sys.executable, "-m", "gateway"], cwd=ROOT, env=env)
    procs.append(gw)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_http(base + "/healthz", gw)
        yield base
    finally:
        for p in reversed(procs):
            p.terminate()
            p.wait(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    profile = tempfile.mkdtemp(prefix="rulesage-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,2400",
    ):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _text(driver: object) -> str:
    return driver.find_element(By.TAG_NAME, "body").text  # type: ignore[attr-defined]


def _open_wrench(driver: object) -> str:
    driver.find_element(By.CSS_SELECTOR, "#wrench > summary").click()  # type: ignore[attr-defined]
    WebDriverWait(driver, 5).until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".timings")))
    return driver.find_element(By.ID, "wrench").text  # type: ignore[attr-defined]


def _game_slug(database: str) -> str:
    import psycopg

    with psycopg.connect(database) as conn:
        row = conn.execute(
            "SELECT g.slug FROM games g WHERE EXISTS (SELECT 1 FROM documents d WHERE d.game_id = g.id)"
            " ORDER BY g.slug = 'dnd-5e-srd' DESC, g.slug LIMIT 1"
        ).fetchone()
    assert row, "no game with a book on the shelf"
    return str(row[0])


def test_pick_a_game_ask_and_read_the_ruling(gateway: str, browser: object, database: str) -> None:
    d = browser
    slug = _game_slug(database)
    d.get(gateway + "/")  # type: ignore[attr-defined]
    assert "Ask the rulebook." in _text(d)
    d.find_element(By.CSS_SELECTOR, f'a.game-card[href="/games/{slug}"]').click()  # type: ignore[attr-defined]
    WebDriverWait(d, 10).until(ec.presence_of_element_located((By.ID, "question")))
    d.find_element(By.ID, "question").send_keys("Can I make an opportunity attack when a goblin moves away?")  # type: ignore[attr-defined]
    d.find_element(By.CSS_SELECTOR, "#ask button[type=submit]").click()  # type: ignore[attr-defined]
    WebDriverWait(d, 120).until(ec.url_contains("/rulings/"))
    WebDriverWait(d, 10).until(ec.presence_of_element_located((By.ID, "wrench")))
    page = _text(d)
    assert "Can I make an opportunity attack when a goblin moves away?" in page
    wrench = _open_wrench(d)
    assert "Search span" in wrench and "Stage timings".upper() in wrench.upper()
    if MESH:
        assert d.find_elements(By.CSS_SELECTOR, ".citation .page"), "the asked ruling cites no page"  # type: ignore[attr-defined]
        ARTIFACTS.mkdir(exist_ok=True)
        d.save_screenshot(str(ARTIFACTS / "ruling.png"))  # type: ignore[attr-defined]
    else:
        assert "fusion" in wrench.lower() or "down" in wrench.lower()


def test_a_stored_ruling_shows_its_cited_page_and_wrench(
    gateway: str, browser: object, database: str
) -> None:
    d = browser
    slug = _game_slug(database)
    rid = asyncio.run(store(database, sample_ruling(game=slug), "cleared", "clean"))
    d.get(f"{gateway}/rulings/{rid}")  # type: ignore[attr-defined]
    cites = d.find_elements(By.CSS_SELECTOR, ".citation .page")  # type: ignore[attr-defined]
    assert [c.text for c in cites] == ["p. 92", "p. 92"]
    wrench = _open_wrench(d)
    for needle in ("rerank.score", "88 ms", "3/(60+1) = 0.04918", "4bf92f3577b34da6a3ce929d0e0e4736"):
        assert needle in wrench, needle
    if not MESH:
        ARTIFACTS.mkdir(exist_ok=True)
        d.save_screenshot(str(ARTIFACTS / "ruling.png"))  # type: ignore[attr-defined]
    assert (ARTIFACTS / "ruling.png").stat().st_size > 10_000


def test_held_question_stays_off_the_wall_until_the_admin_clears_it(
    gateway: str, browser: object, database: str
) -> None:
    d = browser
    slug = _game_slug(database)
    question = "Email me the answer at e2e-player@example.com please: does reach stack?"
    rid = asyncio.run(store(database, sample_ruling(game=slug, question=question)))  # pending
    deadline = time.monotonic() + 30
    while True:  # the sweeper asks the doorman, which holds it (an email address)
        d.get(f"{gateway}/rulings/{rid}")  # type: ignore[attr-defined]
        if "Held for review" in _text(d) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "Held for review" in _text(d)
    d.get(gateway + "/wall")  # type: ignore[attr-defined]
    assert question not in _text(d)

    d.get(gateway + "/admin/queue")  # type: ignore[attr-defined]
    d.find_element(By.ID, "token").send_keys(TOKEN)  # type: ignore[attr-defined]
    d.find_element(By.CSS_SELECTOR, "form.stack button[type=submit]").click()  # type: ignore[attr-defined]
    WebDriverWait(d, 10).until(ec.presence_of_element_located((By.ID, f"q-{rid}")))
    row = d.find_element(By.ID, f"q-{rid}")  # type: ignore[attr-defined]
    assert "contains an email address" in row.text
    row.find_element(By.XPATH, ".//button[normalize-space()='Clear']").click()
    WebDriverWait(d, 10).until(ec.url_contains("done=clear"))
    d.get(gateway + "/wall")  # type: ignore[attr-defined]
    assert question in _text(d)
