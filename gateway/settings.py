"""Gateway settings, read once at start. Each field checks its own value (a bad one is a ConfigError naming
the variable when read from the environment, a pydantic ValidationError when built in code)."""

from __future__ import annotations

import ipaddress

import limits
from pydantic import Field, field_validator

from rulesage.config import CommonSettings, load


class GatewaySettings(CommonSettings):
    rulesage_host: str = "127.0.0.1"
    rulesage_port: int = 8080
    # The review queue's token. Unset: the queue is closed (never open).
    rulesage_admin_token: str = ""
    # Key for CSRF tokens and the admin cookie. Unset: a random key per process (set it with >1 replica).
    rulesage_session_secret: str = ""
    # Trace viewer link for the wrench; "{trace_id}" is replaced, else the id is appended.
    rulesage_trace_url: str = ""
    # Asks per client, in `limits` notation ("6/minute", "100/hour;6/minute").
    rulesage_ask_rate: str = "6/minute"
    # Asks travelling the road at once (search + answer); more wait in a queue of at most
    # rulesage_ask_queue for at most rulesage_ask_queue_wait_s, then get a 503 with Retry-After. Admitting
    # only what the services can take keeps rulings whole under a crowd: without it the rerank and answer
    # services shed the overflow and almost every ruling of a 50-player load was degraded.
    rulesage_ask_concurrency: int = Field(4, ge=1)
    rulesage_ask_queue: int = Field(200, ge=0)
    rulesage_ask_queue_wait_s: float = Field(30.0, gt=0)
    # Wrong admin-token attempts per client.
    rulesage_login_rate: str = "10/hour"
    rulesage_doorman_timeout_s: float = 20.0
    # Seconds between sweeps that re-screen rulings left pending; 0 disables the sweeper.
    rulesage_sweep_interval_s: float = 30.0
    # A pending ruling younger than this is left to its own background screening.
    rulesage_sweep_grace_s: float = 30.0
    rulesage_wall_page_size: int = Field(20, ge=1)
    # Mark cookies Secure (behind HTTPS).
    rulesage_secure_cookies: bool = False
    # The reverse proxies whose X-Forwarded-For is believed (uvicorn's forwarded_allow_ips): addresses or
    # CIDRs, comma-separated. The rate limit and the login lockout key on the address this yields: the
    # rightmost X-Forwarded-For entry not added by one of these proxies. Behind ingress-nginx: the controller
    # pods' CIDR (k8s overlays); behind any other proxy: its address (README, "Behind a reverse proxy").
    rulesage_forwarded_allow_ips: str = "127.0.0.1"

    @field_validator("rulesage_ask_rate", "rulesage_login_rate")
    @classmethod
    def _rate(cls, value: str) -> str:
        limits.parse_many(value)  # ValueError: not `limits` notation
        return value

    @field_validator("rulesage_forwarded_allow_ips")
    @classmethod
    def _proxies(cls, value: str) -> str:
        for entry in (e.strip() for e in value.split(",")):
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(
                    f"{entry!r} is not a proxy address or CIDR (comma-separated; a '*' would let any client"
                    " choose its own rate-limit key)"
                ) from None
        return value

    @field_validator("rulesage_max_question_chars")
    @classmethod
    def _question_cap(cls, value: int) -> int:
        if not 0 < value <= 10_000:
            raise ValueError("must be in 1..10000")
        return value


def load_settings() -> GatewaySettings:
    return load(GatewaySettings)
