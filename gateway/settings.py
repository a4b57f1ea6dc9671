"""Gateway settings, read once at start (a bad value is a ConfigError naming the variable)."""

from __future__ import annotations

import ipaddress

import limits

from rulesage.config import CommonSettings, ConfigError, load


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
    rulesage_ask_concurrency: int = 4
    rulesage_ask_queue: int = 200
    rulesage_ask_queue_wait_s: float = 30.0
    # Wrong admin-token attempts per client.
    rulesage_login_rate: str = "10/hour"
    rulesage_doorman_timeout_s: float = 20.0
    # Seconds between sweeps that re-screen rulings left pending; 0 disables the sweeper.
    rulesage_sweep_interval_s: float = 30.0
    # A pending ruling younger than this is left to its own background screening.
    rulesage_sweep_grace_s: float = 30.0
    rulesage_wall_page_size: int = 20
    # Mark cookies Secure (behind HTTPS).
    rulesage_secure_cookies: bool = False
    # The reverse proxies whose X-Forwarded-For is believed (uvicorn's forwarded_allow_ips): addresses or
    # CIDRs, comma-separated. The rate limit and the login lockout key on the address this yields: the
    # rightmost X-Forwarded-For entry not added by one of these proxies. Behind ingress-nginx: the controller
    # pods' CIDR (k8s overlays); behind any other proxy: its address (README, "Behind a reverse proxy").
    rulesage_forwarded_allow_ips: str = "127.0.0.1"


def load_settings() -> GatewaySettings:
    settings = load(GatewaySettings)
    check(settings)
    return settings


def check(settings: GatewaySettings) -> None:
    for var, value in (
        ("RULESAGE_ASK_RATE", settings.rulesage_ask_rate),
        ("RULESAGE_LOGIN_RATE", settings.rulesage_login_rate),
    ):
        try:
            limits.parse_many(value)
        except ValueError as exc:
            raise ConfigError(f"bad configuration: {var}={value!r}: {exc}") from None
    if settings.rulesage_ask_concurrency < 1 or settings.rulesage_ask_queue < 0:
        raise ConfigError("bad configuration: RULESAGE_ASK_CONCURRENCY must be >= 1, RULESAGE_ASK_QUEUE >= 0")
    if settings.rulesage_ask_queue_wait_s <= 0:
        raise ConfigError("bad configuration: RULESAGE_ASK_QUEUE_WAIT_S must be > 0")
    if settings.rulesage_wall_page_size < 1:
        raise ConfigError("bad configuration: RULESAGE_WALL_PAGE_SIZE must be at least 1")
    for entry in (e.strip() for e in settings.rulesage_forwarded_allow_ips.split(",")):
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            raise ConfigError(
                f"bad configuration: RULESAGE_FORWARDED_ALLOW_IPS has {entry!r}: expected proxy addresses or "
                "CIDRs, comma-separated (a '*' would let any client choose its own rate-limit key)"
            ) from None
    if not 0 < settings.rulesage_max_question_chars <= 10_000:
        raise ConfigError("bad configuration: RULESAGE_MAX_QUESTION_CHARS must be in 1..10000")
