"""Web pages by URL: a page, or every page a sitemap lists, fetched politely and read for their
main text (issue 53).

- robots.txt is honoured for our user agent (urllib.robotparser); a site without one allows all.
- The main text is extracted by trafilatura (a well-kept extractor built for this: it drops
  navigation, footers and cookie banners that a hand-written HTML-to-text pass would index),
  as Markdown so headings, lists and code blocks keep their shape for the chunker.
- Each page becomes a document whose source is its URL and whose date is the day it was
  fetched; fetching the same URL again replaces the document when its text changed and
  leaves it alone when not (the ingest pipeline's versions by source name).
- Server-side fetching of a URL a user typed is a classic way into a private network, so by
  default only public addresses are fetched: every hop of a redirect is resolved and refused
  when it points at a loopback, private, link-local or reserved address
  (`RAG_URL_ALLOW_PRIVATE=true` allows them, for an intranet or for tests on loopback).
"""

from __future__ import annotations

import ipaddress
import socket
import time
import urllib.parse
import urllib.robotparser
from dataclasses import dataclass, field
from xml.etree import ElementTree

from ..errors import GroundworkError, MissingDependency

USER_AGENT = "GroundworkBot/1.0 (+https://github.com/groundwork; document ingestion)"
MAX_REDIRECTS = 5
_SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


class WebError(GroundworkError):
    """A URL that cannot be fetched or read; the message says why."""


@dataclass
class WebPage:
    url: str
    title: str
    markdown: str
    fetched: str  # YYYY-MM-DD (UTC)


@dataclass
class Fetched:
    pages: list[WebPage] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (url, why)


def check_url(url: str, allow_private: bool) -> str:
    """The URL, if it is http(s) with a host that resolves to addresses we may fetch."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebError(f"{url!r} is not an http(s) URL")
    if not allow_private:
        try:
            infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        except OSError as exc:
            raise WebError(f"{parts.hostname}: cannot resolve ({exc})") from None
        for info in infos:
            ip = ipaddress.ip_address(info[4][0])
            if ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast:
                raise WebError(f"{parts.hostname} is a private or local address ({ip}); "
                               "set RAG_URL_ALLOW_PRIVATE=true to fetch from your own network")
    return url.strip()


def _get(client, url: str, allow_private: bool, max_bytes: int) -> tuple[str, bytes, str]:
    """(final URL, body, content type), following redirects one checked hop at a time."""
    for _ in range(MAX_REDIRECTS + 1):
        check_url(url, allow_private)
        with client.stream("GET", url) as r:
            if r.is_redirect:
                url = urllib.parse.urljoin(url, r.headers.get("location", ""))
                continue
            if r.status_code != 200:
                raise WebError(f"HTTP {r.status_code}")
            body = bytearray()
            for part in r.iter_bytes():
                body += part
                if len(body) > max_bytes:
                    raise WebError(f"larger than {max_bytes // (1024 * 1024)} MB")
            return url, bytes(body), r.headers.get("content-type", "")
    raise WebError(f"more than {MAX_REDIRECTS} redirects")


def _robots(client, url: str, allow_private: bool, cache: dict) -> urllib.robotparser.RobotFileParser:
    parts = urllib.parse.urlsplit(url)
    root = f"{parts.scheme}://{parts.netloc}"
    if root not in cache:
        rp = urllib.robotparser.RobotFileParser()
        try:
            _, body, _ = _get(client, root + "/robots.txt", allow_private, 512 * 1024)
            rp.parse(body.decode("utf-8", "replace").splitlines())
        except WebError:
            rp.parse([])  # none (or unreadable): everything is allowed
        cache[root] = rp
    return cache[root]


def _sitemap_urls(body: bytes) -> tuple[list[str], bool] | None:
    """(the URLs a sitemap lists, whether they are sitemaps themselves); None: not a sitemap."""
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None
    tag = root.tag.replace(_SITEMAP_NS, "")
    if tag not in ("urlset", "sitemapindex"):
        return None
    locs = [el.text.strip() for el in root.iter(f"{_SITEMAP_NS}loc") if el.text and el.text.strip()]
    locs += [el.text.strip() for el in root.iter("loc") if el.text and el.text.strip()]
    return list(dict.fromkeys(locs)), tag == "sitemapindex"


def extract(html: bytes | str, url: str) -> tuple[str, str]:
    """(title, main text as Markdown) of a page ("" text: nothing worth indexing)."""
    try:
        import trafilatura
    except ImportError as exc:  # pragma: no cover - in requirements.txt
        raise MissingDependency("web pages need trafilatura: pip install trafilatura lxml_html_clean") from exc
    text = trafilatura.extract(html, url=url, output_format="markdown", include_comments=False, include_tables=True,
                               include_links=False, include_images=False, favor_precision=True) or ""
    meta = trafilatura.extract_metadata(html, default_url=url)
    title = (meta.title if meta and meta.title else "") or urllib.parse.urlsplit(url).path.strip("/") or url
    return title.strip(), text.strip()


def fetch(url: str, *, max_pages: int = 50, allow_private: bool = False, max_bytes: int = 20 * 1024 * 1024,
          timeout: float = 20.0) -> Fetched:
    """The page at `url`, or the pages its sitemap lists (at most `max_pages`), read for their
    main text; what could not be fetched or read is listed with the reason."""
    import httpx

    out = Fetched()
    robots: dict = {}
    today = time.strftime("%Y-%m-%d", time.gmtime())
    with httpx.Client(headers={"User-Agent": USER_AGENT}, timeout=timeout, follow_redirects=False) as client:
        queue, seen, sitemaps = [check_url(url, allow_private)], set(), 0
        while queue and len(out.pages) < max_pages:
            u = queue.pop(0)
            if u in seen:
                continue
            seen.add(u)
            if not _robots(client, u, allow_private, robots).can_fetch(USER_AGENT, u):
                out.skipped.append((u, "robots.txt disallows it"))
                continue
            try:
                final, body, ctype = _get(client, u, allow_private, max_bytes)
            except (WebError, httpx.HTTPError) as exc:
                out.skipped.append((u, str(exc) or type(exc).__name__))
                continue
            listed = _sitemap_urls(body) if ("xml" in ctype or u.endswith(".xml")) else None
            if listed is not None:
                sitemaps += 1
                if sitemaps > 20:
                    out.skipped.append((u, "more than 20 sitemaps"))
                    continue
                queue += [x for x in listed[0] if x not in seen]
                continue
            if "html" not in ctype and not body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
                out.skipped.append((u, f"not a web page ({ctype or 'unknown type'})"))
                continue
            title, text = extract(body, final)
            if not text:
                out.skipped.append((u, "no main text found on the page"))
                continue
            out.pages.append(WebPage(final, title, text, today))
    return out
