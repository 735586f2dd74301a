"""How often does a comparison fall back to the sentence diff ("what changed") on two documents
that are not versions of each other, and does it still serve two versions of one?

- not versions: every pair of five R manuals (R-intro, R-FAQ, R-data, R-admin, R-lang: Debian's
  r-doc-pdf, as the newcomer's trial used) and every pair of ten SQuAD v2 train-side articles;
- versions: each of those ten articles against a copy with every fifth sentence edited (one word
  changed) and saved under another name (so only the text can tell).

The old rule fired the diff whenever the two shared three similar sentences
(document_reader.changes); the new one asks versions_of_one first (same name or title once
version marks are set aside, or half the shorter one's sentences the same).

    python benchmarks/compare_versions.py --manuals /tmp/manuals/usr/share/doc/r-doc-pdf/manual
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_core.generation.document_reader import changes, compare_topics, versions_of_one  # noqa: E402
from rag_core.ingest.chunker import chunk_document  # noqa: E402
from rag_core.ingest.loaders import load_file  # noqa: E402
from rag_core.models import Chunk  # noqa: E402
from rag_core.text.sentences import split_sentences  # noqa: E402

SQUAD = Path(__file__).resolve().parents[2] / "shared" / "data" / "squad-dev" / "dev-v2.0-reconstructed.json"
MANUALS = ("R-intro.pdf", "R-FAQ.pdf", "R-data.pdf", "R-admin.pdf", "R-lang.pdf")


def chunks(doc_id: str, paragraphs: list[str]) -> list[Chunk]:
    return [Chunk(chunk_id=f"{doc_id}-{i}", doc_id=doc_id, kb_id="k", text=p, ordinal=i)
            for i, p in enumerate(paragraphs) if p.strip()]


def edited(paragraphs: list[str]) -> list[str]:
    out, n = [], 0
    for p in paragraphs:
        sents = split_sentences(p)
        for k, s in enumerate(sents):
            n += 1
            if n % 5 == 0 and len(s.split()) > 3:
                w = s.split()
                sents[k] = " ".join(w[:-1] + ["indeed", w[-1]])
        out.append(" ".join(sents))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--manuals", required=True)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "compare_versions.json"))
    args = ap.parse_args()
    docs, sectioned = {}, {}
    for name in MANUALS:
        loaded = load_file(Path(args.manuals) / name)[0]
        docs[name] = (loaded.title, chunks(name, "\n\n".join(loaded.pages).split("\n\n")))
        sectioned[name] = chunk_document(loaded, doc_id=name, kb_id="k")  # with the headings the app reads
    arts = json.loads(SQUAD.read_text())["data"][:10]  # train side (SPLIT.md)
    squad = {f"{a['title']}.md": (a["title"].replace("_", " "), chunks(a["title"], [p["context"] for p in a["paragraphs"]]))
             for a in arts}
    rows = []
    for group, pool in (("manuals", docs), ("squad", squad)):
        for (na, (ta, ca)), (nb, (tb, cb)) in itertools.combinations(pool.items(), 2):
            topics = compare_topics(sectioned.get(na, ca), sectioned.get(nb, cb))
            rows.append({"pair": f"{na} | {nb}", "versions": False, "group": group,
                         "old_fires": bool(changes(ca, cb)), "new_fires": versions_of_one(na, ta, nb, tb, ca, cb),
                         "shared_topics": [f"{x.section.heading} <> {y.section.heading} ({sim:.2f})"
                                           for sim, x, y in topics.shared],
                         "only": [x.section.heading for x in topics.only_a + topics.only_b]})
    for a in arts:
        paras = [p["context"] for p in a["paragraphs"]]
        ca, cb = chunks("a", paras), chunks("b", edited(paras))
        rows.append({"pair": f"{a['title']} | edited copy", "versions": True, "group": "squad-versions",
                     "old_fires": bool(changes(ca, cb)),
                     "new_fires": versions_of_one(f"{a['title']}.md", "", "notes.md", "", ca, cb)})
    out = {}
    for group in ("manuals", "squad", "squad-versions"):
        rs = [r for r in rows if r["group"] == group]
        out[group] = {"pairs": len(rs), "old_fires": sum(r["old_fires"] for r in rs),
                      "new_fires": sum(r["new_fires"] and (r["old_fires"] or not r["versions"]) for r in rs)
                      if group != "squad-versions" else sum(r["new_fires"] for r in rs)}
        if group != "squad-versions":  # the topic-by-topic comparison those pairs now get
            out[group]["pairs_with_a_shared_topic"] = sum(bool(r["shared_topics"]) for r in rs)
            out[group]["shared_topics_shown"] = sum(len(r["shared_topics"]) for r in rs)
    print(json.dumps(out, indent=1))
    Path(args.out).write_text(json.dumps({"summary": out, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
