"""Web pages by URL (rag_core/ingest/web.py, Workspace.ingest_url; issue 53) against a real HTTP
server on loopback (benchmarks/web_site.py): main text in, menus and footers out, robots.txt
honoured, sitemaps followed, a changed page updated on refetch, and private addresses refused
unless allowed. Real workspace, store and models."""

from __future__ import annotations

import json
import time

import pytest

from benchmarks.web_site import BOILERPLATE, Site, fact
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.ingest.web import WebError, check_url
from rag_core.workspace import Workspace

OP = Caller.operator()


@pytest.fixture(scope="module")
def site():
    with Site(pages=6) as s:
        yield s


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data", url_allow_private=True, answer_cache=False))
    w.create_kb("web", caller=OP)
    yield w
    w.close()


def chunks_text(ws) -> str:
    kb = ws.get_kb("web", caller=OP)
    return " ".join(r["text"] for r in ws.db.query("SELECT text FROM chunks WHERE kb_id=?", (kb.kb_id,)))


def test_a_page_goes_in_with_its_main_text_its_url_and_the_fetch_day(ws, site):
    stats = ws.ingest_url("web", f"{site.base}/page/1", caller=OP)
    assert [r.status for r in stats.reports] == ["ingested"]
    doc = ws.list_documents("web", caller=OP)[0]
    assert doc.source == f"{site.base}/page/1" and doc.date == time.strftime("%Y-%m-%d", time.gmtime())
    text = chunks_text(ws)
    assert fact(1) in " ".join(text.split())
    assert not any(b in text for b in BOILERPLATE)  # menu, cookie banner and footer left out
    a = ws.ask(["web"], "When does the lighthouse of district 1 open?", caller=OP)
    assert not a.abstained and "7 o'clock" in a.text and a.citations[0].source == f"{site.base}/page/1"


def test_a_sitemap_brings_its_pages_and_robots_txt_keeps_one_out(ws, site):
    stats = ws.ingest_url("web", f"{site.base}/sitemap.xml", caller=OP)
    by = {r.file: r for r in stats.reports}
    assert sum(r.status == "ingested" for r in stats.reports) == 6
    assert by[f"{site.base}/private/secret"].status == "failed"
    assert "robots.txt" in by[f"{site.base}/private/secret"].reason
    assert not any(h.startswith("/private/") for h in site.hits)  # never fetched
    assert "vault code" not in chunks_text(ws)
    assert ws.ingest_url("web", f"{site.base}/sitemap.xml", caller=OP, max_pages=2).reports[0].status == "duplicate"


def test_fetching_again_updates_a_changed_page_and_leaves_the_same_one(ws, site):
    url = f"{site.base}/page/2"
    ws.ingest_url("web", url, caller=OP)
    again = ws.ingest_url("web", url, caller=OP)
    assert again.reports[0].status == "duplicate"  # the same text: nothing re-indexed
    site.versions[2] = 2
    try:
        changed = ws.ingest_url("web", url, caller=OP)
    finally:
        site.versions.pop(2)
    assert changed.reports[0].status == "ingested"
    docs = ws.list_documents("web", caller=OP)
    assert [d.source for d in docs] == [url]  # replaced, not added beside the old one
    assert "now also opens on Sundays" in chunks_text(ws)


def test_redirects_are_followed_and_what_is_not_a_page_is_reported(ws, site):
    stats = ws.ingest_url("web", f"{site.base}/moved", caller=OP)
    assert stats.reports[0].status == "ingested" and stats.reports[0].file == f"{site.base}/page/0"
    bad = ws.ingest_url("web", f"{site.base}/files/report-1.pdf", caller=OP).reports[0]
    assert bad.status == "failed" and "not a web page" in bad.reason
    missing = ws.ingest_url("web", f"{site.base}/page/999", caller=OP).reports[0]
    assert missing.status == "failed" and "404" in missing.reason


def test_private_addresses_are_refused_unless_allowed(tmp_path, site):
    for url in ("http://127.0.0.1/x", "http://localhost:8080/", "http://10.1.2.3/", "http://169.254.169.254/latest/",
                "http://[::1]/"):
        with pytest.raises(WebError, match="private or local"):
            check_url(url, allow_private=False)
    for url in ("ftp://example.com/x", "file:///etc/passwd", "javascript:alert(1)", "http:///nohost"):
        with pytest.raises(WebError, match="not an http"):
            check_url(url, allow_private=False)
    w = Workspace(get_settings(tmp_path / "data"))
    try:
        w.create_kb("web", caller=OP)
        with pytest.raises(WebError, match="RAG_URL_ALLOW_PRIVATE"):
            w.ingest_url("web", f"{site.base}/page/1", caller=OP)
        assert w.list_documents("web", caller=OP) == []
    finally:
        w.close()


def test_cli_ingest_url(tmp_path, site, monkeypatch):
    from tests.test_cli import run

    monkeypatch.setenv("RAG_URL_ALLOW_PRIVATE", "true")
    data = tmp_path / "data"
    run(data, "kb", "create", "web")
    out = json.loads(run(data, "ingest", "--kb", "web", "--url", f"{site.base}/sitemap.xml", "--max-pages", "3",
                         "--json").stdout)
    assert out["pages"] == 3 and out["failed"] == 0 and out["chunks"] >= 3
