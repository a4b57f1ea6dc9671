"""OpenTelemetry and Prometheus, set up once per process.

- Traces: a TracerProvider with OTLP export when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; the gRPC aio
  instrumentors propagate W3C trace context in metadata. Health checks and reflection are not traced.
- Metrics: Prometheus counters/histograms; served on ``RULESAGE_METRICS_PORT`` when non-zero. Every gRPC
  server counts its calls by method and status code (``MetricsInterceptor``, hooked in by ``runner.start``).
- Privacy: no span carries the question. The gRPC instrumentors run without request/response hooks (no
  payloads recorded); stage spans carry counts, games, arms and model ids only.
- ``stage()`` times a block as both a span and a ``StageTiming`` for the response (the wrench never waits on a
  trace store).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import grpc
from opentelemetry import trace
from prometheus_client import Counter, Histogram, start_http_server

log = logging.getLogger(__name__)
_lock = threading.Lock()
_configured = False

REQUESTS = Counter("rulesage_requests", "gRPC/HTTP requests handled", ["service", "method", "code"])
REQUEST_ERRORS = Counter(
    "rulesage_request_errors", "Requests answered with a status other than OK", ["service", "method", "code"]
)
REQUEST_SECONDS = Histogram(
    "rulesage_request_seconds",
    "Wall time of one request, as the server saw it",
    ["service", "method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
STAGE_SECONDS = Histogram(
    "rulesage_stage_seconds",
    "Wall time of one stage",
    ["service", "stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
ARM_FAILURES = Counter("rulesage_arm_failures", "Arm calls that failed or timed out", ["arm", "state"])
DOORMAN_HOLDS = Counter("rulesage_doorman_holds", "Questions held by the doorman", ["reason"])

_UNTRACED = ("/grpc.health.v1.Health/", "/grpc.reflection.")


def _method_name(method: Any) -> str:
    name = getattr(method, "method", method)
    if isinstance(name, bytes):
        name = name.decode()
    return str(name)


def _traced(method: Any) -> bool:
    """False for health checks and reflection: probes every few seconds would bury the asks."""
    return not _method_name(method).startswith(_UNTRACED)


def code_name(code: grpc.StatusCode | None) -> str:
    """The status code's name for a metric label; a handler that set nothing answered OK."""
    return "OK" if code is None else code.name


def record_request(service: str, method: str, code: str, seconds: float) -> None:
    REQUESTS.labels(service, method, code).inc()
    if code != "OK":
        REQUEST_ERRORS.labels(service, method, code).inc()
    REQUEST_SECONDS.labels(service, method).observe(seconds)


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    """Counts every call of a grpc.aio server by method and status code and times it.

    Unary-response methods (all of RuleSage's own) are wrapped; response streams (health Watch, reflection)
    pass through untouched, as do health checks and reflection, which are not counted.
    """

    def __init__(self, service: str) -> None:
        self.service = service

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        method = _method_name(handler_call_details)
        if handler is None or not _traced(method) or handler.response_streaming:
            return handler
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap(method, handler.unary_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap(method, handler.stream_unary),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler

    def _wrap(self, method: str, behavior: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
        service = self.service

        async def observed(request: Any, context: grpc.aio.ServicerContext) -> Any:
            t0 = time.perf_counter()
            code = "OK"
            try:
                response = behavior(request, context)
                if asyncio.iscoroutine(response):
                    response = await response
                code = code_name(context.code())
                return response
            except grpc.aio.AbortError:
                code = code_name(context.code())
                raise
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except Exception:
                code = "UNKNOWN"  # what grpc answers for an uncaught exception
                raise
            finally:
                record_request(service, method, code, time.perf_counter() - t0)

        return observed


def setup(service_name: str, exporter: Any | None = None, metrics_port: int = 0) -> None:
    """Configure tracing once per process (later calls are no-ops). ``exporter`` overrides OTLP (tests)."""
    global _configured
    with _lock:
        if _configured:
            return
        _configured = True
        from opentelemetry.instrumentation.grpc import GrpcAioInstrumentorClient, GrpcAioInstrumentorServer
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

        name = os.environ.get("OTEL_SERVICE_NAME") or f"rulesage-{service_name}"
        provider = TracerProvider(resource=Resource.create({"service.name": name}))
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        elif endpoint:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            insecure = endpoint.startswith("http://") or "://" not in endpoint
            provider.add_span_processor(
                BatchSpanProcessor(
                    OTLPSpanExporter(endpoint=endpoint, insecure=insecure), schedule_delay_millis=500
                )
            )
        trace.set_tracer_provider(provider)
        GrpcAioInstrumentorServer(filter_=_traced).instrument()  # type: ignore[no-untyped-call]
        GrpcAioInstrumentorClient(filter_=_traced).instrument()  # type: ignore[no-untyped-call]
        if metrics_port:
            host = os.environ.get("RULESAGE_HOST", "127.0.0.1")
            try:
                start_http_server(metrics_port, addr=host)
            except OSError as exc:
                raise RuntimeError(
                    f"{service_name}: cannot serve metrics on {host}:{metrics_port} "
                    f"(RULESAGE_METRICS_PORT; is the port taken?): {exc.strerror or exc}"
                ) from exc


def flush() -> None:
    provider = trace.get_tracer_provider()
    force = getattr(provider, "force_flush", None)
    if force:
        force(5000)


def tracer(name: str = "rulesage") -> trace.Tracer:
    return trace.get_tracer(name)


def current_trace_id() -> str:
    ctx = trace.get_current_span().get_span_context()
    return format(ctx.trace_id, "032x") if ctx.is_valid else ""


class Timings:
    """Collects StageTimings for a response while recording spans and histograms."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.items: list[tuple[str, float]] = []

    @contextmanager
    def stage(self, name: str, **attributes: Any) -> Iterator[trace.Span]:
        with tracer().start_as_current_span(name, attributes=attributes) as span:
            t0 = time.perf_counter()
            try:
                yield span
            finally:
                ms = (time.perf_counter() - t0) * 1000.0
                self.items.append((name, ms))
                STAGE_SECONDS.labels(self.service, name).observe(ms / 1000.0)

    def add(self, name: str, ms: float) -> None:
        self.items.append((name, ms))

    def proto(self) -> list[Any]:
        from rulesage.v1 import common_pb2

        return [common_pb2.StageTiming(stage=n, ms=ms) for n, ms in self.items]
