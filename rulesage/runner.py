"""The service runner every gRPC service uses.

It reads configuration once (a bad value is a startup error naming the variable), sets up telemetry, serves
``grpc.health.v1`` (NOT_SERVING until the service has started, SERVING once ready, NOT_SERVING again on
shutdown) and server reflection, and shuts down gracefully on SIGTERM/SIGINT: health flips to NOT_SERVING,
then ``server.stop(grace)`` lets in-flight calls finish. Ports and addresses come from the one registry,
``rulesage.mesh``.

A service is an object with ``name``, ``service_names`` (full gRPC names), ``register(server)``, and async
``start()`` / ``stop()``; the logic underneath stays free of transport.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from rulesage import mesh, telemetry
from rulesage.config import CommonSettings, ConfigError, load, log_level
from rulesage.core.questions import BadQuestion
from rulesage.db import DatabaseError

log = logging.getLogger(__name__)

MAX_MESSAGE = 32 * 1024 * 1024
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", MAX_MESSAGE),
    ("grpc.max_receive_message_length", MAX_MESSAGE),
    ("grpc.so_reuseport", 0),
]


class Service(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def service_names(self) -> Sequence[str]: ...

    def register(self, server: grpc.aio.Server) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class _Undecodable:
    """What a request that does not parse becomes, so the call can answer INVALID_ARGUMENT."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _status_for(exc: BaseException) -> tuple[grpc.StatusCode, str] | None:
    """The status a handler's exception answers with: a bad question is INVALID_ARGUMENT, a database outage
    UNAVAILABLE (with the reason); None for anything else (grpc answers UNKNOWN and logs it)."""
    if isinstance(exc, BadQuestion):
        return grpc.StatusCode.INVALID_ARGUMENT, str(exc)
    if isinstance(exc, DatabaseError | OSError):
        return grpc.StatusCode.UNAVAILABLE, f"database unavailable: {exc}"
    if type(exc).__module__.startswith(("psycopg", "psycopg_pool")):
        return grpc.StatusCode.UNAVAILABLE, f"database unavailable: {type(exc).__name__}"
    return None


class ErrorInterceptor(grpc.aio.ServerInterceptor):
    """Cross-cutting error handling for every unary handler:
    - a request that does not parse (truncated bytes, a string field that is not UTF-8) is INVALID_ARGUMENT
      with the parser's reason, where grpc.aio alone answers UNKNOWN "Unexpected DecodeError";
    - a ``BadQuestion`` raised by the handler is INVALID_ARGUMENT, a database outage UNAVAILABLE."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        # Unary requests only: the health Watch stream and reflection are grpc's own and left alone.
        if handler is None or handler.request_streaming or handler.response_streaming:
            return handler
        decode = handler.request_deserializer
        if decode is None:
            return handler

        def tolerant(raw: bytes) -> Any:
            try:
                return decode(raw)
            except Exception as exc:  # protobuf's DecodeError, or UnicodeDecodeError for string fields
                why = str(exc).rpartition(": ")[2] or type(exc).__name__  # "String field had bad UTF-8"
                return _Undecodable(f"the request does not parse: {why} (every string must be UTF-8)")

        def guarded(behavior: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                if isinstance(request, _Undecodable):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.reason)
                try:
                    response = behavior(request, context)
                    return await response if asyncio.iscoroutine(response) else response
                except (grpc.aio.AbortError, grpc.RpcError):
                    raise
                except Exception as exc:
                    mapped = _status_for(exc)
                    if mapped is None:
                        raise
                    await context.abort(*mapped)

            return unary

        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                guarded(handler.unary_unary),
                request_deserializer=tolerant,
                response_serializer=handler.response_serializer,
            )
        return handler


class ServiceSettings(CommonSettings):
    rulesage_host: str = "127.0.0.1"
    rulesage_port: int = -1  # -1: the service's default port; 0: any free port (tests)
    # When set, the bound port is written to this file once the service is SERVING (tests use port 0).
    rulesage_port_file: str = ""


def channel(name: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(mesh.address(name), options=GRPC_OPTIONS)


@dataclass
class Running:
    server: grpc.aio.Server
    health: health.aio.HealthServicer
    port: int
    service: Service

    async def shutdown(self, grace: float) -> None:
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        await self.service.stop()


async def start(service: Service, host: str = "127.0.0.1", port: int = 0, port_file: str = "") -> Running:
    """Bind, serve NOT_SERVING while the service starts, then SERVING. RuntimeError if the port is taken."""
    # Requests and errors by method and status code; the tracing interceptor (telemetry.setup) wraps this one.
    server = grpc.aio.server(
        options=GRPC_OPTIONS, interceptors=[telemetry.MetricsInterceptor(service.name), ErrorInterceptor()]
    )
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    service.register(server)
    names = [*service.service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
    reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as exc:
        raise RuntimeError(f"{service.name}: cannot listen on {host}:{port} (is the port taken?)") from exc
    if bound == 0:
        raise RuntimeError(f"{service.name}: cannot listen on {host}:{port} (is the port taken?)")
    for n in ["", *service.service_names]:
        await health_servicer.set(n, health_pb2.HealthCheckResponse.NOT_SERVING)
    await server.start()
    await service.start()
    for n in ["", *service.service_names]:
        await health_servicer.set(n, health_pb2.HealthCheckResponse.SERVING)
    if port_file:
        tmp = Path(port_file + ".tmp")
        tmp.write_text(str(bound))
        tmp.rename(port_file)
    log.info("%s SERVING on %s:%d", service.name, host, bound)
    return Running(server, health_servicer, bound, service)


async def serve_forever(name: str, factory: Callable[[], Service]) -> None:
    settings = load(ServiceSettings)
    telemetry.setup(name, metrics_port=settings.rulesage_metrics_port)
    service = factory()  # reads its own settings: a bad value raises ConfigError here, before binding
    port = (
        (mesh.default_port(service.name) if service.name in mesh.MESH else 0)
        if settings.rulesage_port < 0
        else settings.rulesage_port
    )
    running = await start(service, settings.rulesage_host, port, settings.rulesage_port_file)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("%s: shutting down (grace %.1fs)", service.name, settings.rulesage_grace_s)
    await running.shutdown(settings.rulesage_grace_s)
    telemetry.flush()


def main(name: str, factory: Callable[[], Service]) -> int:
    """Process entry point: exit 2 with a one-line message on bad configuration or a taken port."""
    logging.basicConfig(
        level=log_level(),
        format=f"%(asctime)s {name} %(levelname)s %(message)s",
    )
    try:
        asyncio.run(serve_forever(name, factory))
    except ConfigError as exc:
        print(f"{name}: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    return 0
