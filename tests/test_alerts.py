"""Alert rules, costs and errors (rag_core/alerts.py, feedback.py; issue 53) on a real workspace
and database. The webhook's receiver is a real HTTP server on loopback that counts what it gets."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_core.access import Caller, PermissionDenied
from rag_core.config import get_settings
from rag_core.errors import InputError
from rag_core.feedback import FeedbackLog
from rag_core.workspace import Workspace

OP = Caller.operator()
ANN = Caller.of("ann")


class Receiver:
    def __init__(self):
        self.got: list[dict] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):  # noqa: N802
                outer.got.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                self.send_response(204)
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait(self, n: int, timeout: float = 20.0) -> list[dict]:
        end = time.monotonic() + timeout
        while len(self.got) < n and time.monotonic() < end:
            time.sleep(0.05)
        return self.got


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", llm_crag=False, alerts_every_s=0))
    w.create_kb("k", caller=OP)
    (tmp_path / "k.md").write_text("# Office\n\nThe office opens at nine o'clock. Parking is behind the building.\n")
    w.ingest("k", [tmp_path / "k.md"], caller=OP)
    yield w
    w.close()


def ask(ws, q, caller=ANN):
    a = ws.ask(["k"], q, caller=caller, no_cache=True)
    return ws.feedback_for(caller=caller).log_answer(a, [ws.get_kb("k", caller=caller).kb_id]), a


def test_an_abstention_rate_over_its_threshold_fires_posts_and_resolves(ws):
    hook = Receiver()
    try:
        rule = ws.add_alert_rule("abstention_rate", 0.5, window_minutes=10, webhook=hook.url, min_answers=3, caller=OP)
        for _ in range(2):
            ask(ws, "What is the capital of Mongolia?")  # not in the documents: withheld
        assert not ws.firing_alerts(caller=OP)  # two answers: too few to judge
        ask(ws, "What is the airspeed of a swallow?")
        firing = ws.firing_alerts(caller=OP)
        assert [r.rule_id for r in firing] == [rule.rule_id] and firing[0].value == 1.0
        got = hook.wait(1)
        assert got[0]["state"] == "firing" and got[0]["metric"] == "abstention_rate" and got[0]["answers"] == 3
        for _ in range(4):
            ask(ws, "When does the office open?")  # answered: the rate falls to 3/7
        assert not ws.firing_alerts(caller=OP)
        got = hook.wait(2)
        assert got[1]["state"] == "resolved" and got[1]["value"] <= 0.5  # no longer over the threshold
        events = ws.alerts.events()
        assert [e["state"] for e in events] == ["resolved", "firing"]
        deadline = time.monotonic() + 10
        while any(e["delivered"] != "delivered" for e in ws.alerts.events()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(e["delivered"] == "delivered" for e in ws.alerts.events())
    finally:
        hook.httpd.shutdown()


def test_latency_thumbs_down_and_error_rates_are_measured_over_the_window(ws):
    ids = [ask(ws, "When does the office open?")[0] for _ in range(4)]
    fb = ws.feedback_for(caller=ANN)
    fb.rate(ids[0], -1, reason="wrong")
    fb.rate(ids[1], 1)
    assert ws.alerts.measure("thumbs_down_rate", 10) == (0.5, 2)
    p95, n = ws.alerts.measure("p95_latency_ms", 10)
    assert n == 4 and p95 > 0
    assert ws.alerts.measure("error_rate", 10) == (0.0, 4)
    # the window: nothing older counts
    assert ws.alerts.measure("abstention_rate", 10, now=time.time() + 3600) == (None, 0)
    ws.add_alert_rule("p95_latency_ms", 0.001, window_minutes=5, min_answers=1, caller=OP)
    assert [e["state"] for e in ws.check_alerts(caller=OP)] == ["firing"]


def test_a_failing_webhook_is_recorded_not_raised(ws):
    ws.add_alert_rule("abstention_rate", 0.0, min_answers=1, webhook="http://127.0.0.1:9/nothing", caller=OP)
    _, a = ask(ws, "What is the capital of Mongolia?")
    assert a.abstained  # the answer was logged and served although the webhook fails
    deadline = time.monotonic() + 15
    while not ws.alerts.events()[0]["delivered"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert ws.alerts.events()[0]["delivered"].startswith("failed")


def test_only_admins_manage_alerts_and_rules_are_checked(ws):
    for call in (lambda: ws.alert_rules(caller=ANN), lambda: ws.firing_alerts(caller=ANN),
                 lambda: ws.add_alert_rule("error_rate", 0.1, caller=ANN), lambda: ws.check_alerts(caller=ANN)):
        with pytest.raises(PermissionDenied):
            call()
    for bad in (("nonsense", 1.0), ("error_rate", 2.0), ("p95_latency_ms", -1.0)):
        with pytest.raises(InputError):
            ws.add_alert_rule(*bad, caller=OP)
    with pytest.raises(InputError):
        ws.add_alert_rule("error_rate", 0.1, webhook="file:///etc/passwd", caller=OP)
    rule = ws.add_alert_rule("error_rate", 0.1, caller=OP)
    ws.delete_alert_rule(rule.rule_id, caller=OP)
    assert ws.alert_rules(caller=OP) == []


def test_tokens_and_costs_per_model_and_errors_per_stage(ws):
    qid, a = ask(ws, "When does the office open?")
    # as an answer written by a model would be logged (the chain fills usage: test_request_options.py)
    a.usage = {"gpt-4o-mini": {"input_tokens": 1000, "output_tokens": 200, "total_tokens": 1200}}
    a.models = {**a.models, "llm_error": "The language model (x) did not answer (Timeout)."}
    ws.feedback_for(caller=ANN).log_answer(a, [ws.get_kb("k", caller=ANN).kb_id])
    df = ws.feedback_for(caller=OP).frame()
    costs = FeedbackLog.costs(df, get_settings(ws.settings.data_dir, llm_prices="gpt-4o-mini=0.15/0.60").price_table)
    row = costs[costs["model"] == "gpt-4o-mini"].iloc[0]
    assert (row["answers"], row["tokens_in"], row["tokens_out"]) == (1, 1000, 200)
    assert row["cost"] == pytest.approx((1000 * 0.15 + 200 * 0.60) / 1e6)
    assert FeedbackLog.costs(df, {})["cost"].isna().all()  # no price set: no cost shown
    errors = FeedbackLog.stage_errors(df)
    assert errors.to_dict("records") == [{"stage": "model", "errors": 1,
                                          "latest": "The language model (x) did not answer (Timeout)."}]
    assert ws.alerts.measure("error_rate", 10) == (0.5, 2)
    with pytest.raises(ValueError):
        get_settings(ws.settings.data_dir, llm_prices="gpt-4o-mini=cheap").price_table  # noqa: B018


def test_cli_alerts(tmp_path):
    from tests.test_cli import run

    data = tmp_path / "data"
    run(data, "kb", "create", "kb")
    rule = json.loads(run(data, "alerts", "add", "error_rate", "0.2", "--window", "30", "--json").stdout)
    assert rule["metric"] == "error_rate" and rule["window_minutes"] == 30
    assert [r["rule_id"] for r in json.loads(run(data, "alerts", "list", "--json").stdout)["rules"]] == [rule["rule_id"]]
    assert json.loads(run(data, "alerts", "check", "--json").stdout) == {"events": []}
    res = run(data, "alerts", "list", "--user", "bob", ok=False)
    assert res.returncode != 0 and "admin" in res.stderr
    run(data, "alerts", "delete", rule["rule_id"])
    assert json.loads(run(data, "alerts", "list", "--json").stdout)["rules"] == []
