"""Where does the pipeline lose right answers when the model reads perfectly? The product's
real answer chain in LLM mode, pointed at a "perfect reader" (benchmarks/oracle_llm.py: an
OpenAI-compatible server on loopback that knows the gold answers and answers with the gold
sentence, cited, whenever a gold passage is among the passages it is shown). A benchmark
harness, not a product feature.

    # SQuAD 2.0 dev test articles (../shared/data/squad-dev), N answerable + N unanswerable
    python benchmarks/perfect_reader.py --set squad --data-dir /tmp/gw-oracle-squad --n 100 --gates shipped
    python benchmarks/perfect_reader.py --set squad --data-dir /tmp/gw-oracle-squad --n 100 --gates off
    # the 110 manual questions (benchmarks/data/manual_questions_v2.jsonl; PDFs: see the top
    # of benchmarks/manual_questions.py, unpacked under /tmp/manuals/usr)
    python benchmarks/perfect_reader.py --set manuals --pdfs /tmp/manuals/usr --data-dir /tmp/gw-oracle-manuals --gates shipped
    # the oracle calibrated on the shipped calibration set first, then run under `auto` (its policy)
    python benchmarks/perfect_reader.py --set manuals --pdfs /tmp/manuals/usr --data-dir /tmp/gw-oracle-manuals --calibrate
    # an answer policy (rag_core/generation/policy.py): --policy auto|conservative|model
    python benchmarks/perfect_reader.py --set squad --data-dir /tmp/gw-oracle-squad --policy model

--gates: `off` = answer_threshold 0 and llm_answer_threshold 0 (no reader veto before or
after generation); `shipped` = the product's defaults; `all` = the defaults plus the
optional LLM checks switched on (llm_relevance_check, llm_verify). `--policy NAME` passes
answer_policy=NAME to the settings (left at the default when not given). `--limit N` keeps the
first N of each kind (answerable, unanswerable / near-miss) of the same draw.

Correct: squad — the answer holds a gold answer (SQuAD normalisation, answer_quality.norm)
and cites the gold paragraph; an unanswerable question is right when abstained. manuals —
manual_questions.py's rule: an expect phrase in the answer AND a citation of the right manual
on a gold page; a near-miss is right when abstained.

Every answerable question not answered correctly is attributed to the first stage that lost
it:
  retrieval               no gold passage among the passages the chain's own retrieval returned
                          (captured from its GroundworkRetriever run; "gold" = a passage the
                          oracle would answer from: oracle_llm.gold_answer)
  context selection       retrieved, the model was asked (answer or relevance prompt) but
                          never shown a gold passage (llm_context_passages, the reader's order)
  gate before generation  abstained and the model was never asked to answer, or
                          decided_by is the reader or the model's relevance check
  check after generation  the model answered but the answer was withheld by the written-answer
                          check (decided_by "written_answer_check")
  verification            decided_by "verification"/"grounded_only", or the answer was shown
                          without a citation of the gold passage
  other                   anything else (e.g. shown and cited, but the gold text was lost)
For a miss, the gold passage's rank in ws.search's top 30 is recorded too (`gold_rank30`: a
plain ranking, without the answer's MMR and token budget), and each answerable row says whether
a passage of the gold paragraph / gold page was retrieved at all (`gold_place_retrieved`,
answer text or not).

Writes benchmarks/results/perfect_reader_<set>_<gates>[_<policy>].json (summary) and
..._rows.jsonl (one row per question), and prints the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402

from benchmarks.oracle_llm import Gold, gold_answer, oracle_server, qnorm  # noqa: E402
from rag_core.access import Caller  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import percentile  # noqa: E402
from rag_core.text.sentences import sentence_starts  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
STAGES = ("retrieval", "context selection", "gate before generation", "check after generation", "verification", "other")
GATE_DECIDERS = {"reader", "reader_gate", "model_relevance_check"}
VERIFY_DECIDERS = {"verification", "grounded_only"}


class RetrievalCapture(BaseCallbackHandler):
    """The passages each GroundworkRetriever run inside the chain returned (first = the question's)."""

    def __init__(self) -> None:
        self.runs: list[list] = []

    def on_retriever_end(self, documents, **kwargs) -> None:
        self.runs.append(list(documents))


# ------------------------------------------------------------------------------ question sets

def squad_items(args, ws: Workspace) -> tuple[str, list[dict]]:
    from benchmarks.answer_quality import KB, SQUAD, build_kb, questions

    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    answerable, impossible = questions(data, "test", args.n)
    if args.limit:
        answerable, impossible = answerable[: args.limit], impossible[: args.limit]
    items = []
    for label, group in (("answerable", answerable), ("unanswerable", impossible)):
        for qid, q, gold_doc, golds in group:
            item = {"id": qid, "question": q, "label": label, "gold_doc": gold_doc, "golds": golds, "gold": None}
            if label == "answerable":
                ai, pi = map(int, gold_doc.split("-"))
                para = data["data"][ai]["paragraphs"][pi]
                qa = next(x for x in para["qas"] if x["id"] == qid)
                item["gold"] = Gold(evidence=evidence_sentences(para["context"], qa["answers"]),
                                    answers=golds, paragraph=para["context"])
            items.append(item)
    return KB, items


def evidence_sentences(context: str, answers: list[dict]) -> list[str]:
    """The sentence(s) of the paragraph holding each gold answer span, by its answer_start
    (the product's sentence rule, which the chunker also cuts on)."""
    bounds = [0, *sentence_starts(context), len(context)]
    out = []
    for a in answers:
        s, e = a["answer_start"], a["answer_start"] + len(a["text"])
        if context[s:e] != a["text"]:
            s = context.find(a["text"])
            if s < 0:
                continue
            e = s + len(a["text"])
        lo = max(b for b in bounds if b <= s)
        hi = min(b for b in bounds if b >= e)
        sent = " ".join(context[lo:hi].split())
        if sent and sent not in out:
            out.append(sent)
    return out


def manual_items(args, ws: Workspace) -> tuple[str, list[dict]]:
    from benchmarks.check_manual_questions import MANUALS_V2, find_manuals, load_questions
    from benchmarks.manual_questions import KB_V2

    if not args.pdfs:
        raise SystemExit("--set manuals needs --pdfs (see the top of benchmarks/manual_questions.py)")
    caller = Caller.operator()
    qs = load_questions()
    if not ws.appdb.find_kbs(KB_V2):  # the same knowledge base as manual_questions.py --set v2
        paths = find_manuals(Path(args.pdfs), set(MANUALS_V2) | {q["manual"] for q in qs})
        ws.create_kb(KB_V2, description="Manuals of R, gnuplot, Bash, Asymptote and Maxima", caller=caller)
        t = time.perf_counter()
        stats = ws.ingest(KB_V2, [paths[m] for m in sorted(paths)], caller=caller)
        print(json.dumps({"ingested_pages": stats.pages, "chunks": stats.chunks,
                          "seconds": round(time.perf_counter() - t, 1),
                          "failed": [f"{r.file}: {r.reason}" for r in stats.reports if r.status == "failed"]}), flush=True)
    ans = [q for q in qs if q["answerable"]]
    near = [q for q in qs if not q["answerable"]]
    if args.limit:
        ans, near = ans[: args.limit], near[: args.limit]
    items = []
    for q in ans + near:
        items.append({"id": q["id"], "question": q["question"], "label": "answerable" if q["answerable"] else "near_miss",
                      "kind": q["kind"], "manual": q["manual"], "pages": q["pages"], "expect": q["expect"],
                      "gold": Gold(files={q["manual"]}, pages=set(q["pages"]), expect=list(q["expect"]))
                      if q["answerable"] else None})
    return KB_V2, items


# ------------------------------------------------------------------------------ scoring

def correct(set_name: str, item: dict, a) -> tuple[bool, bool, bool]:
    """(correct, text_ok, cite_ok) for an answerable question."""
    if set_name == "squad":
        from benchmarks.answer_quality import norm

        text_ok = any(norm(g) in norm(a.text) for g in item["golds"])
        cite_ok = any(c.doc_id == item["gold_doc"] for c in a.citations)
    else:
        from benchmarks.manual_questions import _norm

        text_ok = any(_norm(e) in _norm(a.text) for e in item["expect"])
        cite_ok = any(c.source == item["manual"] and c.page in set(item["pages"]) for c in a.citations)
    return (not a.abstained) and text_ok and cite_ok, text_ok, cite_ok


def is_gold_doc(gold: Gold, source: str, first: int, last: int, text: str) -> bool:
    return bool(gold_answer(gold, source, first, last, text))


def where_lost(a, gold_retrieved: bool, answer_calls: list[dict], relevance_calls: list[dict], cite_ok: bool) -> str:
    decided = getattr(a, "decided_by", None) or ""
    reason = a.reason or ""
    if not gold_retrieved:
        return "retrieval"
    asked = answer_calls + relevance_calls
    if asked and not any(c.get("gold_shown") for c in asked):
        return "context selection"
    if a.abstained and (not answer_calls or decided in GATE_DECIDERS):
        return "gate before generation"
    if a.abstained and any(c.get("answered") for c in answer_calls) and (
            decided == "written_answer_check" or "written answer does not answer" in reason
            or "written answer could not be confirmed" in reason):
        return "check after generation"
    if decided in VERIFY_DECIDERS or (not a.abstained and not cite_ok):
        return "verification"
    return "other"


def in_gold_place(set_name: str, item: dict, meta: dict) -> bool:
    if set_name == "squad":
        return meta.get("doc_id") == item["gold_doc"]
    first, last = int(meta.get("page_start", 1)), int(meta.get("page_end", 1))
    return meta.get("source") == item["manual"] and any(first <= p <= last for p in item["pages"])


def gold_rank(ws: Workspace, kb: str, q: str, gold: Gold) -> int | None:
    ranked = ws.search([kb], q, k=30, caller=Caller.operator()).results
    return next((i + 1 for i, r in enumerate(ranked)
                 if is_gold_doc(gold, r.chunk.source, r.chunk.page_start, r.chunk.page_end, r.chunk.text)), None)


# ------------------------------------------------------------------------------ run

def gate_settings(gates: str) -> dict:
    if gates == "off":
        return {"answer_threshold": 0.0, "llm_answer_threshold": 0.0}
    if gates == "all":
        return {"llm_relevance_check": True, "llm_verify": True}
    return {}


def run(args) -> dict:
    caller = Caller.operator()
    with oracle_server({}, args.mode) as srv:  # golds are set once the question set is read (it needs the workspace)
        overrides = dict(openai_base_url=srv.base_url, openai_api_key="oracle", llm_model=srv.model, llm_gguf=None,
                         llm_retries=0, llm_timeout=60, **gate_settings(args.gates))
        if args.policy:
            overrides["answer_policy"] = args.policy
        settings = get_settings(args.data_dir, **overrides)
        ws = Workspace(settings)
        kb, items = (squad_items if args.set == "squad" else manual_items)(args, ws)
        golds: dict[str, Gold] = {}
        for it in items:
            if it["gold"] is not None:
                golds.setdefault(qnorm(it["question"]), it["gold"])
        calibration = None
        if args.calibrate:
            # The oracle calibrated like any model: it knows the calibration set's golds too, and
            # the policy fitted on it (train side) is the one `auto` then applies to the test set.
            from rag_core.generation.calibrate import load_set

            _, cal_qs, _ = load_set()
            srv.set_golds({**golds, **{qnorm(q["question"]): Gold(evidence=[q["evidence"]], answers=q["answers"])
                                       for q in cal_qs if q["answerable"]}})
            t = time.perf_counter()
            run = ws.calibrate_answer_policy(caller=caller, limit=args.calibrate_limit or None)
            calibration = {"questions": run.rows, "minutes": round((time.perf_counter() - t) / 60, 2),
                           "params": run.params, "figures": run.figures}
            print(json.dumps({"calibration": calibration}), flush=True)
            srv.calls.clear()
            srv.log.clear()
        srv.set_golds(golds)
        ws.ask([kb], "warm-up question", caller=caller)  # model loads are not a question's latency
        rows = []
        for it in items:
            cap = RetrievalCapture()
            n0 = len(srv.calls)
            t0 = time.perf_counter()
            a = None
            for ev in ws.answers.chain.stream(ws.answer_request([kb], it["question"], caller=caller),
                                              {"callbacks": [cap]}):
                if ev.kind == "answer":
                    a = ev.answer
            ms = (time.perf_counter() - t0) * 1000
            calls = srv.calls[n0:]
            answer_calls = [c for c in calls if c["kind"] == "answer"]
            relevance_calls = [c for c in calls if c["kind"] == "relevance"]
            row = {"id": it["id"], "label": it["label"], "kind": it.get("kind"), "question": it["question"],
                   "abstained": a.abstained, "decided_by": getattr(a, "decided_by", None) or None,
                   "policy": getattr(a, "policy", None) or None, "reason": a.reason, "mode": a.mode,
                   "llm_error": a.models.get("llm_error"), "latency_ms": round(ms, 1),
                   "oracle_answer_calls": len(answer_calls), "oracle_relevance_calls": len(relevance_calls),
                   "oracle_gold_shown": any(c.get("gold_shown") for c in answer_calls + relevance_calls),
                   "oracle_answered": any(c.get("answered") for c in answer_calls),
                   "cited": [f"{c.source}:{c.page}" if args.set == "manuals" else c.doc_id for c in a.citations][:5],
                   "answer": a.text[:300]}
            if it["gold"] is not None:
                first = cap.runs[0] if cap.runs else []
                retrieved = [d for d in first if is_gold_doc(it["gold"], d.metadata.get("source", ""),
                                                             int(d.metadata.get("page_start", 1)),
                                                             int(d.metadata.get("page_end", 1)), d.page_content)]
                ok, text_ok, cite_ok = correct(args.set, it, a)
                row.update(correct=ok, text_ok=text_ok, cite_ok=cite_ok, gold_retrieved=bool(retrieved),
                           # a passage of the gold paragraph / the right manual on a gold page,
                           # whether or not it holds the answer text
                           gold_place_retrieved=any(in_gold_place(args.set, it, d.metadata) for d in first),
                           retrieved=len(first), loss=None)
                if not ok:
                    row["loss"] = where_lost(a, bool(retrieved), answer_calls, relevance_calls, cite_ok)
                    row["gold_rank30"] = gold_rank(ws, kb, it["question"], it["gold"])
            else:
                row["correct"] = a.abstained
            rows.append(row)
            print(json.dumps({k: row.get(k) for k in ("id", "label", "correct", "abstained", "decided_by", "loss",
                                                        "latency_ms")}), flush=True)
        summary = summarise(args, settings, rows, srv)
        summary["calibration"] = calibration
        ws.close()
    OUT.mkdir(exist_ok=True)
    stem = (f"perfect_reader_{args.set}_{args.gates}" + (f"_{args.policy}" if args.policy else "")
            + ("_calibrated" if args.calibrate else ""))
    (OUT / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    with (OUT / f"{stem}_rows.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(json.dumps(summary, indent=2))
    return summary


def _rate(xs: list[bool]) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def summarise(args, settings, rows: list[dict], srv) -> dict:
    A = [r for r in rows if r["label"] == "answerable"]
    U = [r for r in rows if r["label"] != "answerable"]
    misses = [r for r in A if not r["correct"]]
    losses = Counter(r["loss"] for r in misses)
    lat = [r["latency_ms"] for r in rows]
    unans = "near_miss" if args.set == "manuals" else "unanswerable"
    return {
        "set": args.set, "gates": args.gates, "policy_arg": args.policy, "oracle_mode": args.mode,
        "n_arg": args.n if args.set == "squad" else None, "limit": args.limit or None,
        "settings": {k: getattr(settings, k, None) for k in (
            "answer_threshold", "llm_answer_threshold", "llm_relevance_check", "llm_verify", "llm_crag",
            "llm_context_passages", "answer_policy")},
        "answerable": len(A), unans: len(U),
        "answerable_correct": _rate([r["correct"] for r in A]),
        "answerable_correct_n": sum(r["correct"] for r in A),
        f"{unans}_abstained": _rate([r["abstained"] for r in U]),
        f"{unans}_abstained_n": sum(r["abstained"] for r in U),
        "answerable_gold_retrieved": _rate([r["gold_retrieved"] for r in A]),
        "answerable_gold_place_retrieved": _rate([r["gold_place_retrieved"] for r in A]),
        "answerable_oracle_shown_gold": _rate([r["oracle_gold_shown"] for r in A]),
        "answerable_oracle_answered": _rate([r["oracle_answered"] for r in A]),
        "answerable_abstained_n": sum(r["abstained"] for r in A),
        "misses": len(misses),
        "loss": {s: losses.get(s, 0) for s in STAGES},
        "loss_share_of_answerable": {s: round(losses.get(s, 0) / len(A), 4) if A else None for s in STAGES},
        "decided_by": dict(Counter(str(r["decided_by"]) for r in rows)),
        "fell_back_offline": sum(1 for r in rows if r["llm_error"]),
        "oracle_calls": dict(Counter(c["kind"] for c in srv.calls)),
        "latency_ms_p50": round(percentile(lat, 50), 1) if lat else None,
        "latency_ms_p95": round(percentile(lat, 95), 1) if lat else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=("manuals", "squad"), required=True)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--pdfs", help="manuals: the folder holding the PDFs (flat or nested)")
    ap.add_argument("--n", type=int, default=100, help="squad: answerable and unanswerable questions each (seed 0)")
    ap.add_argument("--limit", type=int, default=0, help="only the first LIMIT of each kind")
    ap.add_argument("--gates", choices=("off", "shipped", "all"), default="shipped")
    ap.add_argument("--policy", default=None, help="answer_policy setting: auto | conservative | model")
    ap.add_argument("--calibrate-limit", type=int, default=0, help="with --calibrate: the first N calibration questions")
    ap.add_argument("--calibrate", action="store_true",
                    help="calibrate the oracle on the shipped calibration set first (then run under that policy)")
    ap.add_argument("--mode", default="perfect", help="the oracle's mode (benchmarks/oracle_llm.py MODES)")
    run(ap.parse_args())


if __name__ == "__main__":
    main()
