"""telemetry's pure parts: what is traced and counted, status-code labels, request metrics, stage timings."""

from __future__ import annotations

import time
from types import SimpleNamespace

import grpc
import pytest
from prometheus_client import REGISTRY

from rulesage import telemetry


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("method", "traced"),
    [
        ("/grpc.health.v1.Health/Check", False),
        ("/grpc.health.v1.Health/Watch", False),
        (b"/grpc.health.v1.Health/Check", False),  # some grpc versions hand the client bytes
        ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", False),
        ("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", False),
        ("/rulesage.v1.Fusion/Fuse", True),
        (b"/rulesage.v1.Arm/Search", True),
        ("/rulesage.v1.Doorman/Screen", True),
    ],
)
def test_health_and_reflection_are_neither_traced_nor_counted(method: str | bytes, traced: bool) -> None:
    assert telemetry._traced(method) is traced
    # the instrumentors and the interceptor hand over call details, not bare names
    assert telemetry._traced(SimpleNamespace(method=method)) is traced


def test_code_names_label_the_status_a_client_sees() -> None:
    assert telemetry.code_name(None) == "OK"  # a handler that set nothing answered OK
    assert telemetry.code_name(grpc.StatusCode.OK) == "OK"
    assert telemetry.code_name(grpc.StatusCode.INVALID_ARGUMENT) == "INVALID_ARGUMENT"
    assert telemetry.code_name(grpc.StatusCode.DEADLINE_EXCEEDED) == "DEADLINE_EXCEEDED"


def test_record_request_counts_errors_only_for_codes_other_than_ok() -> None:
    m = "/unit.Telemetry/Record"
    labels = {"service": "unit-record", "method": m}
    before = {
        "ok": value("rulesage_requests_total", **labels, code="OK"),
        "bad": value("rulesage_requests_total", **labels, code="UNAVAILABLE"),
        "err_ok": value("rulesage_request_errors_total", **labels, code="OK"),
        "err_bad": value("rulesage_request_errors_total", **labels, code="UNAVAILABLE"),
        "count": value("rulesage_request_seconds_count", **labels),
        "sum": value("rulesage_request_seconds_sum", **labels),
    }
    telemetry.record_request("unit-record", m, "OK", 0.004)
    telemetry.record_request("unit-record", m, "OK", 0.006)
    telemetry.record_request("unit-record", m, "UNAVAILABLE", 0.5)
    assert value("rulesage_requests_total", **labels, code="OK") - before["ok"] == 2
    assert value("rulesage_requests_total", **labels, code="UNAVAILABLE") - before["bad"] == 1
    assert value("rulesage_request_errors_total", **labels, code="OK") - before["err_ok"] == 0
    assert value("rulesage_request_errors_total", **labels, code="UNAVAILABLE") - before["err_bad"] == 1
    assert value("rulesage_request_seconds_count", **labels) - before["count"] == 3
    assert value("rulesage_request_seconds_sum", **labels) - before["sum"] == pytest.approx(0.51)


def test_a_stage_is_timed_for_the_response_and_the_histogram() -> None:
    labels = {"service": "unit-stage", "stage": "unit.sleep"}
    count = value("rulesage_stage_seconds_count", **labels)
    timings = telemetry.Timings("unit-stage")
    t0 = time.perf_counter()
    with timings.stage("unit.sleep", game="golf"):
        time.sleep(0.02)
    outer_ms = (time.perf_counter() - t0) * 1000
    timings.add("unit.queue", 1.5)
    (name, ms), added = timings.items
    assert name == "unit.sleep" and 20 <= ms <= outer_ms
    assert added == ("unit.queue", 1.5)
    assert value("rulesage_stage_seconds_count", **labels) - count == 1
    assert value("rulesage_stage_seconds_bucket", **labels, le="0.01") == 0  # 20 ms is not under 10 ms
    proto = timings.proto()
    assert [(t.stage, t.ms) for t in proto] == [("unit.sleep", ms), ("unit.queue", 1.5)]


def test_a_failing_stage_is_still_timed_and_the_error_goes_on() -> None:
    timings = telemetry.Timings("unit-stage")
    with pytest.raises(ValueError, match="broke"), timings.stage("unit.broken"):
        raise ValueError("broke")
    assert [n for n, _ in timings.items] == ["unit.broken"]


def test_no_trace_id_outside_a_span() -> None:
    assert telemetry.current_trace_id() == ""
