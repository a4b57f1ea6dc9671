from __future__ import annotations

import pytest

from rulesage import mesh
from rulesage.config import ConfigError, load
from rulesage.runner import ServiceSettings


def test_malformed_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULESAGE_PORT", "eighty")
    with pytest.raises(ConfigError, match="RULESAGE_PORT='eighty'"):
        load(ServiceSettings)


def test_bad_client_address_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULESAGE_FUSION_ADDR", "nowhere")
    with pytest.raises(ConfigError, match="RULESAGE_FUSION_ADDR"):
        mesh.address("fusion")
    monkeypatch.setenv("RULESAGE_FUSION_ADDR", "10.0.0.1:5000")
    assert mesh.address("fusion") == "10.0.0.1:5000"
