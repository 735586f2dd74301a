"""Alert rules over the query log: an administrator sets a threshold on a measure over a
window, and when the measure crosses it the rule fires: a webhook is posted and Analytics
shows a banner until the measure is back under it (then "resolved" is posted too).

Measures, over the answers logged in the last `window_minutes`:
- `p95_latency_ms`: the 95th percentile of the whole answer's time;
- `abstention_rate`: the share withheld;
- `thumbs_down_rate`: the share of rated answers rated down;
- `error_rate`: the share whose model call failed (answered offline instead: feedback.stage_errors).

A rule judges only a window with at least `min_answers` answers (rated answers, for the
thumbs-down rate): three slow answers at night are not an outage. Rules are checked as answers
are logged and rated, at most every RAG_ALERTS_EVERY_S seconds, and on demand (`alerts check`).
One decision, one place: `Alerts.check` alone fires and resolves, and records why.

Webhooks are posted from a background thread so an answer never waits for one; the payload is
JSON: {"rule_id", "metric", "value", "threshold", "window_minutes", "answers", "state"
("firing" | "resolved"), "at"}. Only administrators set them, so the URL is trusted as
configuration; it must be http(s).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
import uuid
from dataclasses import asdict, dataclass

from .db import Database
from .errors import InputError
from .evaluation import percentile

log = logging.getLogger(__name__)

METRICS = ("p95_latency_ms", "abstention_rate", "thumbs_down_rate", "error_rate")

SCHEMA = """
CREATE TABLE IF NOT EXISTS alert_rules (
    rule_id TEXT PRIMARY KEY,
    metric TEXT NOT NULL,
    threshold REAL NOT NULL,
    window_minutes INTEGER NOT NULL,
    min_answers INTEGER NOT NULL DEFAULT 5,
    webhook TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    firing INTEGER NOT NULL DEFAULT 0,
    value REAL,
    changed REAL
);
CREATE TABLE IF NOT EXISTS alert_events (
    ts REAL NOT NULL,
    rule_id TEXT NOT NULL,
    state TEXT NOT NULL,
    value REAL,
    answers INTEGER,
    delivered TEXT NOT NULL DEFAULT ''
);
"""


@dataclass
class AlertRule:
    rule_id: str
    metric: str
    threshold: float
    window_minutes: int
    min_answers: int = 5
    webhook: str = ""
    created: float = 0.0
    firing: bool = False
    value: float | None = None  # the measure when last checked
    changed: float | None = None  # when it last fired or resolved

    def describe(self) -> str:
        unit = " ms" if self.metric == "p95_latency_ms" else ""
        shown = f"{self.value:.0f}{unit}" if self.metric == "p95_latency_ms" else f"{(self.value or 0):.0%}"
        limit = f"{self.threshold:.0f}{unit}" if self.metric == "p95_latency_ms" else f"{self.threshold:.0%}"
        return f"{self.metric.replace('_', ' ')} is {shown} over the last {self.window_minutes} min (threshold {limit})"


class Alerts:
    def __init__(self, db: Database, every_s: float = 60.0, post=None):
        self.db = db
        db.executescript(SCHEMA)
        self.every_s = every_s
        self._post = post or _post_json
        self._checked = 0.0
        self._lock = threading.Lock()

    # ---- rules ----------------------------------------------------------------------------
    def add(self, metric: str, threshold: float, window_minutes: int = 15, webhook: str = "",
            min_answers: int = 5) -> AlertRule:
        if metric not in METRICS:
            raise InputError(f"metric must be one of {', '.join(METRICS)}")
        if metric != "p95_latency_ms" and not (0 <= threshold <= 1):
            raise InputError("a rate's threshold is a share from 0 to 1 (0.2 = 20%)")
        if threshold < 0 or not (1 <= window_minutes <= 7 * 24 * 60) or min_answers < 1:
            raise InputError("threshold ≥ 0, window 1 minute to 7 days, at least 1 answer")
        if webhook and not webhook.startswith(("http://", "https://")):
            raise InputError("the webhook is an http(s) URL")
        rule = AlertRule(uuid.uuid4().hex[:12], metric, float(threshold), int(window_minutes), int(min_answers),
                         webhook, time.time())
        with self.db.transaction() as c:
            c.execute("INSERT INTO alert_rules (rule_id, metric, threshold, window_minutes, min_answers, webhook, "
                      "created) VALUES (?,?,?,?,?,?,?)", (rule.rule_id, rule.metric, rule.threshold,
                                                         rule.window_minutes, rule.min_answers, rule.webhook, rule.created))
        return rule

    def rules(self) -> list[AlertRule]:
        return [AlertRule(r["rule_id"], r["metric"], r["threshold"], r["window_minutes"], r["min_answers"],
                          r["webhook"], r["created"], bool(r["firing"]), r["value"], r["changed"])
                for r in self.db.query("SELECT * FROM alert_rules ORDER BY created")]

    def delete(self, rule_id: str) -> None:
        with self.db.transaction() as c:
            if c.execute("DELETE FROM alert_rules WHERE rule_id=?", (rule_id,)).rowcount == 0:
                raise InputError("no such alert rule")

    def firing(self) -> list[AlertRule]:
        return [r for r in self.rules() if r.firing]

    def events(self, limit: int = 50) -> list[dict]:
        return [dict(r) for r in self.db.query("SELECT * FROM alert_events ORDER BY ts DESC LIMIT ?", (limit,))]

    # ---- measures -------------------------------------------------------------------------
    def measure(self, metric: str, window_minutes: int, now: float | None = None) -> tuple[float | None, int]:
        """(the measure over the window, how many answers it rests on); None when none."""
        since = (time.time() if now is None else now) - window_minutes * 60
        if metric == "thumbs_down_rate":
            rows = self.db.query("SELECT f.rating FROM feedback f JOIN queries q ON q.query_id=f.query_id "
                                 "WHERE q.ts >= ?", (since,))
            n = len(rows)
            return (sum(1 for r in rows if r[0] == -1) / n if n else None), n
        rows = self.db.query("SELECT abstained, timings, errors FROM queries WHERE ts >= ?", (since,))
        n = len(rows)
        if not n:
            return None, 0
        if metric == "abstention_rate":
            return sum(1 for r in rows if r["abstained"]) / n, n
        if metric == "error_rate":
            return sum(1 for r in rows if r["errors"] and json.loads(r["errors"])) / n, n
        return percentile([float(json.loads(r["timings"] or "{}").get("total", 0.0)) for r in rows], 95), n

    # ---- the decision ---------------------------------------------------------------------
    def maybe_check(self) -> None:
        """`check`, at most every `every_s` seconds (called as answers are logged and rated)."""
        now = time.time()
        if now - self._checked < self.every_s:
            return
        try:
            self.check(now)
        except Exception:  # noqa: BLE001 - an alert check never fails an answer
            log.warning("alert check failed", exc_info=True)

    def check(self, now: float | None = None) -> list[dict]:
        """Fire the rules whose measure is over their threshold, resolve those back under it;
        returns the events (each also posted to the rule's webhook and kept in alert_events)."""
        now = time.time() if now is None else now
        out = []
        with self._lock:
            self._checked = now
            for rule in self.rules():
                value, n = self.measure(rule.metric, rule.window_minutes, now)
                over = value is not None and n >= rule.min_answers and value > rule.threshold
                state = "firing" if over and not rule.firing else "resolved" if rule.firing and not over else None
                with self.db.transaction() as c:
                    c.execute("UPDATE alert_rules SET value=? WHERE rule_id=?", (value, rule.rule_id))
                    if state:
                        c.execute("UPDATE alert_rules SET firing=?, changed=? WHERE rule_id=?",
                                  (int(state == "firing"), now, rule.rule_id))
                        c.execute("INSERT INTO alert_events (ts, rule_id, state, value, answers) VALUES (?,?,?,?,?)",
                                  (now, rule.rule_id, state, value, n))
                if state:
                    event = {"rule_id": rule.rule_id, "metric": rule.metric, "value": value,
                             "threshold": rule.threshold, "window_minutes": rule.window_minutes, "answers": n,
                             "state": state, "at": now}
                    out.append(event)
                    if rule.webhook:
                        threading.Thread(target=self._deliver, args=(rule.webhook, event), daemon=True,
                                         name="alert-webhook").start()
        return out

    def _deliver(self, url: str, event: dict) -> None:
        try:
            self._post(url, event)
            outcome = "delivered"
        except Exception as exc:  # noqa: BLE001 - recorded, shown with the event
            outcome = f"failed: {type(exc).__name__}: {exc}"[:300]
            log.warning("alert webhook %s failed: %s", url, exc)
        with self.db.transaction() as c:
            c.execute("UPDATE alert_events SET delivered=? WHERE rule_id=? AND ts=? AND state=?",
                      (outcome, event["rule_id"], event["at"], event["state"]))


def _post_json(url: str, payload: dict, timeout: float = 5.0) -> None:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), method="POST",
                                 headers={"Content-Type": "application/json", "User-Agent": "groundwork-alerts"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - an admin's configured URL
        if resp.status >= 300:
            raise OSError(f"HTTP {resp.status}")


def rule_dict(rule: AlertRule) -> dict:
    return {**asdict(rule), "description": rule.describe() if rule.value is not None else ""}
