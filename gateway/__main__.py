"""`python -m gateway`: serve the gateway on RULESAGE_HOST:RULESAGE_PORT (default 127.0.0.1:8080)."""

from __future__ import annotations

import logging
import sys

from rulesage.config import ConfigError, log_level


def main() -> int:
    logging.basicConfig(
        level=log_level(),
        format="%(asctime)s gateway %(levelname)s %(message)s",
    )
    import uvicorn

    from gateway.app import create_app
    from gateway.settings import load_settings
    from rulesage import telemetry
    from rulesage.db import DatabaseError

    try:
        settings = load_settings()
        telemetry.setup("gateway", metrics_port=settings.rulesage_metrics_port)
        app = create_app(settings)
    except (ConfigError, DatabaseError) as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 2
    config = uvicorn.Config(
        app,
        host=settings.rulesage_host,
        port=settings.rulesage_port,
        proxy_headers=True,
        forwarded_allow_ips=settings.rulesage_forwarded_allow_ips,
        server_header=False,
        log_level=settings.rulesage_log_level.lower(),
        timeout_graceful_shutdown=int(settings.rulesage_grace_s) or None,
    )
    server = uvicorn.Server(config)
    try:
        server.run()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0 if server.started else 2


if __name__ == "__main__":
    sys.exit(main())
