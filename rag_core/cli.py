"""Command line (DESIGN.md §6): a stable contract that benchmarks and outside checks use.

Bad input → exit code 2 and one line on stderr. `--json` prints machine-readable output.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .alerts import METRICS
from .errors import GroundworkError
from .privacy import LOG_LEVELS

EXIT_BAD_INPUT = 2


def _emit(args, payload, human: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(payload, ensure_ascii=False))
    else:
        print(human)


_OPEN: list = []


def _settings(args):
    from .config import get_settings

    return get_settings(getattr(args, "data_dir", None))


def _workspace(args):
    from .workspace import Workspace

    ws = Workspace(_settings(args))
    _OPEN.append(ws)  # closed by main(): a Weaviate connection must not be left dangling
    return ws


def resolve_caller(args, settings):
    """Who is running this command, decided once, here at the edge: --user/--groups/--tenant
    (anywhere on the line), else $RAG_USER/$RAG_GROUPS/$RAG_TENANT; no identity at all is the
    local no-auth operator unless RAG_AUTH=required (access.local_caller)."""
    from .access import local_caller

    def given(name: str):
        value = getattr(args, name, None)
        return getattr(settings, name) if value is None else value

    caller = local_caller(given("user"), given("groups"), given("tenant"), settings)
    if caller is None:
        raise GroundworkError("an identity is required here (RAG_AUTH=required): pass --user NAME or set RAG_USER")
    return caller


def _caller(args, ws):
    return resolve_caller(args, ws.settings)


def cmd_kb_create(args) -> int:
    ws = _workspace(args)
    kb = ws.create_kb(
        args.name, caller=_caller(args, ws), description=args.description or "",
        instructions=args.instructions or "", grounded_only=bool(args.grounded_only),
        acl_users=_csv(args.allow_users) or [], acl_groups=_csv(args.allow_groups) or [],
        owners=_csv(args.owners) or [],
    )
    _emit(args, _kb_row(kb), f"created knowledge base '{kb.name}' ({kb.kb_id})")
    return 0


def _kb_row(kb) -> dict:
    from .schemas import kb_row

    return kb_row(kb)


def cmd_kb_update(args) -> int:
    """Owners and admins change a knowledge base. Access edits apply to the documents already
    in it at once (the policy reads the knowledge base when a question is asked; nothing is
    re-ingested). --tenant is the caller's tenant here too, never the knowledge base's."""
    ws = _workspace(args)
    changes = {}
    if args.allow_users is not None:
        changes["acl_users"] = _csv(args.allow_users)
    if args.allow_groups is not None:
        changes["acl_groups"] = _csv(args.allow_groups)
    if args.owners is not None:
        changes["owners"] = _csv(args.owners)
    if args.description is not None:
        changes["description"] = args.description
    if args.instructions is not None:
        changes["instructions"] = args.instructions
    if args.grounded_only is not None:
        changes["grounded_only"] = args.grounded_only
    if args.rename:
        changes["name"] = args.rename
    caller = _caller(args, ws)
    if args.retention_days is not None:
        changes["retention_days"] = args.retention_days
    if args.query_log is not None:
        changes["query_log"] = "" if args.query_log == "default" else args.query_log
    if args.recency_half_life is not None:
        from dataclasses import replace

        if args.recency_half_life < 0:
            raise GroundworkError("--recency-half-life is a number of days ≥ 0 (0 = off)")
        changes["retrieval"] = replace(ws.get_kb(args.name, caller=caller).retrieval,
                                       recency_half_life_days=args.recency_half_life)
    if args.stale_after_days is not None:
        from dataclasses import replace

        if args.stale_after_days < 0:
            raise GroundworkError("--stale-after-days is a number of days ≥ 0 (0 = never)")
        base = changes.get("retrieval") or ws.get_kb(args.name, caller=caller).retrieval
        changes["retrieval"] = replace(base, stale_after_days=args.stale_after_days)
    if args.answer_policy is not None:
        from dataclasses import replace

        base = changes.get("retrieval") or ws.get_kb(args.name, caller=caller).retrieval
        changes["retrieval"] = replace(base, answer_policy="" if args.answer_policy == "default" else args.answer_policy)
    if args.moderation is not None:
        from dataclasses import replace

        base = changes.get("retrieval") or ws.get_kb(args.name, caller=caller).retrieval
        changes["retrieval"] = replace(base, moderation="" if args.moderation == "default" else args.moderation)
    new = ws.update_kb(args.name, caller=caller, **changes)
    _emit(args, _kb_row(new), f"updated knowledge base '{new.name}'")
    return 0


def cmd_kb_delete(args) -> int:
    ws = _workspace(args)
    caller = _caller(args, ws)
    kb = ws.get_kb(args.name, caller=caller)
    ws.delete_kb(kb.kb_id, caller=caller)
    _emit(args, {"deleted": kb.kb_id, "name": kb.name}, f"deleted knowledge base '{kb.name}'")
    return 0


def cmd_kb_list(args) -> int:
    ws = _workspace(args)
    caller = _caller(args, ws)
    from .schemas import kb_listing

    rows = [kb_listing(ws, kb, caller) for kb in ws.list_kbs(caller=caller)]
    human = "\n".join(f"{r['name']}\t{r['documents']} documents\t{r['chunks']} chunks\t{r['kb_id']}" for r in rows)
    _emit(args, rows, human or "no knowledge bases yet: python -m rag_core kb create NAME")
    return 0


def cmd_ingest(args) -> int:
    ws = _workspace(args)
    caller = _caller(args, ws)
    kb = ws.writable_kb(args.kb, caller=caller)  # owners and admins, checked before any file is read
    if args.url:
        if args.paths:
            raise GroundworkError("give files or --url, not both")
        stats = ws.ingest_url(kb.kb_id, args.url, caller=caller, max_pages=args.max_pages)
        rows = [r.to_dict() for r in stats.reports]
        _emit(args, {"kb": kb.name, "url": args.url, "pages": sum(r.status == "ingested" for r in stats.reports),
                     "unchanged": sum(r.status == "duplicate" for r in stats.reports),
                     "failed": sum(r.status == "failed" for r in stats.reports), "chunks": stats.chunks,
                     "files_report": rows},
              "\n".join(f"{r['status']:<9} {r['file']}" + (f"  ({r['reason']})" if r["reason"] else "") for r in rows)
              or "nothing found at that URL")
        return 0 if any(r.status != "failed" for r in stats.reports) else 1
    if not args.paths:
        raise GroundworkError("give files or folders to add, or --url")
    paths = [Path(p) for p in args.paths]
    missing = [str(p) for p in paths if not p.exists()]
    if missing and len(missing) == len(paths):
        raise GroundworkError(f"no such file or folder: {', '.join(missing)}")
    from tqdm import tqdm

    bar = tqdm(total=None, unit="file", disable=None if not args.json else True, file=sys.stderr)

    def progress(done: int, total: int, name: str) -> None:
        bar.total = total
        bar.set_postfix_str(name[-40:])
        bar.update(done - bar.n)

    vbar = None

    def vector_progress(done: int, total: int) -> None:
        nonlocal vbar
        if vbar is None:  # second bar: the keyword index is written, vectors follow
            bar.close()
            vbar = tqdm(total=total, unit="chunk", desc="embedding", disable=None if not args.json else True,
                        file=sys.stderr)
        vbar.update(done - vbar.n)

    stats = ws.ingest(kb.kb_id, paths, caller=caller, progress=progress, vector_progress=vector_progress,
                      date=args.date, language=args.language)
    (vbar or bar).close()
    reports = [r.to_dict() for r in stats.reports]
    summary = {
        "kb": kb.name, "files": stats.files, "documents": stats.documents, "pages": stats.pages,
        "chunks": stats.chunks, "embedded": stats.embedded, "seconds": round(stats.seconds_total, 3),
        "embed_seconds": round(stats.seconds_embed, 3),
        "ingested": sum(r.status == "ingested" for r in stats.reports),
        "duplicate": sum(r.status == "duplicate" for r in stats.reports),
        "failed": sum(r.status == "failed" for r in stats.reports),
        "files_report": reports,
    }
    from .render import ocr_note

    lines = []
    for r in stats.reports:
        if r.status == "ingested":
            lines.append(f"  ingested   {r.file}  ({r.pages} pages, {r.chunks} chunks, {len(r.doc_ids)} documents"
                         + (f"; {ocr_note(r.ocr_pages)}" if r.ocr_pages else "") + ")")
        elif r.status == "duplicate":
            lines.append(f"  duplicate  {r.file}  ({r.reason})")
        else:
            lines.append(f"  FAILED     {r.file}  — {r.reason}")
    lines.append(
        f"{summary['ingested']} ingested, {summary['duplicate']} duplicate, {summary['failed']} failed; "
        f"{stats.documents} documents, {stats.chunks} chunks in {stats.seconds_total:.1f}s"
    )
    _emit(args, summary, "\n".join(lines))
    for m in missing:
        print(f"not found: {m}", file=sys.stderr)
    if summary["ingested"] + summary["duplicate"] == 0:
        print("error: no file could be ingested", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def cmd_date(args) -> int:
    ws = _workspace(args)
    doc = ws.set_document_date(args.kb, args.doc_id, args.date, caller=_caller(args, ws))
    _emit(args, {"doc_id": doc.doc_id, "date": doc.date}, f"{doc.source} is now dated {doc.date}")
    return 0


def cmd_trust(args) -> int:
    ws = _workspace(args)
    doc = ws.set_document_trust(args.kb, args.doc_id, args.level, caller=_caller(args, ws))
    _emit(args, {"doc_id": doc.doc_id, "trust": doc.trust}, f"{doc.source} is now marked {doc.trust}")
    return 0


def cmd_language(args) -> int:
    ws = _workspace(args)
    doc = ws.set_document_language(args.kb, args.doc_id, args.language, caller=_caller(args, ws))
    _emit(args, {"doc_id": doc.doc_id, "language": doc.language}, f"{doc.source} is now read as {doc.language}")
    return 0


def cmd_privacy(args) -> int:
    """Retention, a user's own questions, an admin's export and erasure (rag_core/privacy.py)."""
    ws = _workspace(args)
    caller = _caller(args, ws)
    if args.privacy_cmd == "purge":
        n = ws.purge_expired()
        _emit(args, {"deleted_questions": n}, f"{n} logged question(s) past retention deleted")
    elif args.privacy_cmd == "forget-mine":
        n = ws.delete_my_questions(caller=caller)
        _emit(args, {"deleted_questions": n}, f"{n} of your logged question(s) deleted")
    elif args.privacy_cmd == "export":
        data = ws.export_user_data(args.of, caller=caller)
        Path(args.out).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        _emit(args, {"out": args.out, "questions": len(data["questions"]), "conversations": len(data["conversations"])},
              f"{len(data['questions'])} question(s), {len(data['conversations'])} conversation(s) → {args.out}")
    else:
        res = ws.erase_user_data(args.of, caller=caller)
        _emit(args, res, f"erased {res['questions']} question(s) and {res['conversations']} conversation(s) of {args.of}")
    return 0


def cmd_alerts(args) -> int:
    """Alert rules over the query log (rag_core/alerts.py): admins."""
    from .alerts import rule_dict

    ws = _workspace(args)
    caller = _caller(args, ws)
    if args.alerts_cmd == "add":
        rule = ws.add_alert_rule(args.metric, args.threshold, args.window, args.webhook or "", args.min_answers,
                                 caller=caller)
        _emit(args, rule_dict(rule), f"rule {rule.rule_id}: {rule.metric} > {rule.threshold} over {rule.window_minutes} min")
    elif args.alerts_cmd == "delete":
        ws.delete_alert_rule(args.rule_id, caller=caller)
        _emit(args, {"deleted": args.rule_id}, f"rule {args.rule_id} deleted")
    elif args.alerts_cmd == "check":
        events = ws.check_alerts(caller=caller)
        _emit(args, {"events": events}, "\n".join(f"{e['state']}: {e['rule_id']} {e['metric']} = {e['value']}"
                                                   for e in events) or "no rule changed state")
    else:
        rules = [rule_dict(r) for r in ws.alert_rules(caller=caller)]
        _emit(args, {"rules": rules}, "\n".join(
            f"{r['rule_id']}\t{r['metric']} > {r['threshold']}\t{r['window_minutes']} min\t"
            f"{'FIRING' if r['firing'] else 'ok'}\t{r['webhook']}" for r in rules) or "no alert rules")
    return 0


def cmd_learned(args) -> int:
    """What feedback taught retrieval: review (owners, admins) and revert (admins)."""
    ws = _workspace(args)
    caller = _caller(args, ws)
    if args.learned_cmd == "list":
        recs = ws.feedback_signals(caller=caller)
        rows = [{"id": r.signal_id, "kb_id": r.kb_id, "chunk_id": r.chunk_id, "judgement": r.judgement,
                 "user": r.user, "ts": r.ts, "active": r.active, "reverted_by": r.reverted_by} for r in recs]
        human = "\n".join(f"{r['id']}\t{'+' if r['judgement'] > 0 else '-'}\t{r['chunk_id']}\t{r['user'] or ''}"
                           f"\t{'active' if r['active'] else 'reverted by ' + str(r['reverted_by'])}" for r in rows)
        _emit(args, rows, human or "nothing learnt from feedback yet")
    else:
        n = ws.revert_feedback(caller=caller, signal_id=args.id, kb_name=args.kb)
        _emit(args, {"reverted": n}, f"{n} record(s) reverted")
    return 0


def cmd_reembed(args) -> int:
    """Re-embed the data folder with the configured embedding model (admins)."""
    from tqdm import tqdm

    ws = _workspace(args)
    caller = _caller(args, ws)
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="chunk", desc="re-embedding", disable=None if not args.json else True,
                       file=sys.stderr)
        bar.update(done - bar.n)

    res = ws.reembed(caller=caller, progress=progress)
    if bar is not None:
        bar.close()
    _emit(args, res, f"re-embedded {res['chunks']} chunks with {res['model']}" if res["changed"]
          else f"already embedded with {res['model']}: nothing to do")
    return 0


def cmd_calibrate(args) -> int:
    """Fit the answer policy to the configured model (admins), or show the one in force."""
    ws = _workspace(args)
    caller = _caller(args, ws)
    if args.show:
        p = ws.answer_policy(caller=caller)
        _emit(args, p, f"{p['name']} policy for {p['model']}: {p['summary']}")
        return 0
    quiet = getattr(args, "json", False)

    def progress(done: int, total: int, eta: float | None) -> None:
        if not quiet:
            left = f", about {eta / 60:.1f} min left" if eta is not None else ""
            print(f"\r{done}/{total} questions{left}   ", end="", file=sys.stderr, flush=True)

    run = ws.calibrate_answer_policy(caller=caller, limit=args.limit, target=args.target, progress=progress)
    if not quiet:
        print(file=sys.stderr)
    f = run.figures
    human = (f"calibrated on {run.rows} questions in {run.minutes:.1f} min: evidence_min {run.params['evidence_min']:.2f}, "
             f"written_min {run.params['written_min']:.2f}; answerable correct {f['answerable_correct']:.1%}, "
             f"near-miss declined {f['unanswerable_abstained']:.1%}"
             + ("" if run.target_met else f" (no policy reaches the {f['target']:.0%} target: the most declining one)")
             + f"\nstored in {run.path}")
    now = ws.answer_policy(caller=caller)  # whether auto will use it (policy_choice.unusable says why not)
    human += f"\nin force: {now['name']} ({now['source']})"
    _emit(args, {"path": str(run.path), "questions": run.rows, "minutes": round(run.minutes, 2),
                 "params": run.params, "figures": f, "in_force": {"name": now["name"], "source": now["source"]}},
          human)
    return 0


def cmd_delete(args) -> int:
    ws = _workspace(args)
    if not ws.delete_document(args.kb, args.doc_id, caller=_caller(args, ws)):  # hidden KB = missing KB
        raise GroundworkError(f"no document '{args.doc_id}' in knowledge base '{args.kb}'")
    _emit(args, {"deleted": args.doc_id}, f"deleted {args.doc_id}")
    return 0


def _kb_names(ws, args, caller) -> list[str]:
    """--kb A,B checked up front, so a typo fails before any query file is read."""
    names = [k.strip() for k in args.kb.split(",") if k.strip()]
    ws.resolve_kbs(names, caller=caller)
    return names


def _csv(value: str | None) -> list[str] | None:
    return None if value is None else [v.strip() for v in value.split(",") if v.strip()]


def _read_jsonl(path: Path, what: str) -> list[dict]:
    if not path.exists():
        raise GroundworkError(f"{what} file not found: {path}")
    out = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                raise GroundworkError(f"{path.name} line {n}: not valid JSON") from None
            if not isinstance(rec, dict):
                raise GroundworkError(f"{path.name} line {n}: expected a JSON object")
            out.append(rec)
    return out


def cmd_search(args) -> int:
    ws = _workspace(args)
    caller = _caller(args, ws)
    kb_names = _kb_names(ws, args, caller)
    if args.query:
        queries = [{"id": "q", "question": args.query}]
    elif args.queries:
        queries = _read_jsonl(Path(args.queries), "queries")
    else:
        raise GroundworkError("give --queries Q.jsonl (with --out R.jsonl) or --query TEXT")
    out_fh = Path(args.out).open("w", encoding="utf-8") if args.out else None
    latencies = []
    try:
        for rec in queries:
            qid = rec.get("id", rec.get("_id"))
            text = rec.get("question") or rec.get("text") or ""
            t = time.perf_counter()
            res = ws.search(kb_names, text, k=args.top_k, mode=args.mode, rerank=False if args.no_rerank else None,
                            caller=caller, after=args.after, before=args.before, include_drafts=args.include_drafts)
            latencies.append((time.perf_counter() - t) * 1000)
            row = {
                "id": qid,
                "results": [
                    {"doc_id": r.chunk.doc_id, "chunk_id": r.chunk.chunk_id, "score": round(r.score, 6)}
                    for r in res.results
                ],
            }
            if out_fh:
                out_fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            elif args.json:
                print(json.dumps(row, ensure_ascii=False))
            else:
                for i, r in enumerate(res.results, 1):
                    c = r.chunk
                    snippet = " ".join(c.text.split())[:160]
                    print(f"{i:2d}. {r.score:.4f}  {c.source} p.{c.page_start} {c.date}  [{c.doc_id}]  {snippet}")
    finally:
        if out_fh:
            out_fh.close()
    if out_fh:
        latencies.sort()
        p50 = latencies[len(latencies) // 2] if latencies else 0.0
        msg = {"queries": len(queries), "out": args.out, "latency_ms_p50": round(p50, 2)}
        _emit(args, msg, f"{len(queries)} queries → {args.out} (p50 {p50:.1f} ms)")
    return 0


def cmd_eval_beir(args) -> int:
    from dataclasses import asdict

    from .evaluation import run_beir

    ws = _workspace(args)
    folder = Path(args.folder)
    if not folder.is_dir():
        raise GroundworkError(f"not a folder: {folder}")
    from tqdm import tqdm

    bar = tqdm(total=None, unit="file", disable=True if args.json else None, file=sys.stderr, desc="indexing")
    rep = run_beir(ws, folder, caller=_caller(args, ws), mode=args.mode, kb_name=args.kb, rerank=False if args.no_rerank else None,
                   alpha=args.alpha, fusion=args.fusion,
                   progress=lambda d, t, n: (setattr(bar, "total", t), bar.update(d - bar.n)))
    bar.close()
    out = asdict(rep)
    for k, v in out.items():
        if isinstance(v, float):
            out[k] = round(v, 4)
    human = (
        f"{rep.dataset} [{rep.mode}] {rep.queries} queries: nDCG@10 {rep.ndcg_at_10:.4f}  R@10 {rep.recall_at_10:.4f}  "
        f"R@100 {rep.recall_at_100:.4f}  MRR@10 {rep.mrr_at_10:.4f}  latency p50 {rep.latency_ms_p50:.1f} ms "
        f"p95 {rep.latency_ms_p95:.1f} ms  ({rep.extra})"
    )
    _emit(args, out, human)
    return 0


def _answer_row(qid, a) -> dict:
    from .schemas import AnswerOut

    return AnswerOut.of(a, qid).model_dump()


def _ask_options(args):
    from .generation.steps import AnswerOptions

    return AnswerOptions(include_drafts=getattr(args, "include_drafts", False))


def cmd_ask(args) -> int:
    ws = _workspace(args)
    caller = _caller(args, ws)
    kb_names = _kb_names(ws, args, caller)
    if args.questions:
        if not args.out:
            raise GroundworkError("--questions needs --out A.jsonl")
        rows = _read_jsonl(Path(args.questions), "questions")
        with Path(args.out).open("w", encoding="utf-8") as fh:
            for rec in rows:
                qid = rec.get("id", rec.get("_id"))
                try:
                    a = ws.ask(kb_names, rec.get("question") or rec.get("text") or "", caller=caller,
                               after=args.after, before=args.before, route=args.route, no_cache=args.no_cache,
                               options=_ask_options(args))
                    fh.write(json.dumps(_answer_row(qid, a), ensure_ascii=False) + "\n")
                except GroundworkError as exc:  # one bad question does not stop the batch
                    fh.write(json.dumps({"id": qid, "error": str(exc)}) + "\n")
        _emit(args, {"questions": len(rows), "out": args.out}, f"{len(rows)} questions → {args.out}")
        return 0
    if not args.question:
        raise GroundworkError('give a question: ask --kb NAME "QUESTION"')
    a = ws.ask(kb_names, args.question, caller=caller, after=args.after, before=args.before, route=args.route,
               no_cache=args.no_cache, options=_ask_options(args))
    if args.json:
        print(json.dumps(_answer_row(None, a), ensure_ascii=False))
        return 0
    for key in ("llm_error", "llm_cut", "instructions_removed"):
        if a.models.get(key):
            print(f"note: {a.models[key]}", file=sys.stderr)
    print(a.text)
    if a.abstained:
        print(f"\nreason: {a.reason}")
        if a.closest:
            from .render import closest_heading

            print(f"\n{closest_heading(a.language)}:")
            for c in a.closest:
                print(f"  ({c.n}) {c.source}, page {c.page}: {' '.join(c.snippet.split())[:200]}")
                if c.passage and " ".join(c.passage.split()) != " ".join(c.snippet.split()):
                    # the passage around the best sentence, its lines kept (code stays code)
                    print("\n".join("      " + ln for ln in c.passage.strip().splitlines()))
        for s in a.suggestions:
            print(f"  - {s}")
        return 0
    for cf in a.conflicts:
        from .models import conflict_note

        print(f"\nnote: {conflict_note(cf)}")
    print()
    for c in a.citations:
        print(f"[{c.n}] {c.source}, page {c.page}" + (f" ({c.date})" if c.date else "") + (" (trusted)" if c.trusted else "")
              + f": {' '.join(c.snippet.split())[:200]}")
    marks = {"supported": "✓", "partial": "~", "unsupported": "✗"}
    aq = "not judged" if a.answers_question is None else f"{a.answers_question:.2f}"
    print(f"\nsupported {a.grounding_score:.2f} · answers the question {aq} · "
          f"confidence {a.confidence:.2f} · {a.mode} · decided by {a.decided_by or '?'} ({a.policy} policy) · "
          f"{a.timings_ms.get('total', 0):.0f} ms")
    plan = a.plan or {}
    print(f"route {a.route} ({plan.get('by', '?')}: {plan.get('reason', '')})"
          + (f" · read {a.signals['read']}" if a.signals.get("read") else "")
          + (f" · cached answer from {a.cached_at}" if a.cached else ""))
    for c in a.claims:
        print(f"  {marks[c.label]} {c.text[:120]}")
    return 0


def cmd_verify(args) -> int:
    from .grounding.verify import Verifier, answers_question, confidence, judged_score, split_claims
    from .reader import get_reader

    from .embeddings import bundled_embedder
    from .text.language import question_language

    rows = _read_jsonl(Path(args.pairs), "pairs")
    # the bundled MiniLM reads what a written sentence means (grounding/verify.py meaning())
    verifier = Verifier(reader=get_reader(), embed=bundled_embedder(_settings(args)).embed_array)
    with Path(args.out).open("w", encoding="utf-8") as fh:
        for n, rec in enumerate(rows, 1):
            if not isinstance(rec.get("answer"), str) or not isinstance(rec.get("sources"), list):
                raise GroundworkError(f"{Path(args.pairs).name} line {n}: needs 'answer' (text) and 'sources' (list of texts)")
            question = rec.get("question") if isinstance(rec.get("question"), str) and rec["question"].strip() else None
            sources = [str(s) for s in rec["sources"]]
            # An answer that cites no source is checked against every source (as if citing all).
            answer = rec["answer"]
            parts = split_claims(answer)
            if parts and sources and not any(1 <= n <= len(sources) for _, cited in parts for n in cited):
                answer = _cite_all(answer, "".join(f"[{i}]" for i in range(1, len(sources) + 1)))
            language = question_language(question or answer, "en")
            claims, supported = verifier.verify(answer, sources, question=question, language=language)
            out = {"id": rec.get("id"), "grounding_score": judged_score(claims) if question else supported,
                   "supported": supported,
                   "claims": [{"text": c.text, "label": c.label, "score": c.score, "answers": c.answers,
                               "missing": c.missing} for c in claims]}
            if question:
                aq = answers_question(claims)
                out.update(answers_question=aq, confidence=confidence(supported, aq))
            fh.write(json.dumps(out, ensure_ascii=False) + "\n")
    _emit(args, {"pairs": len(rows), "out": args.out}, f"{len(rows)} answers verified → {args.out}")
    return 0


def _cite_all(answer: str, marks: str) -> str:
    from .grounding.verify import answer_sentences

    return " ".join(f"{sent.rstrip().rstrip('.!?')} {marks}." for sent in answer_sentences(answer))


def cmd_migrate(args) -> int:
    from .config import get_settings
    from .stores import make_store

    ws = _workspace(args)
    caller = _caller(args, ws)
    if not caller.admin:  # before any connection to the target is made
        raise GroundworkError("only the operator or an admin may migrate the whole data folder")
    if ws.settings.store != "embedded":
        raise GroundworkError("migrate copies from the embedded store: run it with RAG_STORE=embedded (the default)")
    tsettings = get_settings(args.data_dir, store=args.to)
    target = make_store(tsettings, ws.db)
    import time as _t

    # the target's identity: a rerun into the same place resumes, another place starts afresh
    key = f"{args.to}:{tsettings.weaviate_url or tsettings.data_dir}:{getattr(target, 'collection_name', '')}"
    t = _t.perf_counter()
    res = ws.migrate_to(target, target_key=key, restart=args.restart, caller=caller)
    res["seconds"] = round(_t.perf_counter() - t, 1)
    res["chunks_per_s"] = round(res["chunks"] / max(res["seconds"], 1e-9), 1)
    target.close()
    _emit(args, res, f"copied {res['documents']} documents ({res['chunks']} chunks, vectors included) to {args.to} "
                     f"in {res['seconds']} s" + (f" ({res['skipped_already_copied']} copied before, skipped)"
                                                 if res["skipped_already_copied"] else "")
                     + f"; now run with RAG_STORE={args.to}")
    return 0


GLOBAL_FLAGS = ("--data-dir", "--json", "--user", "--groups", "--tenant")


def cmd_chunks(args) -> int:
    """Export a knowledge base's chunks (DESIGN.md §6), the caller's access applied: what the
    extraction and chunking made of the documents, for people and outside checks."""
    ws = _workspace(args)
    caller = _caller(args, ws)
    kb = ws.get_kb(args.kb, caller=caller)
    n = 0
    with Path(args.out).open("w", encoding="utf-8") as fh:
        for c in ws.chunks(kb.kb_id, caller=caller):
            fh.write(json.dumps({"chunk_id": c.chunk_id, "doc_id": c.doc_id, "source": c.source,
                                 "page_start": c.page_start, "page_end": c.page_end, "section": c.section,
                                 "language": c.language or "en", "text": c.text}, ensure_ascii=False) + "\n")
            n += 1
    _emit(args, {"kb": kb.name, "chunks": n, "out": args.out}, f"{n} chunks of {kb.name} → {args.out}")
    return 0


def cmd_serve(args) -> int:
    from .api.server import serve

    serve(host=args.host, port=args.port, workers=args.workers, no_auth=args.no_auth, data_dir=args.data_dir,
          log_level=args.log_level, forwarded_allow_ips=args.forwarded_allow_ips)
    return 0


def _keys(args):
    ws = _workspace(args)
    return ws, ws.api_keys


def cmd_api_key_create(args) -> int:
    """A key for the identity on the command line (--user/--groups/--tenant). Whoever runs the
    CLI on the data folder holds its database, so this is the machine operator's tool; through
    rag_core.api_keys a non-admin may only make read/write keys for themselves (the page)."""
    from .access import Caller

    ws, keys = _keys(args)
    owner = _caller(args, ws)  # the identity on the line (or $RAG_USER…): the key's owner, not who may act
    new = keys.create(owner.user or "", args.scope, owner.groups, owner.tenant, args.label, by=Caller.operator())
    info = new.info.to_dict()
    if args.json:
        print(json.dumps({**info, "key": new.key}))
    else:
        print(f"API key {info['key_id']} for {info['user']} (scope {info['scope']}). "
              "It is shown only now; store it safely:", file=sys.stderr)
        print(new.key)
    return 0


def cmd_api_key_list(args) -> int:
    from .access import Caller

    ws, keys = _keys(args)
    user = args.user if args.user is not None else ws.settings.user
    rows = [k.to_dict() for k in keys.list(by=Caller.operator(), user=user)]
    human = "\n".join(f"{r['key_id']}\t{r['user']}\t{r['scope']}\t"
                      f"{'revoked' if r['revoked'] else 'active'}\t{r['label']}" for r in rows)
    _emit(args, rows, human or "no API keys")
    return 0


def cmd_api_key_revoke(args) -> int:
    from .access import Caller

    _, keys = _keys(args)
    key = keys.revoke(args.key_id.removeprefix("gwk_").split("_")[0], by=Caller.operator())
    _emit(args, key.to_dict(), f"revoked {key.key_id} ({key.user}); requests with it fail from now on")
    return 0


def _common_flags() -> argparse.ArgumentParser:
    """The flags every command shares, defined once and attached to the top parser and every
    sub-command parser. Their defaults are SUPPRESS, so a sub-command that was not given a flag
    leaves the value given before it in place (with ordinary defaults argparse overwrote
    `--user bob` before the command with the sub-command's None: Bob ran as the operator)."""
    common = argparse.ArgumentParser(add_help=False)
    S = argparse.SUPPRESS
    common.add_argument("--data-dir", default=S, help="data folder (default $RAG_DATA_DIR or ./.groundwork)")
    common.add_argument("--json", action="store_true", default=S, help="print JSON only on stdout")
    common.add_argument("--user", default=S,
                        help="act as this user (default $RAG_USER). With no --user, --groups, --tenant and no "
                             "$RAG_USER/$RAG_GROUPS/$RAG_TENANT the command runs in the local no-auth mode as the "
                             "operator, who sees and changes everything (RAG_AUTH=required turns that off)")
    common.add_argument("--groups", default=S, help="comma-separated groups of that user; default $RAG_GROUPS")
    common.add_argument("--tenant", default=S,
                        help="the caller's tenant (default $RAG_TENANT); a knowledge base is created in its "
                             "creator's tenant")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_flags()
    p = argparse.ArgumentParser(
        prog="python -m rag_core", description="Groundwork: chat with your documents.", parents=[common],
        epilog="--user/--groups/--tenant/--json/--data-dir mean the same before or after the command name. "
               "Identity: no identity at all = the local no-auth operator (unless RAG_AUTH=required); the creator of "
               "a knowledge base owns it; owners and admins change it; --allow-users/--allow-groups grant reading.")
    sub = p.add_subparsers(dest="cmd", required=True)

    kb = sub.add_parser("kb", help="knowledge bases", parents=[common])
    kb_sub = kb.add_subparsers(dest="kb_cmd", required=True)
    c = kb_sub.add_parser("create", help="create a knowledge base", parents=[common])
    c.add_argument("name")
    c.add_argument("--description", default="")
    c.add_argument("--instructions", default="")
    c.add_argument("--grounded-only", action="store_true")
    c.add_argument("--allow-users", default=None, help="comma-separated users who may read it (no users and no "
                   "groups = everyone in your tenant)")
    c.add_argument("--allow-groups", default=None, help="comma-separated groups whose members may read it")
    c.add_argument("--owners", default=None, help="comma-separated co-owners (you are one already): they may change it")
    c.set_defaults(func=cmd_kb_create)
    u = kb_sub.add_parser("update", help="change a knowledge base: owners and admins (access edits apply at once)",
                          parents=[common])
    u.add_argument("name")
    u.add_argument("--rename", default=None)
    u.add_argument("--description", default=None)
    u.add_argument("--instructions", default=None, help="custom instructions (system prompt); '' = none")
    u.add_argument("--grounded-only", action=argparse.BooleanOptionalAction, default=None,
                   help="only answers every sentence of which is supported (--no-grounded-only switches it off)")
    u.add_argument("--allow-users", default=None, help="replaces the readers list; '' = none")
    u.add_argument("--allow-groups", default=None, help="replaces the reader groups; '' = none")
    u.add_argument("--owners", default=None, help="replaces the owners list (co-owners)")
    u.add_argument("--retention-days", type=int, default=None, metavar="DAYS",
                   help="keep questions asked here (and their feedback) this many days; 0 = until deleted")
    u.add_argument("--query-log", default=None, choices=("default", *LOG_LEVELS),
                   help="what the query log keeps of questions asked here (default: RAG_QUERY_LOG; a knowledge "
                   "base may keep less than the deployment, never more)")
    u.add_argument("--stale-after-days", type=int, default=None, metavar="DAYS",
                   help="flag a cited source dated more than DAYS before today as possibly out of date; 0 = never")
    u.add_argument("--recency-half-life", type=float, default=None, metavar="DAYS",
                   help="prefer newer documents: relevance blended with 0.5^(age/DAYS); 0 = off (the default)")
    u.add_argument("--answer-policy", default=None, choices=("default", "auto", "conservative", "model"),
                   help="who decides whether an answer is shown here (default: the app's RAG_ANSWER_POLICY)")
    u.add_argument("--moderation", default=None, choices=("default", "off", "standard", "strict"),
                   help="moderation of questions and answers here (default: the app's RAG_MODERATION); asked "
                   "together with other knowledge bases, the strictest applies")
    u.set_defaults(func=cmd_kb_update)
    ls = kb_sub.add_parser("list", help="list the knowledge bases you may see", parents=[common])
    ls.set_defaults(func=cmd_kb_list)
    kd = kb_sub.add_parser("delete", help="delete a knowledge base and its documents: owners and admins",
                           parents=[common])
    kd.add_argument("name")
    kd.set_defaults(func=cmd_kb_delete)

    ing = sub.add_parser("ingest", help="add files and folders to a knowledge base", parents=[common])
    ing.add_argument("--kb", required=True)
    ing.add_argument("paths", nargs="*")
    ing.add_argument("--url", default=None, help="a web page, or a sitemap whose pages to add (robots.txt honoured)")
    ing.add_argument("--max-pages", type=int, default=50, help="with --url: at most this many pages (default 50)")
    ing.add_argument("--date", default=None, metavar="YYYY-MM-DD",
                     help="the documents' date (else what each file states, else the upload day)")
    ing.add_argument("--language", default=None, metavar="CODE",
                     help="the documents' language, ISO 639-1 (else detected per document and per chunk)")
    ing.set_defaults(func=cmd_ingest)

    pv = sub.add_parser("privacy", help="retention and users' data", parents=[common])
    pv_sub = pv.add_subparsers(dest="privacy_cmd", required=True)
    pv_sub.add_parser("purge", help="delete logged questions past their knowledge bases' retention", parents=[common])
    pv_sub.add_parser("forget-mine", help="delete your own logged questions and their feedback", parents=[common])
    pe = pv_sub.add_parser("export", help="everything stored about a user, as JSON (yourself, or anyone: admins)",
                           parents=[common])
    pe.add_argument("--of", required=True, help="the user")
    pe.add_argument("--out", required=True)
    pr = pv_sub.add_parser("erase", help="erase a user's log, feedback and conversations: admins", parents=[common])
    pr.add_argument("--of", required=True, help="the user")
    pv.set_defaults(func=cmd_privacy)

    al = sub.add_parser("alerts", help="alert rules over the query log: admins", parents=[common])
    al_sub = al.add_subparsers(dest="alerts_cmd", required=True)
    al_sub.add_parser("list", help="the rules, firing or not", parents=[common])
    aa = al_sub.add_parser("add", help="a rule: fire when METRIC over the window exceeds THRESHOLD", parents=[common])
    aa.add_argument("metric", choices=METRICS)
    aa.add_argument("threshold", type=float, help="milliseconds for p95_latency_ms; a share (0.2 = 20%%) for rates")
    aa.add_argument("--window", type=int, default=15, metavar="MINUTES")
    aa.add_argument("--min-answers", type=int, default=5, help="judge a window only with this many answers")
    aa.add_argument("--webhook", default="", help="POST the event here as JSON when it fires and resolves")
    ad = al_sub.add_parser("delete", help="delete a rule", parents=[common])
    ad.add_argument("rule_id")
    al_sub.add_parser("check", help="check every rule now", parents=[common])
    al.set_defaults(func=cmd_alerts)

    le = sub.add_parser("learned", help="what feedback taught retrieval", parents=[common])
    le_sub = le.add_subparsers(dest="learned_cmd", required=True)
    le_sub.add_parser("list", help="records of the knowledge bases you own (admins: all)", parents=[common])
    lr = le_sub.add_parser("revert", help="undo one record (--id) or a knowledge base's (--kb): admins",
                           parents=[common])
    lr.add_argument("--id", type=int, default=None)
    lr.add_argument("--kb", default=None)
    le.set_defaults(func=cmd_learned)

    dt = sub.add_parser("date", help="change a document's date: owners and admins", parents=[common])
    dt.add_argument("--kb", required=True)
    dt.add_argument("doc_id")
    dt.add_argument("date", metavar="YYYY-MM-DD")
    dt.set_defaults(func=cmd_date)

    tr = sub.add_parser("trust", help="mark a document trusted (ranks higher, named first in a conflict), normal, or "
                        "draft (left out of answers unless asked for): owners and admins", parents=[common])
    tr.add_argument("--kb", required=True)
    tr.add_argument("doc_id")
    tr.add_argument("level", choices=("trusted", "normal", "draft"))
    tr.set_defaults(func=cmd_trust)

    lg = sub.add_parser("language", help="correct a document's language (its keyword index is rebuilt): owners and admins",
                        parents=[common])
    lg.add_argument("--kb", required=True)
    lg.add_argument("doc_id")
    lg.add_argument("language", metavar="CODE", help="ISO 639-1, e.g. en, de, ja")
    lg.set_defaults(func=cmd_language)

    ca = sub.add_parser("calibrate", help="fit the answer policy to the configured model (admins); --show: the policy in force",
                        parents=[common])
    ca.add_argument("--limit", type=int, default=None, help="only the first N questions of the calibration set (a quick pass)")
    ca.add_argument("--target", type=float, default=None,
                    help="near-miss questions to decline, at least (default RAG_ANSWER_POLICY_TARGET, 0.85)")
    ca.add_argument("--show", action="store_true", help="print the policy in force and its figures")
    ca.set_defaults(func=cmd_calibrate)

    re_ = sub.add_parser("reembed", help="re-embed every document with the configured embedding model, after a model "
                         "change (admins; resumable; keyword search works meanwhile)", parents=[common])
    re_.set_defaults(func=cmd_reembed)

    de = sub.add_parser("delete", help="delete a document", parents=[common])
    de.add_argument("--kb", required=True)
    de.add_argument("doc_id")
    de.set_defaults(func=cmd_delete)

    se = sub.add_parser("search", help="retrieve passages", parents=[common])
    se.add_argument("--kb", required=True, help="knowledge base name (comma-separate several)")
    se.add_argument("--queries", help="JSONL of {id, question|text}")
    se.add_argument("--query", help="a single query, printed")
    se.add_argument("--top-k", type=int, default=10)
    se.add_argument("--out", help="write results JSONL here")
    se.add_argument("--mode", choices=["hybrid", "keyword", "vector"], default="hybrid")
    se.add_argument("--no-rerank", action="store_true", help="skip reranking")
    se.add_argument("--after", default=None, metavar="YYYY-MM-DD", help="only documents dated on or after this day")
    se.add_argument("--before", default=None, metavar="YYYY-MM-DD", help="only documents dated on or before this day")
    se.add_argument("--include-drafts", action="store_true", help="search documents marked draft too")
    se.set_defaults(func=cmd_search)
    ask = sub.add_parser("ask", help="answer a question with citations", parents=[common])
    ask.add_argument("--kb", required=True, help="knowledge base name (comma-separate several)")
    ask.add_argument("question", nargs="?")
    ask.add_argument("--questions", help="JSONL of {id, question}")
    ask.add_argument("--out", help="write answers JSONL here")
    ask.add_argument("--after", default=None, metavar="YYYY-MM-DD", help="only documents dated on or after this day")
    ask.add_argument("--before", default=None, metavar="YYYY-MM-DD", help="only documents dated on or before this day")
    ask.add_argument("--no-cache", action="store_true", help="answer afresh, not from the answer cache")
    ask.add_argument("--include-drafts", action="store_true", help="answer from documents marked draft too")
    ask.add_argument("--route", choices=("search", "document", "compare"), default=None,
                     help="the route instead of the planner's (search: passages; document: read one whole "
                          "document; compare: the documents named, side by side)")
    ask.set_defaults(func=cmd_ask)

    ve = sub.add_parser("verify", help="check given answers against given sources", parents=[common])
    ve.add_argument("--pairs", required=True, help='JSONL of {"id", "answer", "sources": [text, ...], "question"?}; with a question, '
                    'grounding_score judges the answer as an answer to it')
    ve.add_argument("--out", required=True)
    ve.set_defaults(func=cmd_verify)

    mi = sub.add_parser("migrate", help="copy chunks and vectors to another store (no re-embedding)", parents=[common])
    mi.add_argument("--to", choices=["weaviate"], required=True)
    mi.add_argument("--restart", action="store_true",
                    help="copy every document again (by default a rerun resumes: documents already copied are skipped)")
    mi.set_defaults(func=cmd_migrate)

    ev = sub.add_parser("eval", help="evaluate retrieval", parents=[common])
    ev_sub = ev.add_subparsers(dest="eval_cmd", required=True)
    eb = ev_sub.add_parser("beir", help="nDCG@10, recall@10/100, MRR@10, latency on a BEIR folder", parents=[common])
    eb.add_argument("folder")
    eb.add_argument("--mode", choices=["hybrid", "keyword", "vector"], default="hybrid")
    eb.add_argument("--kb", default=None, help="knowledge base to index into (default beir-FOLDERNAME)")
    eb.add_argument("--no-rerank", action="store_true", help="skip reranking")
    eb.add_argument("--alpha", type=float, default=None, help="override the hybrid weight (0 keyword … 1 vector)")
    eb.add_argument("--fusion", choices=["relative_score", "rrf"], default=None)
    eb.set_defaults(func=cmd_eval_beir)

    ch = sub.add_parser("chunks", help="export a knowledge base's chunks as JSONL", parents=[common])
    ch.add_argument("--kb", required=True)
    ch.add_argument("--out", required=True, help="C.jsonl: {chunk_id, doc_id, source, page_start, page_end, section, text}")
    ch.set_defaults(func=cmd_chunks)

    sv = sub.add_parser("serve", help="run the HTTP API (DESIGN.md §6b) on uvicorn", parents=[common])
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8000)
    sv.add_argument("--workers", type=int, default=1, help="worker processes (each opens the data folder)")
    sv.add_argument("--no-auth", action="store_true",
                    help="every request acts as the local operator: only on a loopback address")
    sv.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    sv.add_argument("--forwarded-allow-ips", default=None,
                    help="proxies whose X-Forwarded-For is trusted (default 127.0.0.1)")
    sv.set_defaults(func=cmd_serve)

    ak = sub.add_parser("api-key", help="API keys for the HTTP API", parents=[common])
    ak_sub = ak.add_subparsers(dest="key_cmd", required=True)
    kc = ak_sub.add_parser("create", help="create a key for --user (with --groups, --tenant); printed once, last line",
                           parents=[common])
    kc.add_argument("--scope", choices=["read", "write", "admin"], required=True)
    kc.add_argument("--label", default="", help="what the key is for (shown in lists)")
    kc.set_defaults(func=cmd_api_key_create)
    kl = ak_sub.add_parser("list", help="list keys (never their secrets); --user: that user's only", parents=[common])
    kl.set_defaults(func=cmd_api_key_list)
    kr = ak_sub.add_parser("revoke", help="revoke a key at once (by its id or the key itself)", parents=[common])
    kr.add_argument("key_id")
    kr.set_defaults(func=cmd_api_key_revoke)
    return p


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse a command line; the shared flags that were given nowhere get their defaults here,
    once (see _common_flags)."""
    args = build_parser().parse_args(argv)
    for flag in GLOBAL_FLAGS:
        name = flag.lstrip("-").replace("-", "_")
        if not hasattr(args, name):
            setattr(args, name, False if name == "json" else None)
    return args


def main(argv: list[str] | None = None) -> int:
    import logging

    # pypdf logs every repair it makes ("EOF marker not found"); the per-file report
    # already says what matters, so keep the terminal readable.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    args = parse_args(argv)
    try:
        return args.func(args)
    except GroundworkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        while _OPEN:
            _OPEN.pop().close()
