"""Configuration from environment variables, read once at start-up.

Every service declares a ``Settings`` subclass; a missing or malformed value raises ``ConfigError`` naming
the variable, so a bad deployment fails at start, never inside a handler.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from rulesage.core.questions import MAX_QUESTION_CHARS

ROOT = Path(__file__).resolve().parent.parent


class ConfigError(RuntimeError):
    """A configuration variable is missing or malformed; the message names it."""


def shared_dir() -> Path:
    """Shared material (corpus, eval): $RULESAGE_SHARED or ``../shared`` beside the project."""
    raw = os.environ.get("RULESAGE_SHARED")
    return Path(raw) if raw else ROOT.parent / "shared"


def state_dir() -> Path:
    """Project-local state folder (Postgres data, model caches, logs): $RULESAGE_STATE_DIR or ./.rulesage."""
    raw = os.environ.get("RULESAGE_STATE_DIR")
    path = Path(raw) if raw else ROOT / ".rulesage"
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def models_dir() -> Path:
    """Exported model files (the embedder's ONNX): $RULESAGE_MODELS_DIR, else ``<state>/models``. Kept apart
    so a throwaway state folder (a test run) can reuse one export."""
    raw = os.environ.get("RULESAGE_MODELS_DIR")
    path = Path(raw) if raw else state_dir() / "models"
    path.mkdir(parents=True, exist_ok=True)
    return path.resolve()


class _EnvSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")


class LogSettings(_EnvSettings):
    """The logging level, read on its own before a process's other settings: logging starts first, so it
    can report what is wrong with the rest."""

    rulesage_log_level: str = "INFO"


class DatabaseSettings(_EnvSettings):
    """Where Postgres is. Empty: the embedded server (rulesage.db)."""

    database_url: str = ""


class CommonSettings(LogSettings, DatabaseSettings):
    """Settings every process shares (with the log level and the database URL of its bases)."""

    otel_exporter_otlp_endpoint: str = ""
    otel_service_name: str = ""
    # Seconds a service waits for in-flight calls after SIGTERM before it stops.
    rulesage_grace_s: float = 5.0
    rulesage_max_question_chars: int = MAX_QUESTION_CHARS
    # Prometheus metrics port for this process; 0 disables the endpoint.
    rulesage_metrics_port: int = 0


S = TypeVar("S", bound=BaseSettings)


def load(cls: type[S]) -> S:
    """Instantiate settings, turning pydantic's validation error into one that names each variable."""
    try:
        return cls()
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            name = str(err["loc"][0]).upper() if err["loc"] else "?"
            value = os.environ.get(name, "<unset>")
            problems.append(f"{name}={value!r}: {err['msg']}")
        raise ConfigError("bad configuration: " + "; ".join(problems)) from None


def log_level() -> str:
    """$RULESAGE_LOG_LEVEL, upper-cased (default INFO): what every process hands ``logging.basicConfig``."""
    return load(LogSettings).rulesage_log_level.upper()


def configured_database_url() -> str:
    """$DATABASE_URL without surrounding blanks; "" when unset or blank (then the embedded server runs)."""
    return load(DatabaseSettings).database_url.strip()
