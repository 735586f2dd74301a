"""In-memory search structures of the embedded store, rebuilt from SQLite on open and kept in
sync incrementally: one row position per chunk, shared by

- the vector index: a growable float32 matrix (exact cosine by one mat-vec),
- the keyword index: BM25 over term postings, a large immutable segment (term-major CSC
  arrays, built with one argsort) plus a small delta segment for rows added since; the
  delta is merged when it passes 10% of the main segment, so adds cost milliseconds and
  merges are amortised,
- per-row filter codes (knowledge base, tenant; the ACL signature is kept but filters
  nothing: access is per knowledge base) and a tombstone mask.

Scores are computed with the live statistics (N, df, avgdl over rows not deleted), so
BM25 after deletes equals BM25 of a fresh index. Query cost: Σ over query terms of their
posting-list length, plus O(n) numpy passes for the mask and top-k; no Python loop over rows.
"""

from __future__ import annotations

import math

import numpy as np

# Anserini's BEIR defaults (k1=0.9, b=0.4), taken as they are (not tuned here); keyword-only
# results with them: benchmarks/results/eval_beir.jsonl (`python -m rag_core eval beir --mode keyword`)
K1 = 0.9
B = 0.4


def encode_terms(term_ids: list[int], tfs: list[int]) -> bytes:
    return np.asarray(list(term_ids) + list(tfs), dtype=np.int32).tobytes()


def decode_terms(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    arr = np.frombuffer(blob, dtype=np.int32)
    half = len(arr) // 2
    return arr[:half], arr[half:]


class MemIndex:
    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.dim = 0
        self.n = 0  # positions used (alive + dead)
        cap = 0
        self.mat = np.zeros((cap, 0), dtype=np.float32)
        self.row_ids = np.zeros(cap, dtype=np.int64)
        self.alive = np.zeros(cap, dtype=bool)
        self.has_vec = np.zeros(cap, dtype=bool)  # False: keyword-searchable, vector not embedded yet
        self.kb = np.zeros(cap, dtype=np.int32)
        self.tenant = np.zeros(cap, dtype=np.int32)
        self.sig = np.zeros(cap, dtype=np.int32)
        self.day = np.zeros(cap, dtype=np.int32)  # the document's date (models.iso_to_day; 0 unknown)
        self.dl = np.zeros(cap, dtype=np.float32)
        self.pos: dict[int, int] = {}
        self.codes: dict[str | None, int] = {None: 0}
        self.max_row = 0
        self.last_tomb = 0
        self.last_vec = 0  # last vector_updates seq applied
        self.dead = 0
        # keyword statistics over alive rows
        self.df = np.zeros(1024, dtype=np.int32)
        self.alive_count = 0
        self.total_dl = 0.0
        # per-row terms (needed to update df on delete and to rebuild segments)
        self.row_terms: list[tuple[np.ndarray, np.ndarray] | None] = []
        # main segment: positions [0, main_n)
        self.main_n = 0
        self.term_ptr = np.zeros(1, dtype=np.int64)
        self.post_pos = np.zeros(0, dtype=np.int32)
        self.post_tf = np.zeros(0, dtype=np.float32)
        # delta segment: term id -> (positions, tfs) lists
        self.delta: dict[int, tuple[list[int], list[int]]] = {}
        self.delta_entries = 0

    # ---- helpers ---------------------------------------------------------------------
    def code(self, value: str | None) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def _grow(self, need: int) -> None:
        cap = len(self.row_ids)
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 1024)
        for name in ("row_ids", "alive", "has_vec", "kb", "tenant", "sig", "day", "dl"):
            old = getattr(self, name)
            arr = np.zeros(new_cap, dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)
        mat = np.zeros((new_cap, self.dim), dtype=np.float32)
        mat[: self.n] = self.mat[: self.n]
        self.mat = mat

    def _ensure_df(self, max_term: int) -> None:
        if max_term >= len(self.df):
            df = np.zeros(max(max_term + 1, len(self.df) * 2), dtype=np.int32)
            df[: len(self.df)] = self.df
            self.df = df

    # ---- writes ----------------------------------------------------------------------
    def append(self, rows: list[tuple]) -> None:
        """rows: (row_id, kb_id, tenant, acl_sig, vector bytes, terms blob, doc day)."""
        if not rows:
            return
        self._set_dim(next((len(r[4]) // 4 for r in rows if r[4]), 0))
        self._grow(self.n + len(rows))
        start = self.n
        s = slice(start, start + len(rows))
        for i, r in enumerate(rows):  # an empty blob: the vector comes later (set_vectors)
            if r[4]:
                self.mat[start + i] = np.frombuffer(r[4], dtype=np.float32)
        self.has_vec[s] = [bool(r[4]) for r in rows]
        self.row_ids[s] = [r[0] for r in rows]
        self.kb[s] = [self.code(r[1]) for r in rows]
        self.tenant[s] = [self.code(r[2]) for r in rows]
        self.sig[s] = [r[3] for r in rows]
        self.day[s] = [r[6] if len(r) > 6 else 0 for r in rows]
        self.alive[s] = True
        for i, r in enumerate(rows):
            p = start + i
            self.pos[r[0]] = p
            ids, tfs = decode_terms(r[5])
            self.row_terms.append((ids, tfs))
            dl = float(tfs.sum())
            self.dl[p] = dl
            self.total_dl += dl
            if len(ids):
                self._ensure_df(int(ids.max()))
                self.df[ids] += 1
                for t, tf in zip(ids.tolist(), tfs.tolist()):
                    entry = self.delta.get(t)
                    if entry is None:
                        entry = self.delta[t] = ([], [])
                    entry[0].append(p)
                    entry[1].append(tf)
                self.delta_entries += len(ids)
        self.n += len(rows)
        self.alive_count += len(rows)
        self.max_row = max(self.max_row, rows[-1][0])
        if self.delta_entries > max(200_000, len(self.post_pos) // 10):
            self.rebuild()

    def bulk_load(self, rows: list[tuple]) -> None:
        """Cold start into an empty index: arrays built in bulk, straight into the main
        segment (the per-row delta path costs ~10x more)."""
        assert self.n == 0
        if not rows:
            return
        n = len(rows)
        self.dim = next((len(r[4]) // 4 for r in rows if r[4]), 0)
        self.has_vec = np.fromiter((bool(r[4]) for r in rows), dtype=bool, count=n)
        zero = bytes(4 * self.dim)
        self.mat = np.frombuffer(b"".join(r[4] or zero for r in rows), dtype=np.float32).reshape(n, self.dim).copy()
        self.row_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        self.kb = np.fromiter((self.code(r[1]) for r in rows), dtype=np.int32, count=n)
        self.tenant = np.fromiter((self.code(r[2]) for r in rows), dtype=np.int32, count=n)
        self.sig = np.fromiter((r[3] for r in rows), dtype=np.int32, count=n)
        self.day = np.fromiter((r[6] if len(r) > 6 else 0 for r in rows), dtype=np.int32, count=n)
        self.alive = np.ones(n, dtype=bool)
        self.row_terms = [decode_terms(r[5]) for r in rows]
        self.dl = np.fromiter((t[1].sum() for t in self.row_terms), dtype=np.float32, count=n)
        self.total_dl = float(self.dl.sum(dtype=np.float64))
        all_terms = np.concatenate([t[0] for t in self.row_terms]) if n else np.zeros(0, dtype=np.int32)
        if len(all_terms):
            self._ensure_df(int(all_terms.max()))
            self.df[: int(all_terms.max()) + 1] += np.bincount(all_terms).astype(np.int32)
        self.pos = {int(r): i for i, r in enumerate(self.row_ids)}
        self.n = self.alive_count = n
        self.max_row = int(self.row_ids.max())
        self.rebuild()

    def _set_dim(self, dim: int) -> None:
        """The vector size is known from the first vector seen (keyword-only rows come first
        when a document is searchable before it is embedded)."""
        if dim and not self.dim:
            self.dim = dim
            self.mat = np.zeros((len(self.row_ids), dim), dtype=np.float32)

    def set_vectors(self, row_ids: list[int], vectors: np.ndarray) -> None:
        if not len(row_ids):
            return
        self._set_dim(vectors.shape[1])
        for rid, vec in zip(row_ids, vectors):
            p = self.pos.get(rid)
            if p is not None:
                self.mat[p] = vec
                self.has_vec[p] = True

    def set_days(self, row_ids: list[int], days: list[int]) -> None:
        for rid, d in zip(row_ids, days):
            p = self.pos.get(rid)
            if p is not None:
                self.day[p] = d

    def kill(self, row_ids: list[int]) -> None:
        for rid in row_ids:
            p = self.pos.pop(rid, None)
            if p is None or not self.alive[p]:
                continue
            self.alive[p] = False
            self.dead += 1
            self.alive_count -= 1
            self.total_dl -= float(self.dl[p])
            terms = self.row_terms[p]
            if terms is not None and len(terms[0]):
                self.df[terms[0]] -= 1
            self.row_terms[p] = None
        # Compact when a third is tombstones, so deletes never make search slower for long.
        if self.dead > 1000 and self.dead * 3 > self.n:
            self.rebuild()

    def rebuild(self) -> None:
        """Drop tombstones and merge the delta into one term-major segment."""
        keep = np.flatnonzero(self.alive[: self.n])
        for name in ("row_ids", "alive", "has_vec", "kb", "tenant", "sig", "day", "dl"):
            setattr(self, name, getattr(self, name)[keep].copy())
        self.mat = self.mat[keep].copy() if self.dim else self.mat
        self.row_terms = [self.row_terms[i] for i in keep.tolist()]
        self.n = len(keep)
        self.pos = {int(r): i for i, r in enumerate(self.row_ids[: self.n])}
        self.dead = 0
        lens = np.fromiter((len(t[0]) for t in self.row_terms), dtype=np.int64, count=self.n)
        if lens.sum():
            terms = np.concatenate([t[0] for t in self.row_terms])
            tfs = np.concatenate([t[1] for t in self.row_terms]).astype(np.float32)
            positions = np.repeat(np.arange(self.n, dtype=np.int32), lens)
            order = np.argsort(terms, kind="stable")
            terms, self.post_tf, self.post_pos = terms[order], tfs[order], positions[order]
            self.term_ptr = np.zeros(len(self.df) + 1, dtype=np.int64)
            np.add.at(self.term_ptr, terms.astype(np.int64) + 1, 1)
            self.term_ptr = np.cumsum(self.term_ptr)
        else:
            self.term_ptr = np.zeros(len(self.df) + 1, dtype=np.int64)
            self.post_pos = np.zeros(0, dtype=np.int32)
            self.post_tf = np.zeros(0, dtype=np.float32)
        self.main_n = self.n
        self.delta = {}
        self.delta_entries = 0

    # ---- reads -----------------------------------------------------------------------
    def postings(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        parts_p, parts_tf = [], []
        if t + 1 < len(self.term_ptr):
            a, b = self.term_ptr[t], self.term_ptr[t + 1]
            if b > a:
                parts_p.append(self.post_pos[a:b])
                parts_tf.append(self.post_tf[a:b])
        d = self.delta.get(t)
        if d:
            parts_p.append(np.asarray(d[0], dtype=np.int32))
            parts_tf.append(np.asarray(d[1], dtype=np.float32))
        if not parts_p:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        if len(parts_p) == 1:
            return parts_p[0], parts_tf[0]
        return np.concatenate(parts_p), np.concatenate(parts_tf)

    def bm25(self, term_ids: list[int]) -> np.ndarray:
        """BM25 score of every position for a query (dead rows may score; callers mask)."""
        scores = np.zeros(self.n, dtype=np.float32)
        if self.alive_count == 0:
            return scores
        N = self.alive_count
        avgdl = max(self.total_dl / N, 1e-9)
        for t in term_ids:
            if t >= len(self.df) or self.df[t] <= 0:
                continue
            df = int(self.df[t])
            idf = math.log(1.0 + (N - df + 0.5) / (df + 0.5))
            pos, tf = self.postings(t)
            norm = self.k1 * (1.0 - self.b + self.b * self.dl[pos] / avgdl)
            # positions within one term's postings are unique, so fancy-index += is exact
            scores[pos] += idf * tf * (self.k1 + 1.0) / (tf + norm)
        return scores
