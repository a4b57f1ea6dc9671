"""One real ask across the real mesh, its spans caught by a tiny OTLP/gRPC receiver in this test: one trace,
one tree, the search span accounted for by the fusion and rerank calls, the wrench agreeing with the trace,
no question text in any attribute, no health check traced, and the gateway linking the trace."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1 import common_pb2

from rulesage import mesh as registry
from tests.support.isolated_mesh import isolated_env

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "What is the goal of a game of Golf, and when does it end?"
GATEWAY_QUESTION = "How many cards are dealt into each column of the Golf tableau?"
GAME = "solitaire-golf"
ARMS = tuple(s.name for s in registry.arms())
TRACE_URL = "http://traces.example/trace/{trace_id}"
FUSE = "/rulesage.v1.Fusion/Fuse"
RERANK = "/rulesage.v1.Reranker/Rerank"
CLIENT, SERVER = 3, 2  # opentelemetry.proto.trace.v1.Span.SpanKind


def tolerance_ms(ms: float) -> float:
    return max(5.0, 0.05 * ms)


def _value(v: common_pb2.AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


@dataclass
class Span:
    service: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    event_attributes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


class Receiver(trace_service_pb2_grpc.TraceServiceServicer):
    """An OTLP/gRPC trace endpoint that keeps every span it is sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.lock = threading.Lock()

    def Export(
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        got = []
        for rs in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        Span(
                            service=str(resource.get("service.name", "")),
                            name=s.name,
                            kind=s.kind,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            start_ns=s.start_time_unix_nano,
                            end_ns=s.end_time_unix_nano,
                            attributes={kv.key: _value(kv.value) for kv in s.attributes},
                            event_attributes=[
                                {kv.key: _value(kv.value) for kv in e.attributes} for e in s.events
                            ],
                        )
                    )
        with self.lock:
            self.spans.extend(got)
        return trace_service_pb2.ExportTraceServiceResponse()

    def trace(self, trace_id: str) -> list[Span]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def all(self) -> list[Span]:
        with self.lock:
            return list(self.spans)


@pytest.fixture
def receiver() -> Iterator[tuple[Receiver, int]]:
    rec = Receiver()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(rec, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield rec, port
    finally:
        server.stop(0)


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)


def only(spans: list[Span], name: str, kind: int | None = None) -> Span:
    found = [s for s in spans if s.name == name and (kind is None or s.kind == kind)]
    assert len(found) == 1, f"expected one {name!r} span, got {[(s.service, s.kind) for s in found]}"
    return found[0]


def wait_for(rec: Receiver, trace_id: str, services: set[str], timeout: float = 30) -> list[Span]:
    """The trace's spans once every service has sent its part, the tree is whole (a root, and every parent
    present: batch exporters send the root last) and nothing new arrived for a second."""
    end = time.monotonic() + timeout
    seen, still = -1, 0.0
    while time.monotonic() < end:
        spans = rec.trace(trace_id)
        ids = {s.span_id for s in spans}
        whole = any(not s.parent_id for s in spans) and all(
            not s.parent_id or s.parent_id in ids for s in spans
        )
        if services <= {s.service for s in spans} and whole and len(spans) == seen:
            if time.monotonic() - still >= 1.0:
                return spans
        else:
            seen, still = len(spans), time.monotonic()
        time.sleep(0.2)
    return rec.trace(trace_id)


def test_one_ask_is_one_trace_that_adds_up(tmp_path: Path, receiver: tuple[Receiver, int]) -> None:
    rec, otlp_port = receiver
    mesh = isolated_env(
        tmp_path,
        ROOT / "tests" / "fixtures" / "tiny-shelf.toml",
        RULESAGE_TRACE_URL=TRACE_URL,
        OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{otlp_port}",
    )
    up = mesh.cli("up", "--detach")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        status = mesh.cli("status", "--json")  # health checks on every service
        assert status.returncode == 0, status.stderr
        # `rulesage ask` finds the services by RULESAGE_<NAME>_ADDR, else on the default ports (where another
        # mesh may be listening): point it at this one
        addrs = {
            f"RULESAGE_{name.upper()}_ADDR": svc["address"]
            for name, svc in json.loads(status.stdout)["services"].items()
            if name != "gateway"
        }
        ask = replace(mesh, env={**mesh.env, **addrs}).cli("ask", "--game", GAME, QUESTION, "--json")
        assert ask.returncode == 0, ask.stderr
        ruling = json.loads(ask.stdout)
        gateway = mesh.gateway_url
        page = httpx.get(f"{gateway}/rulings/{ruling['id']}", timeout=30)
        via_gateway = httpx.post(
            f"{gateway}/api/ask", json={"game": GAME, "question": GATEWAY_QUESTION}, timeout=120
        )
        assert via_gateway.status_code == 201, via_gateway.text
        screened = f"{gateway}/api/rulings/{via_gateway.json()['id']}"
        for _ in range(60):  # the gateway hands the question to the doorman in the background
            if httpx.get(screened, timeout=30).json()["public_state"] != "pending":
                break
            time.sleep(0.5)
        # Both trees are awaited while the services still run: a batch exporter may be retrying when the mesh
        # is told to stop, and a service that outlives its grace is killed with its unsent spans (a clean-
        # clone run lost the gateway's root span so). `down` comes after the spans are in.
        services = {f"rulesage-{n}" for n in ("cli", "fusion", *ARMS, "rerank")}
        if ruling["wrench"]["answer"]["state"] != "skipped":
            services.add("rulesage-answer")
        spans = wait_for(rec, ruling["trace_id"], services)
        # the doorman screens the gateway's question in the background, after the response: its spans (and
        # their parent, the gateway's client span) belong to this trace too, so the tree is only whole once
        # they are in
        g_spans = wait_for(
            rec,
            via_gateway.json()["trace_id"],
            {"rulesage-gateway", "rulesage-fusion", "rulesage-rerank", "rulesage-doorman"},
            timeout=60,
        )
    finally:
        down = mesh.cli("down")  # SIGTERM: every service flushes what is left on the way out
    assert down.returncode == 0, down.stderr

    # -- the wrench names the trace, and the gateway links it ----------------------------------------------
    trace_id = ruling["trace_id"]
    assert len(trace_id) == 32 and int(trace_id, 16) != 0
    assert ruling["wrench"]["trace_id"] == trace_id
    assert page.status_code == 200
    assert trace_id in page.text
    assert TRACE_URL.replace("{trace_id}", trace_id) in page.text

    # -- one trace across the caller and every service on the road ------------------------------------------
    assert services <= {s.service for s in spans}, Counter(s.service for s in spans)
    by_id = {s.span_id: s for s in spans}
    assert len(by_id) == len(spans), "span ids repeat"
    roots = [s for s in spans if not s.parent_id]
    assert [(r.name, r.service) for r in roots] == [("ask", "rulesage-cli")]
    orphans = [(s.service, s.name) for s in spans if s.parent_id and s.parent_id not in by_id]
    assert not orphans, f"parents missing from the trace: {orphans}"

    ask_span = roots[0]
    search = only(spans, "search")
    assert search.parent_id == ask_span.span_id and search.service == "rulesage-cli"
    fuse_call = only(spans, FUSE, CLIENT)
    rerank_call = only(spans, RERANK, CLIENT)
    children = sorted(s.name for s in spans if s.parent_id == search.span_id)
    assert children == sorted([FUSE, RERANK])
    fuse_served = only(spans, FUSE, SERVER)
    rerank_served = only(spans, RERANK, SERVER)
    assert (fuse_served.parent_id, fuse_served.service) == (fuse_call.span_id, "rulesage-fusion")
    assert (rerank_served.parent_id, rerank_served.service) == (rerank_call.span_id, "rulesage-rerank")
    # every arm answered inside fusion's span: the arms' server spans hang under fusion's client calls
    for arm in ARMS:
        served = [s for s in spans if s.service == f"rulesage-{arm}" and s.kind == SERVER]
        assert served, f"no server span from {arm}"
        for s in served:
            caller = by_id[s.parent_id]
            assert (caller.service, caller.kind) == ("rulesage-fusion", CLIENT)
            # each arm call sits in its own span naming the arm, inside fusion's arms stage
            arm_span = by_id[caller.parent_id]
            assert (arm_span.name, arm_span.attributes.get("arm")) == ("fusion.arm", arm)
            assert by_id[arm_span.parent_id].name == "fusion.arms"
        stage = only(spans, f"{arm}.search")
        assert by_id[stage.parent_id].service == f"rulesage-{arm}"
        assert stage.attributes.get("game") == GAME and "candidates.out" in stage.attributes
    assert only(spans, "fusion.arms").parent_id == fuse_served.span_id
    assert only(spans, "rerank.score").attributes["candidates"] == len(ruling["wrench"]["candidates"])

    # -- the search span is fusion + rerank --------------------------------------------------------------
    accounted = fuse_call.ms + rerank_call.ms
    assert abs(search.ms - accounted) <= tolerance_ms(search.ms), (search.ms, fuse_call.ms, rerank_call.ms)
    assert search.start_ns <= fuse_call.start_ns <= fuse_call.end_ns <= rerank_call.start_ns
    assert rerank_call.end_ns <= search.end_ns

    # -- the wrench agrees with the trace -----------------------------------------------------------------
    wrench = ruling["wrench"]
    assert abs(wrench["search_span_ms"] - search.ms) <= tolerance_ms(search.ms)
    timings = {t["stage"]: t["ms"] for t in wrench["timings"]}
    assert abs(timings["road.fuse_call"] - fuse_call.ms) <= tolerance_ms(fuse_call.ms)
    assert abs(timings["road.rerank_call"] - rerank_call.ms) <= tolerance_ms(rerank_call.ms)
    names = Counter(s.name for s in spans)
    compared = []
    for stage, ms in timings.items():
        if names[stage] == 1:  # a stage timed as a span (rerank.queue, for one, is a timing only)
            span_ms = only(spans, stage).ms
            assert abs(ms - span_ms) <= tolerance_ms(span_ms), (stage, ms, span_ms)
            compared.append(stage)
    assert {"fusion.arms", "fusion.rrf", "fusion.hydrate", "lexical.search", "rerank.score"} <= set(compared)

    # -- an ask through the gateway is one tree too, rooted in the gateway's HTTP span ----------------------
    gateway_trace = via_gateway.json()["trace_id"]
    assert gateway_trace and gateway_trace != trace_id
    g_ids = {s.span_id for s in g_spans}
    g_roots = [s for s in g_spans if not s.parent_id]
    assert [r.service for r in g_roots] == ["rulesage-gateway"], [(r.service, r.name) for r in g_roots]
    assert not [(s.service, s.name) for s in g_spans if s.parent_id and s.parent_id not in g_ids]
    assert only(g_spans, "search").service == "rulesage-gateway"
    assert only(g_spans, FUSE, SERVER).parent_id == only(g_spans, FUSE, CLIENT).span_id

    # -- nothing an SRE reads carries the question ---------------------------------------------------------
    everything = rec.all()
    asked = [q.lower() for q in (QUESTION, ruling["question"], GATEWAY_QUESTION)]
    asked += ["goal of a game of golf", "dealt into each column"]
    for s in everything:
        for value in strings([s.attributes, s.event_attributes]):
            assert not any(q in value.lower() for q in asked), (s.service, s.name, value)
    assert "rulesage-doorman" in {s.service for s in everything}  # it was handed the gateway's question
    # -- and health checks are not traced, though `up` and `status` made plenty of them ---------------------
    assert not [s for s in everything if "grpc.health" in s.name or "grpc.reflection" in s.name]
