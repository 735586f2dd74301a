"""Server time of a Chat page rerun with N answered turns on screen (issue target: ≤ 150 ms at 20).

Every widget interaction reruns the whole page script, so this is what each click costs once a
conversation is long. Runs the real page through Streamlit's AppTest (the same script a browser
gets, headless) over real sample PDFs from ../shared/data, asks N questions taken from the
documents' own sentences, then times reruns with nothing new to answer. Also counts file reads
of the stored originals during those reruns (should be 0: downloads are deferred to the click).

    python benchmarks/chat_rerun.py [--turns 20] [--reruns 30]
"""

from __future__ import annotations

import argparse
import builtins
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from rag_core.access import Caller

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PDFS = REPO.parent / "shared" / "data" / "pdfs-py-pdf-sample-files"
SAMPLES = ["009-pdflatex-geotopo", "026-latex-multicolumn", "004-pdflatex-4-pages", "011-google-doc-document"]


def questions_from(ws, kb: str, n: int) -> list[str]:
    """Questions a reader of these documents might ask: a sentence's opening words."""
    out = []
    kb_id = ws.get_kb(kb, caller=Caller.operator()).kb_id
    for doc in ws.appdb.list_documents(kb_id):
        for ch in ws.store.document_chunks(kb_id, doc.doc_id):
            for sent in re.split(r"(?<=[.!?])\s+", ch.text):
                words = sent.split()
                if 8 <= len(words) <= 40 and sent[0].isupper():
                    out.append("What about " + " ".join(words[:7]).rstrip(",.;:") + "?")
    step = max(1, len(out) // n)
    return out[::step][:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--reruns", type=int, default=30)
    ap.add_argument("--profile", action="store_true", help="print a cProfile of one rerun")
    args = ap.parse_args()
    if not PDFS.exists():
        sys.exit(f"needs the sample PDFs at {PDFS}")

    data = Path(tempfile.mkdtemp()) / "data"
    os.environ["RAG_DATA_DIR"] = str(data)
    os.chdir(REPO)
    from streamlit.testing.v1 import AppTest

    from rag_core.config import get_settings
    from rag_core.workspace import Workspace

    ws = Workspace(get_settings(data))
    ws.create_kb("Samples", caller=Caller.operator())
    files = [next((PDFS / s).glob("*.pdf")) for s in SAMPLES]
    ws.ingest("Samples", files, caller=Caller.operator())
    qs = questions_from(ws, "Samples", args.turns)
    ws.close()

    at = AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=300).run()
    t0 = time.perf_counter()
    for q in qs:
        at.chat_input[0].set_value(q).run()
    asked_s = time.perf_counter() - t0
    answers = [m["answer"] for m in at.session_state["messages"] if m["role"] == "assistant"]
    answered = sum(not a.abstained for a in answers)
    citations = sum(len(a.citations) for a in answers)

    originals = str(data / "originals") if (data / "originals").exists() else str(data)
    reads: list[str] = []
    real_open = builtins.open

    def counting_open(file, *a, **kw):
        if isinstance(file, (str, os.PathLike)) and str(file).startswith(originals) and str(file).endswith(".pdf"):
            reads.append(str(file))
        return real_open(file, *a, **kw)

    builtins.open = counting_open
    import gc

    gc_ms = [0.0]
    gc_t = [0.0]

    def on_gc(phase, info):  # how much of a slow rerun is the garbage collector
        if phase == "start":
            gc_t[0] = time.perf_counter()
        else:
            gc_ms[0] += (time.perf_counter() - gc_t[0]) * 1000

    gc.callbacks.append(on_gc)
    print(f"objects tracked by the garbage collector: {len(gc.get_objects()):,} (frozen {gc.get_freeze_count():,})")
    gcs = []
    times = []
    try:
        at.run()  # warm
        for _ in range(args.reruns):
            gc_ms[0] = 0.0
            t = time.perf_counter()
            at.run()
            times.append((time.perf_counter() - t) * 1000)
            gcs.append(gc_ms[0])
    finally:
        builtins.open = real_open
        gc.callbacks.remove(on_gc)
    assert not at.exception, at.exception
    if args.profile:
        import cProfile
        import pstats

        from streamlit.runtime.scriptrunner import script_runner

        pr = cProfile.Profile()
        real = script_runner.exec_func_with_error_handling

        def profiled(func, ctx):  # the page runs on the script thread: profile there
            pr.enable()
            try:
                return real(func, ctx)
            finally:
                pr.disable()

        script_runner.exec_func_with_error_handling = profiled
        at.run()
        script_runner.exec_func_with_error_handling = real
        pstats.Stats(pr).sort_stats("cumulative").print_stats(40)

    print("rerun times (ms, in order):", " ".join(f"{t:.0f}" for t in times))
    print("of which garbage collection:", " ".join(f"{t:.0f}" for t in gcs))
    times.sort()
    p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}")
    print(f"documents: {len(files)} sample PDFs; turns on screen: {len(answers)} answers "
          f"({answered} answered, {citations} citation buttons); asking them took {asked_s:.1f} s")
    print(f"rerun server time over {len(times)} reruns: p50 {statistics.median(times):.1f} ms, "
          f"p95 {p95:.1f} ms, max {times[-1]:.1f} ms (target ≤ 150 ms)")
    print(f"reads of stored originals during reruns: {len(reads)}")


if __name__ == "__main__":
    main()
