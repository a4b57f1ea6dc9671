"""OpenTelemetry and Prometheus, set up once per process.

- Traces: a TracerProvider with OTLP export when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set; the gRPC aio
  instrumentors propagate W3C trace context in metadata. Health checks and reflection are not traced.
- Metrics: Prometheus counters/histograms; served on ``RULESAGE_METRICS_PORT`` when non-zero.
- ``stage()`` times a block as both a span and a ``StageTiming`` for the response (the wrench never waits on a
  trace store).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from prometheus_client import Counter, Histogram, start_http_server

log = logging.getLogger(__name__)
_lock = threading.Lock()
_configured = False

REQUESTS = Counter("rulesage_requests", "gRPC/HTTP requests handled", ["service", "method", "code"])
STAGE_SECONDS = Histogram(
    "rulesage_stage_seconds",
    "Wall time of one stage",
    ["service", "stage"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
ARM_FAILURES = Counter("rulesage_arm_failures", "Arm calls that failed or timed out", ["arm", "state"])
DOORMAN_HOLDS = Counter("rulesage_doorman_holds", "Questions held by the doorman", ["reason"])

_UNTRACED = ("/grpc.health.v1.Health/", "/grpc.reflection.")


def _traced(method: Any) -> bool:
    name = getattr(method, "method", method)
    if isinstance(name, bytes):
        name = name.decode()
    return not str(name).startswith(_UNTRACED)


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
            start_http_server(metrics_port, addr=os.environ.get("RULESAGE_HOST", "127.0.0.1"))


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
