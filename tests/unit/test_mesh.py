"""The one registry of the mesh: it names every service folder, and every consumer reads it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rulesage import launcher, mesh
from rulesage.cli import build_parser
from rulesage.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_every_service_folder_is_registered_and_every_entry_has_its_folder() -> None:
    folders = {d.name for d in (ROOT / "services").iterdir() if (d / "server.py").exists()}
    registered = {s.name for s in mesh.grpc_services()}
    assert folders == registered
    for svc in mesh.MESH.values():
        assert (ROOT / Path(*svc.module.split(".")) / "__main__.py").exists(), svc
        assert callable(svc.factory()), svc


def test_ports_are_declared_not_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RULESAGE_BASE_PORT", raising=False)  # the declared default, whatever the shell set
    ports = [s.port for s in mesh.MESH.values()]
    assert len(set(ports)) == len(ports)
    assert {s.name for s in mesh.grpc_services()} == set(launcher.SERVICES)
    assert mesh.default_port("aisle") == 50063


def test_base_port_moves_the_block_and_keeps_each_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULESAGE_BASE_PORT", "40000")
    monkeypatch.setenv("RULESAGE_GATEWAY_PORT", "9000")
    assert {n: mesh.default_port(n) for n in mesh.MESH} == {
        s.name: (9000 if s.role is mesh.Role.GATEWAY else 40000 + s.port - mesh.BASE_PORT)
        for s in mesh.MESH.values()
    }
    assert launcher.ports() == {n: mesh.default_port(n) for n in mesh.MESH}
    monkeypatch.setenv("RULESAGE_BASE_PORT", "65530")
    with pytest.raises(ConfigError, match="RULESAGE_BASE_PORT"):
        mesh.default_port("doorman")


def test_one_embedder_and_the_arms_that_wait_for_it() -> None:
    assert mesh.embedder().name == "dense"
    assert [a.name for a in mesh.arms()] == ["lexical", "dense", "aisle", "category"]
    assert [a.name for a in mesh.arms() if a.needs_vectors] == ["dense", "aisle", "category"]


def test_an_unknown_service_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="no service 'nope'"):
        mesh.get("nope")


def test_cli_serves_exactly_the_registry() -> None:
    serve = next(
        a for a in build_parser()._subparsers._group_actions[0].choices["serve"]._actions if a.dest == "name"
    )
    assert list(serve.choices) == list(mesh.MESH)
