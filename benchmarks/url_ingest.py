"""URL ingestion of a loopback site (benchmarks/web_site.py): a sitemap of N article pages, each
wrapped in a menu, a cookie banner, a sidebar and a footer; robots.txt disallows one listed URL.

    python benchmarks/url_ingest.py [--pages 50]

Reports: pages ingested and refused (robots.txt), seconds for the whole fetch-extract-index,
the share of pages whose distinctive sentence is in the index (main text kept), the share of
boilerplate sentences that reached the index (target 0), a refetch with one page changed
(updated: 1, unchanged: the rest), and whether a question about one page is answered from it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.web_site import BOILERPLATE, Site, fact  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OP = Caller.operator()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "url_ingest.json"))
    args = ap.parse_args()
    with Site(args.pages) as site, tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(get_settings(Path(tmp) / "data", url_allow_private=True, answer_cache=False))
        try:
            kb = ws.create_kb("web", caller=OP)
            t = time.perf_counter()
            stats = ws.ingest_url("web", f"{site.base}/sitemap.xml", caller=OP, max_pages=args.pages)
            seconds = time.perf_counter() - t
            text = " ".join(" ".join(r["text"].split())
                            for r in ws.db.query("SELECT text FROM chunks WHERE kb_id=?", (kb.kb_id,)))
            kept = sum(fact(i) in text for i in range(args.pages))
            leaked = sum(text.count(b) for b in BOILERPLATE)
            site.versions[3] = 2
            t = time.perf_counter()
            again = ws.ingest_url("web", f"{site.base}/sitemap.xml", caller=OP, max_pages=args.pages)
            refetch_s = time.perf_counter() - t
            a = ws.ask(["web"], "When does the glacier of district 3 open?", caller=OP)
            out = {
                "pages": args.pages, "command": f"python benchmarks/url_ingest.py --pages {args.pages}",
                "ingested": sum(r.status == "ingested" for r in stats.reports),
                "refused": {r.file.replace(site.base, ""): r.reason for r in stats.reports if r.status == "failed"},
                "seconds": round(seconds, 2), "pages_per_s": round(args.pages / seconds, 2),
                "chunks": stats.chunks,
                "main_text_kept": round(kept / args.pages, 4),
                "boilerplate_sentences_indexed": leaked,
                "refetch": {"updated": sum(r.status == "ingested" for r in again.reports),
                            "unchanged": sum(r.status == "duplicate" for r in again.reports),
                            "seconds": round(refetch_s, 2)},
                "question_answered_from_its_page": (not a.abstained and bool(a.citations)
                                                    and a.citations[0].source == f"{site.base}/page/3"),
            }
        finally:
            ws.close()
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
