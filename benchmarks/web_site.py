"""A small web site on loopback for URL ingestion (rag_core/ingest/web.py): N article pages, each
wrapped in the boilerplate real sites carry (a menu, a cookie banner, a footer, a sidebar of
links), a sitemap listing them, a robots.txt that disallows /private/, a redirect, and a PDF
link that is not a page. Used by tests/ingest/test_web.py and benchmarks/url_ingest.py.

Each article holds a distinctive sentence (`FACT`) that must be found after ingestion, and
the boilerplate holds sentences (`BOILERPLATE`) that must not be indexed.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOPICS = ["harbour", "lighthouse", "orchard", "glacier", "library", "vineyard", "observatory", "bakery", "ferry",
          "quarry"]
BOILERPLATE = ["We use cookies to improve your experience on this site.",
               "Copyright Example Regional Council. All rights reserved.",
               "Subscribe to our newsletter for weekly updates.",
               "Home About Contact Careers Press"]


def fact(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return f"The {topic} of district {i} opens at {6 + i % 5} o'clock and welcomes {100 + 7 * i} visitors a day."


def article(i: int, version: int = 1) -> str:
    topic = TOPICS[i % len(TOPICS)]
    extra = "" if version == 1 else f"<p>Update {version}: the {topic} of district {i} now also opens on Sundays.</p>"
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>The {topic} of district {i}</title>
<meta name="description" content="About the {topic} of district {i}."></head><body>
<div id="cookie-banner" class="cookie-consent"><p>{BOILERPLATE[0]}</p><button>Accept</button></div>
<header><nav class="menu"><ul><li><a href="/">Home</a></li><li><a href="/about">About</a></li>
<li><a href="/contact">Contact</a></li><li><a href="/careers">Careers</a></li><li><a href="/press">Press</a></li></ul></nav></header>
<main><article><h1>The {topic} of district {i}</h1>
<p>{fact(i)}</p>
<p>Built more than a century ago, the {topic} is one of the oldest public places in the district. Local
volunteers keep its records, and guided tours leave from the main entrance every hour in summer.</p>
<h2>Getting there</h2><p>Bus line {i % 9 + 1} stops in front of the {topic}; parking is limited on market days.</p>
{extra}</article></main>
<aside class="sidebar"><h3>Related</h3><ul><li><a href="/page/{(i + 1)}">Next district</a></li>
<li><a href="/files/report-{i}.pdf">Annual report (PDF)</a></li></ul></aside>
<footer><p>{BOILERPLATE[1]}</p><p>{BOILERPLATE[2]}</p></footer></body></html>"""


class Site:
    """`pages` article pages at /page/<i>; /sitemap.xml lists them (and /private/secret, which
    robots.txt disallows); /moved redirects to /page/0; /files/*.pdf is not a page.
    `versions[i]` changes page i's text (a refetch must update it)."""

    def __init__(self, pages: int = 50):
        self.pages = pages
        self.versions: dict[int, int] = {}
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status: int, body: bytes, ctype: str, extra: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):  # noqa: N802
                outer.hits.append(self.path)
                p = self.path.split("?")[0]
                if p == "/robots.txt":
                    return self._send(200, b"User-agent: *\nDisallow: /private/\n", "text/plain")
                if p == "/sitemap.xml":
                    urls = [f"{outer.base}/page/{i}" for i in range(outer.pages)] + [f"{outer.base}/private/secret"]
                    xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/'
                           'sitemap/0.9">' + "".join(f"<url><loc>{u}</loc></url>" for u in urls) + "</urlset>")
                    return self._send(200, xml.encode(), "application/xml")
                if p == "/moved":
                    return self._send(301, b"", "text/plain", {"Location": "/page/0"})
                if p.startswith("/page/"):
                    try:
                        i = int(p.rsplit("/", 1)[1])
                    except ValueError:
                        i = -1
                    if 0 <= i < outer.pages:
                        return self._send(200, article(i, outer.versions.get(i, 1)).encode(), "text/html; charset=utf-8")
                if p.startswith("/private/"):
                    return self._send(200, b"<html><body><p>The vault code is 0000.</p></body></html>", "text/html")
                if p.startswith("/files/"):
                    return self._send(200, b"%PDF-1.4 not a page", "application/pdf")
                return self._send(404, b"not found", "text/plain")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="web-site")
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Site:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
