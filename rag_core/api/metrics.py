"""Prometheus metrics of one API process: requests by route and status, request latency, the
answer chain's stages, and answers vs abstentions (abstention rate = abstained / all answers).
A registry per app (tests build several); with several workers each reports its own, so scrape
each or set PROMETHEUS_MULTIPROC_DIR as prometheus_client documents."""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Metrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter("groundwork_http_requests_total", "HTTP requests", ["method", "route", "status"],
                                registry=self.registry)
        self.latency = Histogram("groundwork_http_request_seconds", "HTTP request latency (to the last byte)",
                                 ["method", "route"], buckets=_BUCKETS, registry=self.registry)
        self.stage = Histogram("groundwork_answer_stage_seconds", "Answer chain stage latency", ["stage"],
                               buckets=_BUCKETS, registry=self.registry)
        self.answers = Counter("groundwork_answers_total", "Answers given", ["outcome", "mode"], registry=self.registry)

    def answered(self, answer) -> None:
        self.answers.labels("abstained" if answer.abstained else "answered", answer.mode).inc()
        for stage, ms in (answer.timings_ms or {}).items():
            if isinstance(ms, (int, float)) and stage != "crag_rounds":
                self.stage.labels(stage).observe(ms / 1000.0)

    def render(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class MetricsMiddleware:
    """Outermost, so refused requests (401, 429, 413) are counted too. The route label is the
    path template (`/v1/knowledge-bases/{kb}`), never the raw path: ids would explode the series."""

    def __init__(self, app, metrics: Metrics):
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500

        async def send_status(msg):
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
            await send(msg)

        try:
            await self.app(scope, receive, send_status)
        finally:
            route = scope.get("route")
            # Refused at the gate (401/413/429) before routing: one label, not the raw path.
            label = getattr(route, "path", None) or ("(refused)" if status in (401, 413, 429) else "(unmatched)")
            self.metrics.requests.labels(scope["method"], label, str(status)).inc()
            self.metrics.latency.labels(scope["method"], label).observe(time.perf_counter() - t0)
