"""Weaviate store (weaviate-client v4): the same protocol as the embedded store, on a
Weaviate server, using its native hybrid search.

Design choices:
- One collection, knowledge bases as a filterable `kb_id` property (not Weaviate
  multi-tenancy): a question may span several knowledge bases, and a multi-tenant query
  reads one tenant at a time. Tenant and document are filterable properties too, so every
  filter is applied inside Weaviate's query. Access is decided per knowledge base
  (rag_core/access.py), which hands us the visible kb_ids; chunks still carry the users and
  groups they were ingested with (shown with a source), but no search filters on them.
- Vectors are self-provided (our embedder), so both stores rank on identical vectors.
- BM25 runs over `content`, which holds our analysed terms (Snowball stems, stop words
  dropped) — the keyword side then tokenises exactly like the embedded store.
- Weaviate has no multi-object transactions: a document is written with one batch and, if
  any object fails, every object of that document is deleted again before the error is
  raised, so no half document stays.
- A cluster (README "Scaling out"): the collection is created with `replication_factor`
  copies of every shard, asynchronous replication (the background repair that lets a node
  that was down catch up) and DeleteOnConflict (a delete a down node missed wins over its
  stale copy, so a deleted document never comes back). Writes (chunk adds, vector updates,
  deletes) use consistency ALL: Weaviate searches, and fetches by filter, read ONE copy of
  each shard (the node's own when it holds one; the consistency level given to a search only
  re-checks the objects it found), so only a write that every copy holds is certain to be
  found by the next search on any node (W + R > N with W = N, R = 1). Weaviate's ALL counts
  the copies on the nodes it currently lists as cluster members. When a copy cannot be
  reached (a node died and is not yet dropped from the member list: about 5 s here) the same
  write is repeated at QUORUM and counted in `degraded_writes`; it then holds on every copy
  that answered, and a node that missed writes serves searches that miss them until
  asynchronous replication has repaired it. (A write in flight when a node dies can wait
  until the node is back, or until the client's 90 s timeout, and then goes at QUORUM.)
  Object reads use `consistency` (QUORUM by default). One shard by default: BM25 statistics are
  per shard in Weaviate, so several shards make keyword scores depend on placement. `url`
  may list several nodes ("http://a:8080,http://b:8080"): when the node we talk to stops
  answering, the call is retried once on the next node (the one retry the fault test allows).
"""

from __future__ import annotations

import re
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from urllib.parse import urlparse

import numpy as np

from ..errors import GroundworkError, MissingDependency
from ..models import Chunk, ScoredChunk, SearchFilters
from ..text.analysis import chunk_terms, query_terms

COLLECTION = "GroundworkChunk"
SCHEMA_VERSION = "1"
_INTS = ("ordinal", "page_start", "page_end", "char_start", "char_end", "line_start", "line_end", "doc_day")
_EXPLAIN_KW = re.compile(r"keyword,bm25\)[^:]*:\s*original score\s*([-\d.eE]+)")


def _import():
    try:
        import weaviate
        from weaviate.classes.config import Configure, DataType, Property, Tokenization
        from weaviate.classes.query import Filter, HybridFusion, MetadataQuery, Sort
        from weaviate.util import generate_uuid5
    except ImportError as exc:  # pragma: no cover
        raise MissingDependency("the Weaviate store needs weaviate-client: pip install weaviate-client") from exc
    return (weaviate, Configure, DataType, Property, Tokenization, Filter, HybridFusion, MetadataQuery, Sort,
            generate_uuid5)


# what Weaviate answers when a write cannot reach the copies its consistency level needs
_LEVEL_NOT_REACHED = ("cannot reach enough replicas", "cannot achieve consistency level", "Deadline Exceeded")


class WeaviateStore:
    name = "weaviate"
    # Objects per request when reading many (a document's chunks, a list of ids). Weaviate
    # caps one query at QUERY_MAXIMUM_RESULTS (10,000 by default), so reads page below that.
    page_size = 2000

    def __init__(self, url: str, api_key: str | None = None, grpc_port: int | list[int] = 50051,
                 collection: str = COLLECTION, *, replication_factor: int = 1, shards: int | None = 1,
                 consistency: str = "QUORUM", write_consistency: str = "ALL", async_replication: bool = True):
        (self._wv, self._Configure, self._DataType, self._Property, self._Tok, self._Filter, self._Fusion,
         self._Meta, self._Sort, self._uuid5) = _import()
        urls = [x.strip() for x in url.split(",") if x.strip()]
        ports = grpc_port if isinstance(grpc_port, list) else [grpc_port] * len(urls)
        if len(ports) != len(urls):
            raise GroundworkError("give one gRPC port per Weaviate node (WEAVIATE_GRPC_PORT, comma-separated)")
        self._nodes = list(zip(urls, ports))
        self._node = 0
        self._auth = self._wv.classes.init.Auth.api_key(api_key) if api_key else None
        self.collection_name = collection
        self.replication_factor, self.shards, self.async_replication = replication_factor, shards, async_replication
        self.consistency = consistency.upper()  # object reads
        self.write_consistency = write_consistency.upper()
        self.retries = 0  # calls that succeeded only on the one retry (failover), for the fault test's report
        self.degraded_writes = 0  # writes that could not reach every copy and were made at QUORUM
        self.probe_after_s = 2.0
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="weaviate-call")
        self._swap = threading.Lock()  # choosing and replacing the client (failover) is one step
        self.client = self._connect(0)
        self._open()

    open_timeout_s = 90.0

    def _open(self) -> None:
        """Our collection, made if missing, through whichever node answers, so a process that
        starts while one node of the cluster is down opens the store through another.
        `_connect` skips a node that refuses the connection, but one can accept it and then fail
        the first call (killed a moment later). And right after a node is lost, the live ones
        hold schema reads until the cluster has noticed: measured on the local cluster, a read
        answered at once, or after up to 12 s, or (with the client's 30 s timeout) raised a
        timeout, whichever node was lost. So with several nodes each attempt gets
        `probe_after_s`, then the next node is tried, until `open_timeout_s`; the attempt left
        behind ends on its own (a collection it creates meanwhile is found by the next)."""
        if len(self._nodes) == 1:
            self._ensure_schema()
            self._bind()
            return
        deadline = time.monotonic() + self.open_timeout_s
        while True:
            used = self.client
            fut = self._pool.submit(self._ensure_schema)
            try:
                fut.result(timeout=self.probe_after_s)
                self._bind()
                return
            except FutureTimeout:
                why: object = f"no answer within {self.probe_after_s:g} s"
            except GroundworkError:
                raise
            except Exception as exc:  # noqa: BLE001 - the client raises several types for this
                if not (_is_connection_error(exc) or _is_timeout(exc)):
                    raise
                why = exc
            if time.monotonic() > deadline:
                urls = ", ".join(u for u, _ in self._nodes)
                raise GroundworkError(f"Weaviate at {urls} did not answer for {self.open_timeout_s:g} s: {why}")
            self._move_on(used)

    def _connect(self, start: int):
        """The first node from `start` on that accepts a connection."""
        last = None
        for k in range(len(self._nodes)):
            i = (start + k) % len(self._nodes)
            url, grpc_port = self._nodes[i]
            u = urlparse(url if "://" in url else f"http://{url}")
            try:
                client = self._wv.connect_to_custom(
                    http_host=u.hostname, http_port=u.port or (443 if u.scheme == "https" else 80),
                    http_secure=u.scheme == "https", grpc_host=u.hostname, grpc_port=grpc_port,
                    grpc_secure=u.scheme == "https", auth_credentials=self._auth,
                )
                self._node = i
                return client
            except Exception as exc:  # noqa: BLE001 - connection errors come in many types
                last = exc
        urls = ", ".join(u for u, _ in self._nodes)
        raise GroundworkError(f"cannot reach Weaviate at {urls}: {last}") from None

    def _bind(self) -> None:
        CL = self._wv.classes.config.ConsistencyLevel
        base = self.client.collections.get(self.collection_name)
        # assigned before `client`: a call that reads `coll`/`wcoll` sees the new client's
        # handles once `client` itself is the new one
        self.wcoll = base.with_consistency_level(getattr(CL, self.write_consistency))
        # the level a write falls back to when ALL cannot be reached (none when reads ask for
        # ALL too: who sets RAG_WEAVIATE_CONSISTENCY=ALL wants an error, not a weaker write)
        self.wcoll_degraded = (base.with_consistency_level(CL.QUORUM)
                               if self.write_consistency == "ALL" and self.consistency != "ALL" else None)
        self.coll = base.with_consistency_level(getattr(CL, self.consistency))

    def _retry(self, call):
        """Run `call()`; when the node stops answering, reconnect (to the next node of a
        cluster) and run it once more. A second failure is raised.

        The client library itself retries a refused gRPC call with back-off for about a
        minute before it raises, which would freeze every request while a node is down. So
        with several nodes a call that has not returned after `probe_after_s` makes us ask
        the node whether it is alive; if it is not, the call is run on the next node at once
        (every call here is a read or an idempotent upsert/delete by id, so running it again
        is safe) and the stuck one is left to fail on its own."""
        used = self.client  # the client this attempt runs on: only its failure may replace it
        try:
            if len(self._nodes) == 1:
                return call()
            fut = self._pool.submit(call)
            try:
                return fut.result(timeout=self.probe_after_s)
            except FutureTimeout:
                if self._alive(self._node):
                    return fut.result()  # slow, not gone (a big batch on a busy cluster)
        except GroundworkError:
            raise
        except Exception as exc:  # noqa: BLE001
            if not _is_connection_error(exc):
                raise
        return self._failover_and(call, used)

    def _move_on(self, used) -> None:
        """Replace the client `used` (which failed) with one on the next node. Under a lock, and
        only if `used` is still the current client: when several threads fail at once, the
        first replaces it and the others run on its replacement (no second connection that
        would leak, no closing of a client another thread took)."""
        with self._swap:
            if self.client is used:
                fresh = self._connect(self._node + 1 if len(self._nodes) > 1 else self._node)
                old, self.client = self.client, fresh
                self._bind()
                self._pool.submit(_close_quietly, old)  # it may still be inside the library's back-off

    def _failover_and(self, call, used):
        """Move on from the client `used`, then run `call` once more."""
        self._move_on(used)
        out = call()
        with self._swap:
            self.retries += 1
        return out

    def _write(self, op):
        """Run the write `op(collection)` at `write_consistency` (ALL); if Weaviate cannot
        reach every copy, once more at QUORUM (counted in `degraded_writes`). Every write
        here is an upsert or a delete by id/filter, so repeating it is safe."""
        try:
            res = self._retry(lambda: op(self.wcoll))
            err = _write_error(res)
        except Exception as exc:  # noqa: BLE001 - the client raises several types for this
            res, err = None, exc
        if err is None:
            return res
        if self.wcoll_degraded is None or not any(m in str(getattr(err, "message", err)) for m in _LEVEL_NOT_REACHED):
            if res is None:
                raise err
            return res
        self.degraded_writes += 1
        return self._retry(lambda: op(self.wcoll_degraded))

    def _alive(self, i: int) -> bool:
        try:
            with urllib.request.urlopen(self._nodes[i][0].rstrip("/") + "/v1/.well-known/live", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    # ---- schema ----------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        P, T, D = self._Property, self._DataType, self._Tok
        props = [
            P(name="content", data_type=T.TEXT, tokenization=D.WHITESPACE),
            P(name="text", data_type=T.TEXT, index_searchable=False),
            P(name="title", data_type=T.TEXT, index_searchable=False),
            P(name="section", data_type=T.TEXT, index_searchable=False),
            P(name="source", data_type=T.TEXT, index_searchable=False),
            P(name="chunk_type", data_type=T.TEXT, index_searchable=False),
            P(name="language", data_type=T.TEXT, tokenization=D.FIELD, index_searchable=False),
            *(P(name=n, data_type=T.TEXT, tokenization=D.FIELD, index_searchable=False)
              for n in ("chunk_id", "doc_id", "kb_id", "doc_key", "tenant")),
            P(name="acl_users", data_type=T.TEXT_ARRAY, tokenization=D.FIELD, index_searchable=False),
            P(name="acl_groups", data_type=T.TEXT_ARRAY, tokenization=D.FIELD, index_searchable=False),
            P(name="acl_public", data_type=T.BOOL),
            *(P(name=n, data_type=T.INT) for n in _INTS),
        ]
        client = self.client  # one client for the whole check (`_open` may swap it meanwhile)
        if not client.collections.exists(self.collection_name):
            from weaviate.classes.config import ReplicationDeletionStrategy

            try:
                self._create(client, props, ReplicationDeletionStrategy)
            except Exception as exc:  # noqa: BLE001
                if "already exists" not in str(exc):
                    raise  # else: another process (or an earlier attempt of ours) made it first
            return
        # Migration: add properties an older schema lacks (Weaviate adds them in place).
        coll = client.collections.get(self.collection_name)
        have = {p.name for p in coll.config.get().properties}
        for p in props:
            if p.name not in have:
                coll.config.add_property(p)

    def _create(self, client, props, ReplicationDeletionStrategy) -> None:
        client.collections.create(
            self.collection_name, properties=props, vector_config=self._Configure.Vectors.self_provided(),
            # the same BM25 parameters as the embedded store (Anserini's BEIR defaults)
            inverted_index_config=self._Configure.inverted_index(bm25_k1=0.9, bm25_b=0.4),
            replication_config=self._Configure.replication(
                factor=self.replication_factor, async_enabled=self.async_replication and self.replication_factor > 1,
                deletion_strategy=ReplicationDeletionStrategy.DELETE_ON_CONFLICT),
            sharding_config=self._Configure.sharding(desired_count=self.shards) if self.shards else None,
            description=f"groundwork chunks, schema {SCHEMA_VERSION}",
        )

    # ---- writes ----------------------------------------------------------------------
    def add_chunks(self, chunks: list[Chunk], vectors: np.ndarray | None) -> None:
        """`vectors=None`: objects without a vector, found by BM25 (and the keyword side of
        hybrid) until `set_vectors` gives them one."""
        if not chunks:
            return
        if vectors is not None:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[0] != len(chunks):
                raise ValueError("one vector per chunk")
        # Weaviate upserts by id; a repeated chunk id would silently overwrite, where the
        # embedded store refuses it. Refuse it here too, before anything is written.
        if len({c.chunk_id for c in chunks}) != len(chunks):
            raise ValueError("duplicate chunk ids in one document")
        DataObject = self._wv.classes.data.DataObject
        objs = []
        for ch, vec in zip(chunks, vectors if vectors is not None else [None] * len(chunks)):
            props = {
                "content": " ".join(chunk_terms(ch)), "text": ch.text,
                "title": ch.title, "language": ch.language or "",
                "section": ch.section, "source": ch.source, "chunk_type": ch.chunk_type, "chunk_id": ch.chunk_id,
                "doc_id": ch.doc_id, "kb_id": ch.kb_id, "doc_key": f"{ch.kb_id}/{ch.doc_id}", "tenant": ch.tenant or "",
                "acl_users": list(ch.acl_users), "acl_groups": list(ch.acl_groups),
                "acl_public": not ch.acl_users and not ch.acl_groups, **{n: int(getattr(ch, n)) for n in _INTS},
            }
            objs.append(DataObject(properties=props, vector=vec.tolist() if vec is not None else None,
                                   uuid=self._uuid5(ch.chunk_id)))
        try:
            res = self._write(lambda coll: coll.data.insert_many(objs))  # an upsert by uuid: safe to repeat
            errors = res.errors
        except Exception as exc:  # noqa: BLE001
            errors = {0: exc}
        if errors:
            for key in {f"{c.kb_id}/{c.doc_id}" for c in chunks}:
                self._write(lambda coll: coll.data.delete_many(where=self._Filter.by_property("doc_key").equal(key)))
            first = next(iter(errors.values()))
            raise GroundworkError(f"Weaviate refused {len(errors)} of {len(objs)} chunks: {getattr(first, 'message', first)}")

    def set_vectors(self, chunk_ids: list[str], vectors: np.ndarray) -> int:
        """Vectors for objects written without one. Weaviate has no partial batch update of
        vectors alone, so each object is replaced with its own properties plus the vector
        (the same uuid: an upsert). Objects deleted meanwhile are skipped, not re-created."""
        if not chunk_ids:
            return 0
        vectors = np.asarray(vectors, dtype=np.float32)
        by_id = {o.properties["chunk_id"]: o for o in self._fetch_ids(list(chunk_ids))}
        DataObject = self._wv.classes.data.DataObject
        objs = [DataObject(properties=dict(by_id[cid].properties), vector=vec.tolist(), uuid=self._uuid5(cid))
                for cid, vec in zip(chunk_ids, vectors) if cid in by_id]
        return self._upsert(objs, "vectors")

    def set_document_date(self, kb_id: str, doc_id: str, day: int) -> int:
        """Every object of the document re-written with the new day (an upsert by uuid with
        its own properties and vector: Weaviate has no update-where)."""
        found = self._fetch_all(self._Filter.by_property("doc_key").equal(f"{kb_id}/{doc_id}"), include_vector=True)
        DataObject = self._wv.classes.data.DataObject
        objs = []
        for o in found:
            vec = o.vector.get("default") if isinstance(o.vector, dict) else o.vector
            objs.append(DataObject(properties={**o.properties, "doc_day": int(day)}, vector=vec or None,
                                   uuid=o.uuid))
        return self._upsert(objs, "date updates")

    def clear_vectors(self, kb_id: str, doc_id: str) -> int:
        """Every object of the document re-written without its vector (re-embedding with
        another model): BM25 and the keyword side of hybrid still find it."""
        found = self._fetch_all(self._Filter.by_property("doc_key").equal(f"{kb_id}/{doc_id}"))
        DataObject = self._wv.classes.data.DataObject
        return self._upsert([DataObject(properties=dict(o.properties), vector=None, uuid=o.uuid) for o in found],
                            "vector removals")

    def vector_dim(self) -> int:
        """Size of the stored vectors (0: none stored yet)."""
        objs = self._query(None, 50, include_vector=True)
        for o in objs:
            vec = o.vector.get("default") if isinstance(o.vector, dict) else o.vector
            if vec:
                return len(vec)
        return 0

    def reanalyse_document(self, kb_id: str, doc_id: str, language: str) -> int:
        """Every object of the document re-written with `language` and its keyword terms
        analysed in it (an upsert by uuid, vectors kept: the document stays searchable)."""
        found = self._fetch_all(self._Filter.by_property("doc_key").equal(f"{kb_id}/{doc_id}"), include_vector=True)
        DataObject = self._wv.classes.data.DataObject
        objs = []
        for o in found:
            ch = self._chunk(o)
            ch.language = language
            vec = o.vector.get("default") if isinstance(o.vector, dict) else o.vector
            props = {**o.properties, "language": language,
                     "content": " ".join(chunk_terms(ch, language))}
            objs.append(DataObject(properties=props, vector=vec or None, uuid=o.uuid))
        return self._upsert(objs, "language updates")

    def _upsert(self, objs: list, what: str) -> int:
        """Re-write whole objects by uuid, a page at a time (a batch cannot update part of an
        object); `what` names them in the error."""
        for start in range(0, len(objs), self.page_size):
            part = objs[start : start + self.page_size]
            res = self._write(lambda coll: coll.data.insert_many(part))
            if res.errors:
                first = next(iter(res.errors.values()))
                raise GroundworkError(f"Weaviate refused {len(res.errors)} {what}: {getattr(first, 'message', first)}")
        return len(objs)

    def _delete(self, where) -> int:
        """Delete everything matching `where`. One batch delete removes at most
        QUERY_MAXIMUM_RESULTS objects (10,000 by default), so it is repeated until nothing
        matches."""
        total = 0
        while True:
            res = self._write(lambda coll: coll.data.delete_many(where=where, verbose=True))
            if res.failed:
                first = next((o.error for o in res.objects or [] if o.error), "")
                raise GroundworkError(f"Weaviate failed to delete {res.failed} of {res.matches} chunks: {first}")
            total += int(res.successful)
            if not res.matches or not res.successful:
                return total

    def delete_document(self, kb_id: str, doc_id: str) -> int:
        return self._delete(self._Filter.by_property("doc_key").equal(f"{kb_id}/{doc_id}"))

    def delete_kb(self, kb_id: str) -> int:
        return self._delete(self._Filter.by_property("kb_id").equal(kb_id))

    # ---- filters ---------------------------------------------------------------------
    def _where(self, f: SearchFilters):
        F = self._Filter
        parts = []
        if f.kb_ids is not None:
            if not f.kb_ids:
                return F.by_property("kb_id").equal("\x00none")
            parts.append(F.by_property("kb_id").contains_any(list(f.kb_ids)))
        if f.tenant is not None:
            parts.append(F.by_property("tenant").equal(f.tenant))
        if f.doc_ids is not None:
            parts.append(F.by_property("doc_id").contains_any(list(f.doc_ids) or ["\x00none"]))
        for kb_id, doc_id in f.exclude_docs:  # drafts (few)
            parts.append(F.by_property("doc_key").not_equal(f"{kb_id}/{doc_id}"))
        days = f.day_range()
        if days is not None:
            parts.append(F.by_property("doc_day").greater_or_equal(days[0]))
            parts.append(F.by_property("doc_day").less_or_equal(days[1]))
        if not parts:
            return None
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out

    # ---- reads -----------------------------------------------------------------------
    @staticmethod
    def _chunk(o) -> Chunk:
        p = o.properties
        return Chunk(
            chunk_id=p["chunk_id"], doc_id=p["doc_id"], kb_id=p["kb_id"], text=p["text"], title=p.get("title") or "",
            section=p.get("section") or "", source=p.get("source") or "", chunk_type=p.get("chunk_type") or "paragraph",
            tenant=p.get("tenant") or None, acl_users=list(p.get("acl_users") or []),
            acl_groups=list(p.get("acl_groups") or []), language=p.get("language") or "",
            **{n: int(p.get(n) or 0) for n in _INTS},
        )

    def keyword_search(self, query: str, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        terms = " ".join(query_terms(query, filters.languages))
        if not terms or k <= 0:
            return []
        res = self._retry(lambda: self.coll.query.bm25(
            query=terms, query_properties=["content"], limit=k, filters=self._where(filters),
            return_metadata=self._Meta(score=True)))
        return [ScoredChunk(self._chunk(o), float(o.metadata.score), {"keyword": float(o.metadata.score)})
                for o in res.objects]

    def vector_search(self, vector: np.ndarray, k: int, filters: SearchFilters) -> list[ScoredChunk]:
        if k <= 0:
            return []
        res = self._retry(lambda: self.coll.query.near_vector(
            near_vector=np.asarray(vector, dtype=np.float32).tolist(), limit=k, filters=self._where(filters),
            return_metadata=self._Meta(distance=True)))
        out = []
        for o in res.objects:
            s = 1.0 - float(o.metadata.distance)  # cosine distance → cosine similarity
            out.append(ScoredChunk(self._chunk(o), s, {"vector": s}))
        return out

    def hybrid_search(self, query: str, vector: np.ndarray, k: int, filters: SearchFilters, *, alpha: float = 0.5,
                      fusion: str = "relative_score", overfetch: int = 4, timings: dict | None = None) -> list[ScoredChunk]:
        """Weaviate's own hybrid (its relative-score or ranked fusion). Each result also
        carries its raw BM25 (from explain_score) and the exact cosine (from its vector)."""
        if k <= 0:
            return []
        q = np.asarray(vector, dtype=np.float32)
        res = self._retry(lambda: self.coll.query.hybrid(
            query=" ".join(query_terms(query, filters.languages)) or query, vector=q.tolist(), alpha=alpha,
            fusion_type=self._Fusion.RANKED if fusion == "rrf" else self._Fusion.RELATIVE_SCORE,
            query_properties=["content"], filters=self._where(filters), limit=k, include_vector=True,
            return_metadata=self._Meta(score=True, explain_score=True),
        ))
        out = []
        for o in res.objects:
            vec = o.vector.get("default") if isinstance(o.vector, dict) else o.vector
            cos = float(np.dot(np.asarray(vec, dtype=np.float32), q)) if vec is not None else 0.0
            m = _EXPLAIN_KW.search(o.metadata.explain_score or "")
            kw = float(m.group(1)) if m else 0.0
            fused = float(o.metadata.score)
            out.append(ScoredChunk(self._chunk(o), fused, {"keyword": kw, "vector": cos, "fused": fused}))
        return out

    def _query(self, where, limit: int, include_vector: bool = False, sort=None, offset: int | None = None):
        return self._retry(lambda: self.coll.query.fetch_objects(
            filters=where, limit=limit, offset=offset, sort=sort, include_vector=include_vector)).objects

    def _fetch_ids(self, chunk_ids: list[str], include_vector: bool = False) -> list:
        """The objects of these chunk ids, `page_size` ids per request (a chunk id is one
        object, so a page of ids is at most a page of objects)."""
        ids = list(dict.fromkeys(chunk_ids))
        out = []
        for start in range(0, len(ids), self.page_size):
            part = ids[start : start + self.page_size]
            out += self._query(self._Filter.by_property("chunk_id").contains_any(part), len(part), include_vector)
        return out

    def _fetch_all(self, where, include_vector: bool = False) -> list:
        """Every object matching `where`, however many. Weaviate's cursor (`after`) cannot be
        combined with a filter and offsets stop at QUERY_MAXIMUM_RESULTS, so this pages by
        keyset on the integer `ordinal`: sorted by ordinal, then `ordinal > last` (integer
        sort and filter agree; text sort does not follow the filters' byte order). Objects
        that share the last ordinal of a full page (never within a chunker's document) are
        read by offset within that one ordinal."""
        F, P = self._Filter, self.page_size
        by_ord = self._Sort.by_property("ordinal")
        got: dict = {}
        after = None
        while True:
            cond = where if after is None else where & F.by_property("ordinal").greater_than(after)
            page = self._query(cond, P, include_vector, sort=by_ord)
            got.update((o.uuid, o) for o in page)
            if len(page) < P:
                return list(got.values())
            last = int(page[-1].properties.get("ordinal") or 0)
            offset = 0
            while True:  # the rest of `last`
                tie = self._query(where & F.by_property("ordinal").equal(last), P, include_vector, offset=offset)
                got.update((o.uuid, o) for o in tie)
                if len(tie) < P:
                    break
                offset += P
            after = last

    def get_chunks(self, chunk_ids: list[str]) -> list[Chunk]:
        if not chunk_ids:
            return []
        by_id = {c.chunk_id: c for c in map(self._chunk, self._fetch_ids(chunk_ids))}
        return [by_id[c] for c in chunk_ids if c in by_id]

    def document_chunks(self, kb_id: str, doc_id: str) -> list[Chunk]:
        objs = self._fetch_all(self._Filter.by_property("doc_key").equal(f"{kb_id}/{doc_id}"))
        return sorted(map(self._chunk, objs), key=lambda c: (c.ordinal, c.chunk_id))

    def vectors_for(self, chunk_ids: list[str]) -> np.ndarray:
        objs = self._fetch_ids(chunk_ids, include_vector=True) if chunk_ids else []
        vecs = {o.properties["chunk_id"]: (o.vector.get("default") if isinstance(o.vector, dict) else o.vector) for o in objs}
        dim = next((len(v) for v in vecs.values() if v), 0)
        out = np.zeros((len(chunk_ids), dim), dtype=np.float32)
        for i, c in enumerate(chunk_ids):
            if vecs.get(c):  # an object not embedded yet keeps a zero row
                out[i] = vecs[c]
        return out

    def idf(self, terms) -> dict[str, float]:
        """Not exposed by Weaviate: the reranker then weighs query terms equally."""
        return {}

    def count(self, kb_id: str | None = None) -> int:
        where = self._Filter.by_property("kb_id").equal(kb_id) if kb_id else None
        return int(self._retry(lambda: self.coll.aggregate.over_all(total_count=True, filters=where)).total_count)

    def health(self) -> dict:
        ready = self.client.is_ready()
        n = self.count() if ready else 0
        rep = self.client.collections.get(self.collection_name).config.get().replication_config
        # every object carries its self-provided vector and its BM25 terms
        return {"store": self.name, "ok": bool(ready), "chunks": n, "vectors": n, "keyword_rows": n,
                "version": self.client.get_meta().get("version"), "node": self._nodes[self._node][0],
                "replication_factor": rep.factor, "consistency": self.consistency,
                "write_consistency": self.write_consistency, "degraded_writes": self.degraded_writes}

    def close(self) -> None:
        self.client.close()
        self._pool.shutdown(wait=False, cancel_futures=True)


def _is_timeout(exc: Exception) -> bool:
    return type(exc).__name__ in {"WeaviateTimeoutError", "ReadTimeout", "TimeoutError"}


def _is_connection_error(exc: Exception) -> bool:
    """The node is unreachable or went away mid-call (not a bad query): worth one retry."""
    name = type(exc).__name__
    text = str(exc)
    return (name in {"WeaviateConnectionError", "WeaviateGRPCUnavailableError", "WeaviateClosedClientError",
                     "ConnectError", "ReadError", "RemoteProtocolError", "WeaviateStartUpError"}
            or "UNAVAILABLE" in text or "Connection refused" in text or "connection reset" in text.lower()
            or "Socket closed" in text or "failed to connect" in text.lower())


def _write_error(res):
    """The first error a batch write or delete reports, else None."""
    errors = getattr(res, "errors", None)
    if errors:
        return next(iter(errors.values()))
    if getattr(res, "failed", 0):
        return next((o.error for o in getattr(res, "objects", None) or [] if o.error), f"{res.failed} failed")
    return None


def _close_quietly(client) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - it is gone already
        pass
