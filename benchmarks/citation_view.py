"""How well and how fast the citation viewer finds a cited passage on its PDF page.

Ingests the text sample PDFs of ../shared/data/pdfs-py-pdf-sample-files (pypdf extracts the
passages), then for every chunk asks the viewer for its page the way the chat does (best page of
the chunk's span, PDFium's text layer, word alignment) and reports: the share of chunks whose
words are found (≥ 80% of them over the pages the chunk spans, and on the page opened first), the share with at least one highlight box,
and render time cold and from the page cache.

    python benchmarks/citation_view.py
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from rag_core.access import Caller

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PDFS = REPO.parent / "shared" / "data" / "pdfs-py-pdf-sample-files"


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    if not PDFS.exists():
        sys.exit(f"needs the sample PDFs at {PDFS}")
    from rag_core.citation_view import PageCache, best_of, page_shares
    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(Path(tempfile.mkdtemp()) / "data"))
    ws.create_kb("Samples", caller=Caller.operator())
    stats = ws.ingest("Samples", sorted(PDFS.glob("*/*.pdf")), caller=Caller.operator())
    kb = ws.get_kb("Samples", caller=Caller.operator()).kb_id
    cache = PageCache(max_items=10_000)
    found = on_page = boxed = total = spanned = 0
    cold, warm, misses = [], [], []
    for doc in ws.appdb.list_documents(kb):
        path = Path(doc.stored_path)
        for ch in ws.store.document_chunks(kb, doc.doc_id):
            total += 1
            t = time.perf_counter()
            shares = page_shares(path, ch.page_start, max(ch.page_end, ch.page_start), ch.text)
            page = best_of(shares, ch.page_start)  # the page the viewer opens first
            view = cache.get(path, page, ch.text)
            cold.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            cache.get(path, page, ch.text)
            warm.append((time.perf_counter() - t) * 1000)
            spanned += len(shares) > 1
            found += sum(shares.values()) >= 0.8
            on_page += view.matched >= 0.8
            boxed += bool(view.boxes)
            if sum(shares.values()) < 0.8:
                misses.append(f"{doc.source} pp.{ch.page_start}-{ch.page_end}: {sum(shares.values()):.0%} "
                              "of the words found")
    ws.close()
    ingested = sum(r.status == "ingested" for r in stats.reports)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}")
    print(f"sample PDFs: {len(stats.reports)} files, {ingested} ingested (the rest are image-only, encrypted "
          f"or broken); {total} cited passages (chunks) checked")
    print(f"passage found on its pages (≥80% of its words, over the pages it spans): {found}/{total} = "
          f"{found / total:.1%}; on the one page opened first: {on_page}/{total} = {on_page / total:.1%} "
          f"({spanned} passages run over two or more pages); highlight drawn: {boxed}/{total} = {boxed / total:.1%}")
    print(f"page image with highlight, cold: p50 {statistics.median(cold):.0f} ms, p95 {pct(cold, 0.95):.0f} ms; "
          f"from the page cache: p50 {statistics.median(warm):.2f} ms")
    for m in misses[:15]:
        print("  miss:", m)


if __name__ == "__main__":
    main()
