"""LLM mode measured with a real small model: the product's chain, its managed llama.cpp server
(RAG_LLM_GGUF) and a Qwen2.5-Coder Instruct GGUF (benchmarks/qwen_gguf.py), on the SQuAD 2.0
test articles (../shared/data/squad-dev/SPLIT.md).

    python benchmarks/llm_mode.py --data-dir /work/gw/squad --model 0.5b --n 100
    python benchmarks/llm_mode.py --data-dir /work/gw/squad --model 1.5b --n 30

The knowledge base is all 1,204 v2.0 dev paragraphs (answer_quality.py builds it); questions
are N answerable + N unanswerable from the test articles (seed 0, the same draw as
answer_quality.py). Per question the chain runs exactly as the chat page runs it
(`ws.answers.chain.stream`), with the product's default settings. Reported:
- answerable correct + cited: the answer contains a gold answer (SQuAD normalisation) and
  cites the gold paragraph; unanswerable abstained;
- citation validity: before the code checks, the share of the draft's [n] markers that point
  at a passage the model was given; after, the share of shown citations whose passage exists
  in the store and holds the citation's snippet;
- sentences the verifier marks unsupported, and of those how many truly are: each is
  written to `results/llm_mode_<model>_unsupported.jsonl` with the question, gold answers
  and cited paragraph, labelled by a rule (no gold answer in it and under half of its
  content words in the cited passages) and checked by hand (see the closing note);
- time to first token and generation speed (streamed pieces per second after the first).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.answer_quality import KB, SQUAD, build_kb, norm, questions  # noqa: E402
from benchmarks.qwen_gguf import gguf  # noqa: E402
from rag_core.config import get_settings  # noqa: E402
from rag_core.evaluation import percentile  # noqa: E402
from rag_core.grounding.citations import attach_markers  # noqa: E402
from rag_core.text.analysis import analyze  # noqa: E402
from rag_core.workspace import Workspace  # noqa: E402
from rag_core.access import Caller

OUT = Path(__file__).resolve().parent / "results"
_MARK = re.compile(r"\[(\d{1,3})\]")


def truly_unsupported(sentence: str, passages: list[str], golds: list[str]) -> bool:
    """The rule used for the automatic label (checked by hand on a sample)."""
    if golds and any(norm(g) in norm(sentence) for g in golds):
        return False
    words = set(analyze(sentence))
    have = set(analyze(" ".join(passages)))
    return not words or len(words & have) / len(words) < 0.5


def written_aq(a) -> float | None:
    """P(answers) of what the model wrote: shown answers carry it, and an answer check's
    abstention states it; None when nothing was written (the reader's gate, the model's own
    "I don't know", the relevance check)."""
    if not a.abstained:
        return a.answers_question if a.mode == "llm" else None
    if a.signals.get("answers") is not None and a.decided_by in ("written_answer_check", "verification"):
        return float(a.signals["answers"])  # the answer policy records what it read
    m = re.search(r"written answer does not answer the question \(best ([\d.]+)", a.reason or "")
    return float(m.group(1)) if m else None


def answer_check_curve(rows: list[dict], used: float) -> tuple[list[dict], dict]:
    """Answerable correct / unanswerable abstained as the written-answer threshold rises from
    `used` (the run's own; below it the withheld answers are unknown), and the threshold the
    gate's rule picks: abstain most while keeping ≥ 90% of the correct answers at `used`."""
    A = [r for r in rows if r["label"] == "answerable"]
    U = [r for r in rows if r["label"] == "impossible"]

    def abstains(r, t):
        # withheld at `used` stays withheld above it (its P(answers) is read back from the
        # reason, rounded to 2 places: 0.157 would read as 0.16 and count as shown at 0.16)
        return r["abstained"] or (r["written_aq"] is not None and r["written_aq"] < t)

    curve = []
    for t in sorted({round(used, 2), *(round(x * 0.05, 2) for x in range(0, 17) if x * 0.05 > used)}):
        curve.append({"threshold": t,
                      "answerable_correct": round(sum(1 for r in A if r["correct"] and not abstains(r, t)) / max(len(A), 1), 4),
                      "unanswerable_abstained": round(sum(1 for r in U if abstains(r, t)) / max(len(U), 1), 4)})
    floor = 0.9 * curve[0]["answerable_correct"]
    chosen = max((c for c in curve if c["answerable_correct"] >= floor), key=lambda c: (c["unanswerable_abstained"], -c["threshold"]))
    return curve, chosen


_PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def _log_size(model_path) -> int:
    from rag_core.generation.local_server import running

    srv = running(model_path)
    return srv.log_path.stat().st_size if srv is not None and srv.log_path.exists() else 0


def prompt_reading(model_path, start: int, questions: int) -> dict:
    """What the answer model's server read of its prompts after the warm-up, from its own log
    (llama.cpp prints each request's new prompt tokens and time; tokens its prompt cache
    already held are not counted): per request, tokens and seconds, and tokens a second."""
    from rag_core.generation.local_server import running

    srv = running(model_path)
    if srv is None or not srv.log_path.exists():
        return {}
    with open(srv.log_path, "rb") as fh:
        fh.seek(start)
        found = [(float(ms), int(n)) for ms, n in _PROMPT_EVAL.findall(fh.read().decode("utf-8", "replace"))]
    if not found:
        return {}
    return {"model_requests": len(found), "model_requests_per_question": round(len(found) / max(questions, 1), 2),
            "prompt_tokens_read_p50": percentile([n for _, n in found], 50),
            "prompt_tokens_read_p95": percentile([n for _, n in found], 95),
            "prompt_read_s_p50": round(percentile([ms / 1000 for ms, _ in found], 50), 2),
            "prompt_tokens_per_s": round(sum(n for _, n in found) / max(sum(ms for ms, _ in found) / 1000, 1e-9), 1)}


def run(args) -> dict:
    model_path = gguf(args.model)
    settings = get_settings(args.data_dir, llm_gguf=model_path, llm_threads=args.threads, llm_ctx=args.ctx,
                            llm_max_tokens=args.max_tokens, llm_timeout=300, answer_cache=False,
                            llm_relevance_check=args.relevance_check,
                            **({"llm_answer_threshold": args.answer_threshold} if args.answer_threshold is not None else {}),
                            **({"llm_context_passages": args.context_passages} if args.context_passages else {}))
    ws = Workspace(settings)
    data = json.loads((SQUAD / "dev-v2.0-reconstructed.json").read_text())
    build_kb(ws, data)
    answerable, impossible = questions(data, args.split, args.n)
    if args.limit:
        answerable, impossible = answerable[: args.limit], impossible[: args.limit]
    t = time.perf_counter()
    chain = ws.answers.chain  # starts the local server (first use)
    ws.answers.chain.invoke(ws.answer_request([KB], "What is the capital of France?", caller=Caller.operator()))  # warm the server
    startup = time.perf_counter() - t
    log_at = _log_size(model_path)
    rows, unsupported = [], []
    raw_marks = raw_valid = shown = shown_valid = 0
    for label, items in (("answerable", answerable), ("impossible", impossible)):
        for i, (qid, q, gold_doc, golds) in enumerate(items):
            t0 = time.perf_counter()
            first = None
            pieces = 0
            draft = ""
            answer = None
            for ev in chain.stream(ws.answer_request([KB], q, caller=Caller.operator())):
                if ev.kind == "token":
                    if first is None:
                        first = time.perf_counter()
                    pieces += 1
                    draft += ev.text
                elif ev.kind == "restart":
                    draft = ev.text
                elif ev.kind == "answer":
                    answer = ev.answer
            end = time.perf_counter()
            a = answer
            llm_answered = a.mode == "llm" and not a.abstained
            gen_s = (a.timings_ms.get("generate", 0.0) / 1000) if llm_answered else 0.0
            if llm_answered and draft:
                # the streamed draft is the one the answer was resolved from; `invalid_citations`
                # counts its markers that pointed at no passage the model was given
                marks = _MARK.findall(attach_markers(draft))
                raw_marks += len(marks)
                raw_valid += len(marks) - a.invalid_citations
            for c in a.citations:
                shown += 1
                chunk = ws.store.get_chunks([c.chunk_id])
                if chunk and " ".join(c.snippet.split()[:8]) in " ".join(chunk[0].text.split()):
                    shown_valid += 1
            ok_text = bool(golds) and any(norm(g) in norm(a.text) for g in golds)
            ok_cite = any(c.doc_id == gold_doc for c in a.citations)
            passages = [c.snippet for c in a.citations]
            for cl in a.claims:
                if cl.label == "unsupported":
                    auto = truly_unsupported(cl.text, passages, golds)
                    unsupported.append({"id": qid, "question": q, "label": label, "sentence": cl.text,
                                        "golds": golds, "cited": passages[:3], "auto_truly_unsupported": auto})
            rows.append({
                "id": qid, "label": label, "abstained": a.abstained, "reason": a.reason, "mode": a.mode,
                "correct": ok_text and ok_cite, "text_ok": ok_text, "cite_ok": ok_cite,
                "grounding": a.grounding_score, "answers_question": a.answers_question, "revised": a.revised,
                "ttft_s": round(first - t0, 2) if first and a.mode == "llm" else None,
                "pieces_per_s": round((pieces - 1) / max(end - first, 1e-3), 2) if first and llm_answered and gen_s else None,
                "total_s": round(end - t0, 2), "sentences": len(a.claims),
                "unsupported": sum(1 for c in a.claims if c.label == "unsupported"),
                "answer": a.text[:400], "written_aq": written_aq(a),
            })
            r = rows[-1]
            print(json.dumps({k: r[k] for k in ("label", "abstained", "correct", "ttft_s", "total_s")}), flush=True)
    A = [r for r in rows if r["label"] == "answerable"]
    U = [r for r in rows if r["label"] == "impossible"]
    ttft = [r["ttft_s"] for r in rows if r["ttft_s"] is not None]
    speed = [r["pieces_per_s"] for r in rows if r["pieces_per_s"]]
    sentences = sum(r["sentences"] for r in rows)
    n_uns = len(unsupported)
    summary = {
        "model": args.model, "split": args.split, "llm_context_passages": settings.llm_context_passages,
        "context_budget_tokens": getattr(settings, "context_budget", None),
        "llm_relevance_check": settings.llm_relevance_check,
        "gguf": model_path.name, "threads": args.threads, "server_start_and_warm_s": round(startup, 1),
        "answerable": len(A), "unanswerable": len(U),
        "answerable_correct_and_cited": round(sum(r["correct"] for r in A) / max(len(A), 1), 4),
        "answerable_answered": round(sum(not r["abstained"] for r in A) / max(len(A), 1), 4),
        "answerable_gold_text": round(sum(r["text_ok"] for r in A) / max(len(A), 1), 4),
        "answerable_gold_paragraph_cited": round(sum(r["cite_ok"] for r in A) / max(len(A), 1), 4),
        "unanswerable_abstained": round(sum(r["abstained"] for r in U) / max(len(U), 1), 4),
        "abstained_by_reader_gate": sum(1 for r in rows if r["abstained"] and "closest passages" in r["reason"]),
        "abstained_by_llm": sum(1 for r in rows if r["abstained"] and "language model" in r["reason"]),
        "abstained_by_answer_check": sum(1 for r in rows if r["abstained"] and "written answer" in r["reason"]),
        "fell_back_offline": sum(1 for r in rows if r["mode"] != "llm"),
        "citation_markers_in_drafts": raw_marks,
        "citation_validity_before_checks": round(raw_valid / raw_marks, 4) if raw_marks else None,
        "citations_shown": shown,
        "citation_validity_after_checks": round(shown_valid / shown, 4) if shown else None,
        "answered_sentences": sentences,
        "marked_unsupported": n_uns,
        "marked_unsupported_share": round(n_uns / sentences, 4) if sentences else None,
        "marked_unsupported_truly_unsupported_auto": round(sum(u["auto_truly_unsupported"] for u in unsupported) / n_uns, 4) if n_uns else None,
        "revised_by_corrective_retrieval": sum(r["revised"] for r in rows),
        "ttft_s_p50": round(percentile(ttft, 50), 2) if ttft else None,
        "ttft_s_p95": round(percentile(ttft, 95), 2) if ttft else None,
        "stream_pieces_per_s_p50": round(percentile(speed, 50), 1) if speed else None,
        "total_s_p50": round(percentile([r["total_s"] for r in rows], 50), 2),
        "llm_answer_threshold": settings.llm_answer_threshold,
    }
    summary.update(prompt_reading(model_path, log_at, len(rows)))
    curve, chosen = answer_check_curve(rows, settings.llm_answer_threshold)
    summary["answer_check_curve"] = curve
    summary["answer_check_chosen_by_rule"] = chosen
    OUT.mkdir(exist_ok=True)
    stem = args.out or (f"llm_mode_{args.model.replace('.', '')}" + ("" if args.split == "test" else f"_{args.split}") + (
        f"_ctx{args.context_passages}" if args.context_passages else "") + ("_rc" if args.relevance_check else ""))
    (OUT / f"{stem}.json").write_text(json.dumps(summary, indent=2) + "\n")
    with (OUT / f"{stem}_rows.jsonl").open("w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    with (OUT / f"{stem}_unsupported.jsonl").open("w") as fh:
        for u in unsupported:
            fh.write(json.dumps(u) + "\n")
    print(json.dumps(summary, indent=2))
    ws.close()
    return summary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--model", choices=["0.5b", "1.5b"], default="0.5b")
    ap.add_argument("--n", type=int, default=100, help="answerable and unanswerable questions each")
    ap.add_argument("--limit", type=int, default=0, help="use only the first LIMIT of each (a subset of the same draw)")
    ap.add_argument("--split", choices=["test", "calib"], default="test",
                    help="calib: SQuAD v2.0 articles 17-19 (train side), to choose settings on")
    ap.add_argument("--context-passages", type=int, default=0, help="override llm_context_passages")
    ap.add_argument("--relevance-check", action="store_true", help="RAG_LLM_RELEVANCE_CHECK: the model says yes/no first")
    ap.add_argument("--answer-threshold", type=float, default=None,
                    help="override llm_answer_threshold (run calib at the gate's 0.16 to choose it)")
    ap.add_argument("--out", default="", help="the results' file stem (default: from the model and options)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--max-tokens", type=int, default=200)
    run(ap.parse_args())


if __name__ == "__main__":
    main()
