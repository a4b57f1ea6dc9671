"""The gateway's pure parts: the wrench's derived ceiling, CSRF and admin tokens, rate limits, the rating
mean, LIKE escaping, the ask road adaptor."""

from __future__ import annotations

import pytest

from gateway import asking, wrench
from gateway.security import Guard, RateLimiter, valid_session_id
from gateway.shelf import like_pattern
from rulesage.rulings import bayesian_mean, effective_score, is_excluded, rating_summary
from tests.support.gateway_fixtures import sample_ruling


def test_ceiling_is_arms_over_k_plus_one() -> None:
    assert wrench.ceiling(["lexical", "dense", "aisle"], 60) == pytest.approx(3 / 61)
    assert wrench.ceiling_formula(["lexical", "dense", "aisle"], 60) == "3/(60+1) = 0.04918"
    assert wrench.ceiling_formula(["lexical", "dense"], 60) == "2/(60+1) = 0.03279"
    assert wrench.ceiling([], 60) == 0.0


def test_the_page_derives_the_ceiling_and_ignores_the_stored_one() -> None:
    view = wrench.view(sample_ruling())  # stores a stale "ceiling": 0.0328 and three voted lists
    assert view["ceiling"] == pytest.approx(3 / 61)
    assert view["ceiling_formula"] == "3/(60+1) = 0.04918"
    assert view["top_fused"] == pytest.approx(0.04918)
    assert view["above_ceiling"] is False


def test_six_decimal_rounding_is_not_above_the_ceiling_but_a_real_excess_is() -> None:
    two = sample_ruling()
    two["wrench"] = {**two["wrench"], "voted": ["lexical", "dense"]}
    two["passages"] = [{**two["passages"][1], "fused_score": 0.032787}]  # 1/61 + 1/61, rounded up on the wire
    two["wrench"]["candidates"] = []
    assert 0.032787 > 2 / 61
    assert wrench.view(two)["above_ceiling"] is False
    two["passages"][0]["fused_score"] = 0.0335
    assert wrench.view(two)["above_ceiling"] is True


def test_voted_lists_fall_back_to_the_ranked_lists_and_ranks_line_up() -> None:
    r = sample_ruling()
    r["wrench"] = {**r["wrench"], "voted": []}
    view = wrench.view(r)
    assert view["voted"] == ["lexical", "dense", "aisle"]
    assert view["passages"][1]["ranks"] == [1, 1, None]
    assert view["passages"][2]["ranks"] == [None, 2, 2]


def test_missing_arms_are_named() -> None:
    r = sample_ruling()
    r["wrench"] = {
        **r["wrench"],
        "arms": [
            {"arm": "lexical", "state": "ok"},
            {"arm": "aisle", "state": "timeout", "detail": "deadline"},
        ],
    }
    assert wrench.view(r)["missing"] == ["aisle"]


def test_trace_link_needs_a_viewer_and_a_real_trace_id() -> None:
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    assert wrench.trace_link("", tid) == ""
    assert (
        wrench.trace_link("http://jaeger:16686/trace/{trace_id}", tid) == f"http://jaeger:16686/trace/{tid}"
    )
    assert wrench.trace_link("http://jaeger:16686/trace/", tid) == f"http://jaeger:16686/trace/{tid}"
    assert wrench.trace_link("http://jaeger/trace", "javascript:alert(1)") == ""


def test_timing_bars_are_log_scaled_and_bounded() -> None:
    view = wrench.view(sample_ruling())
    bars = {t["stage"]: t["bar"] for t in view["timings"]}
    assert bars["answer.generate"] == 100
    assert 0 < bars["fusion.rrf"] < bars["rerank.score"] < 100


@pytest.mark.parametrize(
    ("ms", "text"), [(None, "—"), (0.42, "0.4 ms"), (88, "88 ms"), (2701, "2.7 s"), ("x", "—")]
)
def test_format_ms(ms: object, text: str) -> None:
    assert wrench.format_ms(ms) == text


def test_page_labels() -> None:
    assert wrench.page_label(12, 12) == "p. 12"
    assert wrench.page_label(12, 13) == "pp. 12–13"
    assert wrench.page_label(0, 0) == ""


def test_csrf_token_is_tied_to_the_session() -> None:
    guard = Guard("s3cret", "")
    token = guard.csrf_token("session-aaaaaaaaaaaaaaaa")
    assert guard.csrf_ok("session-aaaaaaaaaaaaaaaa", token)
    assert not guard.csrf_ok("session-bbbbbbbbbbbbbbbb", token)
    assert not guard.csrf_ok("session-aaaaaaaaaaaaaaaa", None)
    assert not guard.csrf_ok("", guard.csrf_token(""))
    assert Guard("other", "").csrf_token("session-aaaaaaaaaaaaaaaa") != token


def test_without_an_admin_token_the_queue_is_closed() -> None:
    guard = Guard("s3cret", "")
    assert not guard.admin_open
    assert not guard.token_ok("")
    assert not guard.bearer_ok("Bearer ")
    assert not guard.admin_cookie_ok("sid", guard.admin_cookie("sid"))


def test_admin_token_and_cookie() -> None:
    guard = Guard("s3cret", "open-sesame")
    assert guard.token_ok("open-sesame") and not guard.token_ok("open-sesam")
    assert guard.bearer_ok("Bearer open-sesame") and guard.bearer_ok("bearer  open-sesame")
    assert not guard.bearer_ok("Basic open-sesame") and not guard.bearer_ok(None)
    cookie = guard.admin_cookie("sid-one")
    assert guard.admin_cookie_ok("sid-one", cookie)
    assert not guard.admin_cookie_ok("sid-two", cookie)
    assert not Guard("s3cret", "rotated").admin_cookie_ok("sid-one", cookie)


def test_session_ids_are_checked_before_use() -> None:
    assert valid_session_id("a" * 32)
    assert not valid_session_id(None) and not valid_session_id("short")
    assert not valid_session_id("x" * 20 + "<script>")


def test_rate_limiter_refuses_past_the_window_per_client() -> None:
    limiter = RateLimiter("3/minute")
    assert [limiter.hit("a").allowed for _ in range(4)] == [True, True, True, False]
    refused = limiter.hit("a")
    assert not refused.allowed and 1 <= refused.retry_after_s <= 61
    assert limiter.hit("b").allowed


def test_rate_limiter_checks_every_window() -> None:
    limiter = RateLimiter("100/hour;2/minute")
    assert [limiter.hit("a").allowed for _ in range(3)] == [True, True, False]


def test_bayesian_mean() -> None:
    assert bayesian_mean(0, 0) == 2.0
    assert bayesian_mean(3, 1) == pytest.approx(9 / 4)
    assert bayesian_mean(3 * 100, 100) == pytest.approx((6 + 300) / 103)
    assert rating_summary(4, 2) == {
        "mean": 2.0,
        "count": 2,
        "sum": 4,
        "effective": 2.0,
        "judged": False,
        "judge_score": None,
        "excluded": False,
    }


def test_a_judge_overrides_the_crowd_and_low_calls_with_enough_votes_are_excluded() -> None:
    judged = rating_summary(15, 5, judge_score=3)  # five readers said 3; the judge says 3 too
    assert judged["mean"] == pytest.approx(21 / 8, abs=1e-3) and judged["effective"] == 3.0
    overruled = rating_summary(15, 5, judge_score=1)
    assert overruled["mean"] == pytest.approx(21 / 8, abs=1e-3)  # the crowd's mean keeps its meaning
    assert overruled["effective"] == 1.0 and overruled["judged"] and overruled["judge_score"] == 1
    assert overruled["excluded"]  # 1.0 < 1.5 with five votes
    # (6 + 5) / 8 = 1.375 < 1.5: excluded with five votes, not with four ((6 + 4) / 7 = 1.43)
    assert rating_summary(5, 5)["excluded"] and not rating_summary(4, 4)["excluded"]
    assert not rating_summary(5, 5, judge_score=2)["excluded"]  # the judge's 2 stands over the crowd
    assert effective_score(5, 5) == pytest.approx(1.375) and is_excluded(1.49, 5) and not is_excluded(1.5, 9)


def test_like_pattern_takes_wildcards_literally() -> None:
    assert like_pattern("50%_off") == "%50\\%\\_off%"
    assert like_pattern("a\\b") == "%a\\\\b%"


def test_found_passages_reads_the_roads_search_outcome() -> None:
    from rulesage.core.models import Wrench
    from rulesage.road import SearchOutcome
    from rulesage.v1 import common_pb2

    outcome = SearchOutcome(
        game="dnd-5e-srd",
        game_name="SRD",
        question="reach?",
        passages=[
            common_pb2.Passage(
                id=7,
                text="x" * 500,
                doc_title="Book",
                page_start=3,
                page_end=4,
                heading_path=["Combat", "Reach"],
            ),
            common_pb2.Passage(id=8, text="short", doc_key="other"),
        ],
        wrench=Wrench(search_span_ms=88.0),
    )
    found = asking.found_passages(outcome)
    assert found[0]["heading"] == "Combat › Reach" and len(found[0]["excerpt"]) == 320
    assert (found[0]["page_start"], found[0]["page_end"]) == (3, 4)
    assert found[1]["doc_title"] == "other" and found[1]["excerpt"] == "short"
    assert asking.search_span_ms(outcome) == 88.0


def test_the_sample_ruling_the_page_tests_use_is_a_valid_ruling() -> None:
    from rulesage.core.models import Ruling
    from tests.support.gateway_fixtures import sample_ruling

    ruling = Ruling.model_validate(sample_ruling())
    assert ruling.wrench.arms and all(a.state for a in ruling.wrench.arms)


def test_trusted_proxies_are_addresses_or_cidrs_never_everyone() -> None:
    from gateway.settings import GatewaySettings, load_settings
    from rulesage.config import ConfigError

    GatewaySettings(rulesage_forwarded_allow_ips="127.0.0.1, 10.244.0.0/16,fd00::/8")
    for bad in ("*", "ingress-nginx", "10.0.0.0/33"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("RULESAGE_FORWARDED_ALLOW_IPS", bad)
            with pytest.raises(ConfigError, match="RULESAGE_FORWARDED_ALLOW_IPS"):
                load_settings()


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("RULESAGE_ASK_RATE", "lots"),
        ("RULESAGE_LOGIN_RATE", "6/fortnight"),
        ("RULESAGE_ASK_CONCURRENCY", "0"),
        ("RULESAGE_ASK_QUEUE_WAIT_S", "0"),
        ("RULESAGE_WALL_PAGE_SIZE", "0"),
        ("RULESAGE_MAX_QUESTION_CHARS", "20000"),
    ],
)
def test_each_gateway_setting_checks_itself_and_names_its_variable(
    monkeypatch: pytest.MonkeyPatch, var: str, value: str
) -> None:
    from gateway.settings import load_settings
    from rulesage.config import ConfigError

    monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match=var):
        load_settings()


def test_degraded_names_what_did_not_run_from_the_wrench() -> None:
    from rulesage.core.models import degraded

    wrench = {
        "arms": [{"arm": "lexical", "state": "ok"}, {"arm": "dense", "state": "timeout"}],
        "fusion": {"state": "ok"},
        "rerank": {"state": "overloaded"},
        "answer": {"state": "ok"},
    }
    assert degraded(wrench) == [("arm", "dense", "timeout"), ("stage", "rerank", "overloaded")]
    assert degraded({"arms": [], "rerank": {"state": "down"}}, ("fusion",)) == []
