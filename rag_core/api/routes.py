"""The REST resources (DESIGN.md §6b): knowledge bases, documents, jobs, query, search, feedback,
threads. Thin: each route calls the Workspace with the request's caller (resolved by gate.py) and
shapes the result; access decisions are the Workspace's (rag_core/access.py), so a hidden
knowledge base is a 404 exactly like a missing one."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import asdict

from fastapi import APIRouter, Depends, File, Request, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from ..errors import InputError, NotFound
from ..models import RetrievalSettings
from ..schemas import AnswerOut, kb_listing
from . import answering
from .errors import error_payload
from .auth import Principal
from .models import (AlertRuleCreate, DocumentUpdate, UrlIngest, FeedbackRequest, KnowledgeBaseCreate, KnowledgeBaseUpdate, QueryRequest,
                     SearchRequest, ThreadCreate, ThreadRename)


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def need(scope: str):
    def check(request: Request) -> Principal:
        p: Principal = request.state.principal
        if not p.allows(scope):
            raise ApiError(403, "insufficient_scope", f"this needs a credential with the '{scope}' scope "
                                                      f"(this one has '{p.scope}')")
        return p
    return Depends(check)


READ, WRITE, ADMIN = need("read"), need("write"), need("admin")
router = APIRouter(prefix="/v1")


def ws_of(request: Request):
    return request.app.state.ws


# ---- knowledge bases ----------------------------------------------------------------------
def _kb_out(ws, kb, caller) -> dict:
    return {**kb_listing(ws, kb, caller), "retrieval": asdict(kb.retrieval)}


def _retrieval(base: RetrievalSettings, given) -> RetrievalSettings:
    if given is None:
        return base
    return RetrievalSettings(**{**asdict(base), **given.model_dump(exclude_none=True)})


@router.get("/knowledge-bases", tags=["knowledge bases"])
def list_kbs(request: Request, p: Principal = READ):
    ws = ws_of(request)
    return {"data": [_kb_out(ws, kb, p.caller) for kb in ws.list_kbs(caller=p.caller)]}


@router.post("/knowledge-bases", status_code=201, tags=["knowledge bases"])
def create_kb(body: KnowledgeBaseCreate, request: Request, p: Principal = WRITE):
    ws = ws_of(request)
    kb = ws.create_kb(body.name, caller=p.caller, description=body.description, instructions=body.instructions,
                      grounded_only=body.grounded_only, retrieval=_retrieval(RetrievalSettings(), body.retrieval),
                      acl_users=body.allow_users, acl_groups=body.allow_groups, owners=body.owners)
    return _kb_out(ws, kb, p.caller)


@router.get("/knowledge-bases/{kb}", tags=["knowledge bases"])
def get_kb(kb: str, request: Request, p: Principal = READ):
    ws = ws_of(request)
    return _kb_out(ws, ws.get_kb(kb, caller=p.caller), p.caller)


@router.patch("/knowledge-bases/{kb}", tags=["knowledge bases"])
def update_kb(kb: str, body: KnowledgeBaseUpdate, request: Request, p: Principal = WRITE):
    ws = ws_of(request)
    current = ws.writable_kb(kb, caller=p.caller)
    names = {"name": "name", "description": "description", "instructions": "instructions",
             "grounded_only": "grounded_only", "allow_users": "acl_users", "allow_groups": "acl_groups",
             "owners": "owners", "retention_days": "retention_days", "query_log": "query_log"}
    changes = {names[k]: v for k, v in body.model_dump(exclude_none=True, exclude={"retrieval"}).items()}
    if body.retrieval is not None:
        changes["retrieval"] = _retrieval(current.retrieval, body.retrieval)
    new = ws.update_kb(current.kb_id, caller=p.caller, **changes) if changes else current
    return _kb_out(ws, new, p.caller)


@router.delete("/knowledge-bases/{kb}", status_code=204, tags=["knowledge bases"])
def delete_kb(kb: str, request: Request, p: Principal = WRITE):
    ws_of(request).delete_kb(kb, caller=p.caller)
    return Response(status_code=204)


# ---- documents and jobs ---------------------------------------------------------------------
_DOC_FIELDS = ("doc_id", "kb_id", "source", "title", "mime", "sha256", "pages", "chunks", "status", "reason",
               "created_at", "date", "date_source", "language", "language_source", "trust")


@router.get("/knowledge-bases/{kb}/documents", tags=["documents"])
def list_documents(kb: str, request: Request, p: Principal = READ):
    docs = ws_of(request).list_documents(kb, caller=p.caller, status="visible")
    return {"data": [{k: getattr(d, k) for k in _DOC_FIELDS} for d in docs]}


@router.post("/knowledge-bases/{kb}/documents", status_code=202, tags=["documents"])
async def upload_documents(kb: str, request: Request, files: list[UploadFile] = File(...), p: Principal = WRITE):
    """Queue files for the same background jobs as the Upload page; returns the job id at once.
    A 0-byte or oversized file, or too many files, refuses the whole request before anything is
    stored (nothing half-made); files that turn out unreadable (corrupt, encrypted, image-only
    without OCR) are reported by name in the job's report, and the rest of the batch goes in."""
    import anyio

    ws = ws_of(request)
    target = await anyio.to_thread.run_sync(lambda: ws.writable_kb(kb, caller=p.caller))
    s = ws.settings
    if len(files) > s.max_files_per_batch:
        raise ApiError(400, "too_many_files", f"{len(files)} files in one request; the limit is {s.max_files_per_batch}")
    batch, problems, too_big = [], [], False
    for f in files:
        name = (f.filename or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
        data = await f.read(s.max_file_mb * 2**20 + 1)
        if not name:
            problems.append("a file has no name")
        elif not data:
            problems.append(f"{name}: the file is empty (0 bytes)")
        elif len(data) > s.max_file_mb * 2**20:
            too_big = True
            problems.append(f"{name}: larger than the {s.max_file_mb} MB limit per file")
        batch.append((name, data))
    if problems:
        raise ApiError(413 if too_big else 400, "too_large" if too_big else "bad_file",
                       "nothing was uploaded: " + "; ".join(problems))
    job_id = await anyio.to_thread.run_sync(lambda: ws.submit_upload(target.kb_id, batch, caller=p.caller))
    return {"job_id": job_id, "status_url": f"/v1/jobs/{job_id}", "files": [n for n, _ in batch]}


@router.post("/knowledge-bases/{kb}/urls", tags=["documents"])
def add_urls(kb: str, body: UrlIngest, request: Request, p: Principal = WRITE):
    """A web page, or the pages its sitemap lists, fetched now (robots.txt honoured), each page's
    main text indexed with its URL as the source and the fetch day as its date; the report
    says, per URL, ingested, unchanged ("duplicate") or failed with the reason."""
    stats = ws_of(request).ingest_url(kb, body.url, caller=p.caller, max_pages=body.max_pages)
    return {"pages": sum(r.status == "ingested" for r in stats.reports),
            "unchanged": sum(r.status == "duplicate" for r in stats.reports),
            "failed": sum(r.status == "failed" for r in stats.reports), "chunks": stats.chunks,
            "reports": [r.to_dict() for r in stats.reports]}


@router.delete("/knowledge-bases/{kb}/documents/{doc_id}", status_code=204, tags=["documents"])
def delete_document(kb: str, doc_id: str, request: Request, p: Principal = WRITE):
    if not ws_of(request).delete_document(kb, doc_id, caller=p.caller):
        raise NotFound("no such document")
    return Response(status_code=204)


@router.patch("/knowledge-bases/{kb}/documents/{doc_id}", tags=["documents"])
def update_document(kb: str, doc_id: str, body: DocumentUpdate, request: Request, p: Principal = WRITE):
    """Change a document's date, language or trust (owners and admins); filters, recency, the
    keyword index and ranking follow at once."""
    if body.date is None and body.language is None and body.trust is None:
        raise ApiError(422, "bad_request", "give a date, a language or a trust level")
    ws = ws_of(request)
    doc = None
    if body.date is not None:
        doc = ws.set_document_date(kb, doc_id, body.date, caller=p.caller)
    if body.language is not None:
        doc = ws.set_document_language(kb, doc_id, body.language, caller=p.caller)
    if body.trust is not None:
        doc = ws.set_document_trust(kb, doc_id, body.trust, caller=p.caller)
    return {k: getattr(doc, k) for k in _DOC_FIELDS}


@router.get("/knowledge-bases/{kb}/documents/{doc_id}/original", tags=["documents"])
def download_original(kb: str, doc_id: str, request: Request, p: Principal = READ):
    ws = ws_of(request)
    target = ws.get_kb(kb, caller=p.caller)
    doc = ws.accessible_document(target.kb_id, doc_id, caller=p.caller)
    data = ws.original_bytes(target.kb_id, doc_id, caller=p.caller)
    quoted = urllib.parse.quote(doc.source, safe="")
    return Response(data, media_type=doc.mime or "application/octet-stream",
                    headers={"Content-Disposition": f"attachment; filename*=UTF-8''{quoted}"})


def _job_out(job) -> dict:
    return {"job_id": job.job_id, "kb_id": job.kb_id, "status": job.status, "summary": job.summary(),
            "created": job.created, "started": job.started, "finished": job.finished,
            "files": [name for name, _ in job.files], "reports": job.reports, "progress": job.progress,
            "error": job.error, "cancel_requested": job.cancel, "waiting_for_password": job.locked_files()}


@router.get("/jobs/{job_id}", tags=["jobs"])
def get_job(job_id: str, request: Request, p: Principal = WRITE):
    return _job_out(ws_of(request).job(job_id, caller=p.caller))


@router.post("/jobs/{job_id}/cancel", tags=["jobs"])
def cancel_job(job_id: str, request: Request, p: Principal = WRITE):
    ws = ws_of(request)
    ws.cancel_job(job_id, caller=p.caller)
    return _job_out(ws.job(job_id, caller=p.caller))


# ---- answers --------------------------------------------------------------------------------
def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


@router.post("/query", tags=["answers"], response_model=AnswerOut)
async def query(body: QueryRequest, request: Request, p: Principal = READ):
    """The answer with its citations, the two scores and the confidence, or an abstention with
    its reason and the closest passages. `stream: true` → server-sent events: `token`, `status`,
    `restart` (the text so far is replaced), `notice`, then `answer` (the verified answer, the
    same body as the JSON reply) or `error`."""
    import anyio

    ws = ws_of(request)
    metrics = request.app.state.metrics
    q = await anyio.to_thread.run_sync(lambda: answering.prepare(
        ws, p.caller, body.question, body.knowledge_bases, body.documents, body.thread_id,
        after=body.after, before=body.before, route=body.route, no_cache=body.no_cache, options=body.options()))
    if not body.stream:
        answer, qid = await answering.answer_in_turn(ws, q, metrics)
        return AnswerOut.of(answer, qid, query_id=qid, thread_id=q.thread_id).model_dump()

    async def stream():
        try:
            async for ev in answering.events(ws, q, request.is_disconnected):
                if ev.kind == "answer":
                    qid = await anyio.to_thread.run_sync(answering.record, ws, q, ev.answer, metrics)
                    yield sse("answer", AnswerOut.of(ev.answer, qid, query_id=qid, thread_id=q.thread_id).model_dump())
                else:
                    yield sse(ev.kind, {"text": ev.text})
        except Exception as exc:  # noqa: BLE001 - the status line is sent: report in the stream
            yield sse("error", error_payload(exc))

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


@router.get("/alerts", tags=["service"])
def list_alerts(request: Request, p: Principal = READ):
    """The alert rules (admins), with their state and the latest events."""
    from ..alerts import rule_dict

    ws = ws_of(request)
    return {"rules": [rule_dict(r) for r in ws.alert_rules(caller=p.caller)], "events": ws.alerts.events()}


@router.post("/alerts", tags=["service"], status_code=201)
def add_alert(body: AlertRuleCreate, request: Request, p: Principal = READ):
    from ..alerts import rule_dict

    rule = ws_of(request).add_alert_rule(body.metric, body.threshold, body.window_minutes, body.webhook or "",
                                         body.min_answers, caller=p.caller)
    return rule_dict(rule)


@router.delete("/alerts/{rule_id}", tags=["service"], status_code=204)
def delete_alert(rule_id: str, request: Request, p: Principal = READ):
    ws_of(request).delete_alert_rule(rule_id, caller=p.caller)
    return Response(status_code=204)


@router.post("/alerts/check", tags=["service"])
def check_alerts(request: Request, p: Principal = READ):
    return {"events": ws_of(request).check_alerts(caller=p.caller)}


@router.get("/queries", tags=["answers"])
def my_queries(request: Request, limit: int = 50, offset: int = 0, p: Principal = READ):
    """The caller's own questions, newest first, with each answer's scores and rating
    (`limit` ≤ 200). Nobody else's: an admin's are their own too (Analytics shows everyone's)."""
    if not (1 <= limit <= 200) or offset < 0:
        raise InputError("limit is 1 to 200 and offset ≥ 0")
    return ws_of(request).feedback_for(caller=p.caller).history(limit, offset)


@router.post("/search", tags=["answers"])
def search(body: SearchRequest, request: Request, p: Principal = READ):
    ws = ws_of(request)
    answering.check_length(ws, body.query, "query")
    r = ws.search(body.knowledge_bases, body.query, k=body.top_k, mode=body.mode, rerank=body.rerank, caller=p.caller,
                  after=body.after, before=body.before, include_drafts=body.include_drafts)
    return {"query": body.query, "timings_ms": r.timings_ms, "results": [
        {"doc_id": x.chunk.doc_id, "chunk_id": x.chunk.chunk_id, "kb_id": x.chunk.kb_id, "score": x.score,
         "source": x.chunk.source, "title": x.chunk.title, "section": x.chunk.section,
         "page_start": x.chunk.page_start, "page_end": x.chunk.page_end, "date": x.chunk.date, "text": x.chunk.text}
        for x in r.results]}


@router.get("/answer-policy", tags=["answers"])
def answer_policy(request: Request, knowledge_bases: str | None = None, p: Principal = READ):
    """The answer policy in force (for these comma-separated knowledge bases, when given): who
    decides whether an answer is shown, and what its calibration measured, in words."""
    names = [n.strip() for n in (knowledge_bases or "").split(",") if n.strip()]
    return ws_of(request).answer_policy(caller=p.caller, kb_names=names or None)


@router.post("/feedback", tags=["answers"])
def feedback(body: FeedbackRequest, request: Request, p: Principal = READ):
    fb = ws_of(request).feedback_for(caller=p.caller)
    if not fb.owns(body.query_id):
        raise NotFound("no such answer")  # another user's reads the same as a missing one
    fb.rate(body.query_id, body.rating, body.comment, body.reason)
    rating, comment, reason = fb.rating_of(body.query_id)
    return {"query_id": body.query_id, "rating": rating, "comment": comment, "reason": reason}


# ---- threads --------------------------------------------------------------------------------
def _thread_out(t) -> dict:
    return {"thread_id": t.thread_id, "title": t.title, "created": t.created, "updated": t.updated}


@router.get("/threads", tags=["threads"])
def list_threads(request: Request, p: Principal = READ):
    return {"data": [_thread_out(t) for t in ws_of(request).conversations(caller=p.caller).list()]}


@router.post("/threads", status_code=201, tags=["threads"])
def create_thread(body: ThreadCreate, request: Request, p: Principal = READ):
    convs = ws_of(request).conversations(caller=p.caller)
    tid = convs.create(body.title)
    return _thread_out(convs.get(tid))


@router.get("/threads/{thread_id}", tags=["threads"])
def read_thread(thread_id: str, request: Request, p: Principal = READ):
    convs = ws_of(request).conversations(caller=p.caller)
    msgs = convs.messages(thread_id)
    thread = convs.get(thread_id)
    out = []
    for m in msgs:
        row = {"role": m["role"], "content": m["content"]}
        if "answer" in m:
            row["answer"] = AnswerOut.of(m["answer"], m.get("query_id"), query_id=m.get("query_id")).model_dump()
        out.append(row)
    return {**_thread_out(thread), "messages": out}


@router.patch("/threads/{thread_id}", tags=["threads"])
def rename_thread(thread_id: str, body: ThreadRename, request: Request, p: Principal = READ):
    convs = ws_of(request).conversations(caller=p.caller)
    convs.rename(thread_id, body.title)
    return _thread_out(convs.get(thread_id))


@router.delete("/threads/{thread_id}", status_code=204, tags=["threads"])
def delete_thread(thread_id: str, request: Request, p: Principal = READ):
    ws_of(request).conversations(caller=p.caller).delete(thread_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/export", tags=["threads"], response_class=PlainTextResponse)
def export_thread(thread_id: str, request: Request, p: Principal = READ):
    md = ws_of(request).conversations(caller=p.caller).markdown(thread_id)
    return PlainTextResponse(md, media_type="text/markdown; charset=utf-8",
                             headers={"Content-Disposition": f'attachment; filename="conversation-{thread_id[:8]}.md"'})


# ---- service ----------------------------------------------------------------------------------
@router.get("/health", tags=["service"])
def health():
    return {"status": "ok"}


@router.get("/ready", tags=["service"])
def ready(request: Request):
    """Ready when the database answers and the store can count its chunks (a Weaviate server
    that is down makes this 503, so a load balancer stops sending traffic here)."""
    ws = ws_of(request)
    try:
        ws.db.query_one("SELECT 1")
        chunks = ws.store.count()
    except Exception as exc:  # noqa: BLE001 - any failure means not ready
        return JSONResponse({"status": "not ready", "reason": type(exc).__name__}, status_code=503)
    return {"status": "ready", "store": ws.settings.store, "chunks": chunks}


@router.get("/metrics", tags=["service"], response_class=PlainTextResponse)
def metrics(request: Request, p: Principal = ADMIN):
    body, ctype = request.app.state.metrics.render()
    return Response(body, media_type=ctype)
