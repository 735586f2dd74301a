"""In-memory search structures of the embedded store, loaded from a snapshot (or SQLite) on
open and kept in sync incrementally: one row position per chunk, shared by

- the vectors (`VectorIndex`: exact while small, HNSW segments as it grows),
- the keyword index: BM25 over term postings, a large segment (term-major CSC arrays, plus
  the row-major forward arrays a delete needs to update document frequencies) and a small
  delta segment for rows added since; the delta is merged when it passes 10% of the main
  segment, in O(postings) without a sort and without moving any row, so adds cost
  milliseconds and merges are amortised,
- per-row filter codes (knowledge base, tenant, document date; the ACL signature is kept but
  filters nothing: access is per knowledge base) and a tombstone mask.

Memory: a row costs ~30 bytes of row arrays; postings and forward entries 6 bytes each
(int32 position or term, uint16 tf); none of it is a Python object per row, and the large
arrays can be memory-mapped from a snapshot (rag_core/stores/snapshot.py). Dead rows keep
their position until a third of the rows are dead, then one compaction drops them — built
off the lock like a merge when a store maintains the index in the background (at 1M rows
it takes minutes, its graphs included; searches must not wait for it).

Scores are computed with the live statistics (N, df, avgdl over rows not deleted), so
BM25 after deletes equals BM25 of a fresh index. Query cost: Σ over query terms of their
posting-list length, plus O(n) numpy passes for the mask and top-k; no Python loop over rows.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

from .vector_index import VectorIndex

# Anserini's BEIR defaults (k1=0.9, b=0.4), taken as they are (not tuned here); keyword-only
# results with them: benchmarks/results/eval_beir.jsonl (`python -m rag_core eval beir --mode keyword`)
K1 = 0.9
B = 0.4
TF_MAX = 65535  # tf is stored as uint16; a term repeated more often in one chunk is capped

ROW_ARRAYS = ("row_ids", "alive", "has_vec", "kb", "tenant", "sig", "day", "dl")
KEYWORD_ARRAYS = ("term_ptr", "post_pos", "post_tf", "fwd_ptr", "fwd_term", "fwd_tf", "df")


def encode_terms(term_ids: list[int], tfs: list[int]) -> bytes:
    return np.asarray(list(term_ids) + list(tfs), dtype=np.int32).tobytes()


def decode_terms(blob: bytes) -> tuple[np.ndarray, np.ndarray]:
    arr = np.frombuffer(blob, dtype=np.int32)
    half = len(arr) // 2
    return arr[:half], arr[half:]


def _tf16(tfs) -> np.ndarray:
    return np.minimum(np.asarray(tfs), TF_MAX).astype(np.uint16)


class MemIndex:
    inline_merge_factor = 3
    compact_min_dead = 1000  # below this many dead rows a compaction is not worth its rebuild

    def __init__(self, k1: float = K1, b: float = B) -> None:
        self.k1, self.b = k1, b
        self.n = 0  # positions used (alive + dead)
        self.row_ids = np.zeros(0, dtype=np.int64)  # ascending: rows arrive in id order
        self.alive = np.zeros(0, dtype=bool)
        self.has_vec = np.zeros(0, dtype=bool)  # False: keyword-searchable, vector not embedded yet
        self.kb = np.zeros(0, dtype=np.int32)
        self.tenant = np.zeros(0, dtype=np.int32)
        self.sig = np.zeros(0, dtype=np.int32)
        self.day = np.zeros(0, dtype=np.int32)  # the document's date (models.iso_to_day; 0 unknown)
        self.dl = np.zeros(0, dtype=np.float32)
        self.codes: dict[str | None, int] = {None: 0}
        self.max_row = 0
        self.last_tomb = 0
        self.last_vec = 0  # last vector_updates seq applied
        self.dead = 0
        self.vecs = VectorIndex()
        # keyword statistics over alive rows
        self.df = np.zeros(1024, dtype=np.int32)
        self.alive_count = 0
        self.total_dl = 0.0
        # main segment: positions [0, main_n), term-major postings and row-major terms
        self.main_n = 0
        self.term_ptr = np.zeros(1, dtype=np.int64)
        self.post_pos = np.zeros(0, dtype=np.int32)
        self.post_tf = np.zeros(0, dtype=np.uint16)
        self.fwd_ptr = np.zeros(1, dtype=np.int64)
        self.fwd_term = np.zeros(0, dtype=np.int32)
        self.fwd_tf = np.zeros(0, dtype=np.uint16)
        # delta segment: positions [main_n, n)
        self.delta_rows: list[tuple[np.ndarray, np.ndarray]] = []
        self.delta: dict[int, tuple[list[int], list[int]]] = {}
        self.delta_entries = 0
        self.layout = 0  # bumped by every merge and compaction: a merge planned before is void
        self.compactions = 0
        # True when a store's maintenance thread compacts (off the lock); a bare index
        # compacts inline, in kill()
        self.background = False
        self._touched: list[np.ndarray] | None = None  # positions given vectors while a compaction is built

    @property
    def merge_wanted(self) -> bool:
        return self.delta_entries > self.merge_threshold()

    @property
    def compact_wanted(self) -> bool:
        # a third tombstones: deletes never make search slower for long
        return self.dead > self.compact_min_dead and self.dead * 3 > self.n

    @property
    def dim(self) -> int:
        return self.vecs.dim

    # ---- helpers ---------------------------------------------------------------------
    def code(self, value: str | None) -> int:
        c = self.codes.get(value)
        if c is None:
            c = self.codes[value] = len(self.codes)
        return c

    def positions(self, row_ids) -> np.ndarray:
        """Positions of these row ids, -1 where the row is not here (never was, or compacted)."""
        rids = np.asarray(row_ids, dtype=np.int64)
        ids = self.row_ids[: self.n]
        p = np.searchsorted(ids, rids)
        found = p < self.n
        found[found] = ids[p[found]] == rids[found]
        return np.where(found, p, -1)

    def position(self, row_id: int) -> int | None:
        p = int(self.positions([row_id])[0])
        return p if p >= 0 and self.alive[p] else None

    def terms_of(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        if p < self.main_n:
            a, b = self.fwd_ptr[p], self.fwd_ptr[p + 1]
            return self.fwd_term[a:b], self.fwd_tf[a:b]
        return self.delta_rows[p - self.main_n]

    def _grow(self, need: int) -> None:
        cap = len(self.row_ids)
        if need <= cap:
            return
        new_cap = max(need, cap * 2, 1024)
        for name in ROW_ARRAYS:
            old = getattr(self, name)
            arr = np.zeros(new_cap, dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)

    def _ensure_df(self, max_term: int) -> None:
        if max_term >= len(self.df):
            df = np.zeros(max(max_term + 1, len(self.df) * 2), dtype=np.int32)
            df[: len(self.df)] = self.df
            self.df = df

    def _set_dim(self, dim: int) -> None:
        """The vector size is known from the first vector seen (keyword-only rows come first
        when a document is searchable before it is embedded)."""
        self.vecs.set_dim(dim)

    # ---- writes ----------------------------------------------------------------------
    def append(self, rows: list[tuple]) -> None:
        """rows: (row_id, kb_id, tenant, acl_sig, vector bytes, terms blob, doc day)."""
        if not rows:
            return
        self._set_dim(next((len(r[4]) // 4 for r in rows if r[4]), 0))
        self._grow(self.n + len(rows))
        start = self.n
        s = slice(start, start + len(rows))
        # an empty blob: the vector comes later (set_vectors)
        self.vecs.append([np.frombuffer(r[4], dtype=np.float32) if r[4] else None for r in rows])
        self.has_vec[s] = [bool(r[4]) for r in rows]
        self.row_ids[s] = [r[0] for r in rows]
        self.kb[s] = [self.code(r[1]) for r in rows]
        self.tenant[s] = [self.code(r[2]) for r in rows]
        self.sig[s] = [r[3] for r in rows]
        self.day[s] = [r[6] if len(r) > 6 else 0 for r in rows]
        self.alive[s] = True
        for i, r in enumerate(rows):
            p = start + i
            ids, tfs = decode_terms(r[5])
            tfs = _tf16(tfs)
            self.delta_rows.append((ids, tfs))
            dl = float(tfs.sum(dtype=np.int64))
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
        # The maintenance thread merges past one threshold, off the lock; inline only when
        # it has fallen three behind (a delta that large slows every keyword query).
        if self.delta_entries > self.inline_merge_factor * self.merge_threshold() and self._touched is None:
            self.merge()  # (not while a compaction is being built: its plan would go stale)

    def bulk_load(self, batches) -> None:
        """Cold start into an empty index from batches of rows (as `append` takes them):
        arrays built in bulk, straight into the main segment (the per-row delta path costs
        ~10x more); vectors stream into the vector index batch by batch."""
        assert self.n == 0
        terms, tfs, lens = [], [], []
        for rows in batches:
            if not rows:
                continue
            m = len(rows)
            self._set_dim(next((len(r[4]) // 4 for r in rows if r[4]), 0))
            self._grow(self.n + m)
            s = slice(self.n, self.n + m)
            has = np.fromiter((bool(r[4]) for r in rows), dtype=bool, count=m)
            self.has_vec[s] = has
            if self.dim:
                zero = bytes(4 * self.dim)
                block = np.frombuffer(b"".join(r[4] or zero for r in rows), dtype=np.float32).reshape(m, self.dim)
                self.vecs.append_block(block)
            else:
                self.vecs.append([None] * m)
            self.row_ids[s] = np.fromiter((r[0] for r in rows), dtype=np.int64, count=m)
            self.kb[s] = np.fromiter((self.code(r[1]) for r in rows), dtype=np.int32, count=m)
            self.tenant[s] = np.fromiter((self.code(r[2]) for r in rows), dtype=np.int32, count=m)
            self.sig[s] = np.fromiter((r[3] for r in rows), dtype=np.int32, count=m)
            self.day[s] = np.fromiter((r[6] if len(r) > 6 else 0 for r in rows), dtype=np.int32, count=m)
            self.alive[s] = True
            decoded = [decode_terms(r[5]) for r in rows]
            lens.append(np.fromiter((len(d[0]) for d in decoded), dtype=np.int64, count=m))
            if lens[-1].sum():
                terms.append(np.concatenate([d[0] for d in decoded]))
                tfs.append(_tf16(np.concatenate([d[1] for d in decoded])))
            self.n += m
            self.max_row = int(self.row_ids[self.n - 1])
        if not self.n:
            return
        lens_all = np.concatenate(lens)
        self.fwd_ptr = np.concatenate([[0], np.cumsum(lens_all)]).astype(np.int64)
        self.fwd_term = np.concatenate(terms) if terms else np.zeros(0, dtype=np.int32)
        self.fwd_tf = np.concatenate(tfs) if tfs else np.zeros(0, dtype=np.uint16)
        row_of = np.repeat(np.arange(self.n, dtype=np.int32), lens_all)
        self.dl[: self.n] = np.bincount(row_of, weights=self.fwd_tf, minlength=self.n).astype(np.float32)
        self.total_dl = float(self.dl[: self.n].sum(dtype=np.float64))
        if len(self.fwd_term):
            self._ensure_df(int(self.fwd_term.max()))
            counts = np.bincount(self.fwd_term, minlength=len(self.df))
            self.df[: len(counts)] += counts.astype(np.int32)
            order = np.argsort(self.fwd_term, kind="stable")
            self.post_pos = row_of[order]
            self.post_tf = self.fwd_tf[order]
            del order
            self.term_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.alive_count = self.n
        self.main_n = self.n

    def set_vectors(self, row_ids: list[int], vectors: np.ndarray) -> None:
        if not len(row_ids):
            return
        self._set_dim(vectors.shape[1])
        pos = self.positions(row_ids)
        ok = pos >= 0
        self.vecs.set(pos[ok].tolist(), np.asarray(vectors)[ok])
        self.has_vec[pos[ok]] = True
        if self._touched is not None:
            self._touched.append(pos[ok])

    def clear_vectors(self, row_ids: list[int]) -> None:
        """These rows leave vector search (their vectors are being recomputed by another
        model); keyword search keeps them."""
        pos = self.positions(row_ids)
        self.has_vec[pos[pos >= 0]] = False

    def set_days(self, row_ids: list[int], days: list[int]) -> None:
        pos = self.positions(row_ids)
        ok = pos >= 0
        self.day[pos[ok]] = np.asarray(days, dtype=np.int32)[ok]

    def kill(self, row_ids: list[int]) -> None:
        """Tombstone these rows and take them out of the keyword statistics. Vectorised over
        the main segment (a 10k-row delete at 1M rows held the write lock 725 ms as a Python
        loop over rows); the delta's few rows are looped."""
        pos = self.positions(row_ids)
        pos = np.unique(pos[pos >= 0])
        pos = pos[self.alive[pos]]
        if not len(pos):
            return
        self.alive[pos] = False
        self.dead += len(pos)
        self.alive_count -= len(pos)
        self.total_dl -= float(self.dl[pos].sum(dtype=np.float64))
        main = pos[pos < self.main_n]
        if len(main):
            starts, ends = self.fwd_ptr[main], self.fwd_ptr[main + 1]
            lens = ends - starts
            total = int(lens.sum())
            if total:
                idx = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(total)
                counts = np.bincount(np.asarray(self.fwd_term)[idx], minlength=len(self.df))
                self.df -= counts[: len(self.df)].astype(np.int32)
        for p in pos[pos >= self.main_n].tolist():
            ids, _ = self.delta_rows[p - self.main_n]
            if len(ids):
                self.df[ids] -= 1
        if self.compact_wanted and not self.background:
            self.compact()

    def merge_threshold(self) -> int:
        return max(200_000, len(self.post_pos) // 10)

    def merge(self) -> None:
        """Fold the delta into the main segment, here and now (tests, close, and a delta
        that outgrew three thresholds because the maintenance thread fell behind)."""
        if self.main_n == self.n:
            return
        self.install_merge(self.merge_plan(), self.build_merge(self.merge_plan()))

    def merge_plan(self) -> dict:
        """What a merge reads, taken under the read lock: the main arrays (replaced on every
        merge, never changed in place) and the delta rows so far."""
        return {"layout": self.layout, "main_n": self.main_n, "upto": self.n, "T": len(self.df),
                "rows": self.delta_rows[: self.n - self.main_n],
                **{name: getattr(self, name) for name in ("term_ptr", "post_pos", "post_tf", "fwd_ptr", "fwd_term", "fwd_tf")}}

    @staticmethod
    def build_merge(plan: dict) -> dict:
        """The merged main segment, computed without any lock: rows keep their positions (the
        vector segments are keyed by them); each delta posting is inserted at the end of its
        term's run, O(postings) plus a sort of the delta alone."""
        rows, T = plan["rows"], plan["T"]
        term_ptr, post_pos, post_tf = plan["term_ptr"], np.asarray(plan["post_pos"]), np.asarray(plan["post_tf"])
        r_lens = np.fromiter((len(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        main_counts = np.zeros(T, dtype=np.int64)
        old = np.diff(term_ptr)
        main_counts[: len(old)] = old
        out = {}
        if r_lens.sum():
            d_terms = np.concatenate([r[0] for r in rows]).astype(np.int64)
            d_tf = np.concatenate([r[1] for r in rows]).astype(np.uint16)
            d_pos = np.repeat(np.arange(plan["main_n"], plan["upto"], dtype=np.int32), r_lens)
            order = np.argsort(d_terms, kind="stable")  # by term, positions ascending within one
            d_terms, d_tf, d_pos = d_terms[order], d_tf[order], d_pos[order]
            # the end of each term's run in the old postings (new terms: the very end)
            ends = np.full(len(d_terms), len(post_pos), dtype=np.int64)
            known = d_terms + 1 < len(term_ptr)
            ends[known] = term_ptr[d_terms[known] + 1]
            out["post_pos"] = np.insert(post_pos, ends, d_pos)
            out["post_tf"] = np.insert(post_tf, ends, d_tf)
            main_counts += np.bincount(d_terms, minlength=T)[:T]
            out["fwd_term"] = np.concatenate([np.asarray(plan["fwd_term"])] + [r[0] for r in rows]).astype(np.int32)
            out["fwd_tf"] = np.concatenate([np.asarray(plan["fwd_tf"])] + [r[1] for r in rows]).astype(np.uint16)
        out["term_ptr"] = np.concatenate([[0], np.cumsum(main_counts)]).astype(np.int64)
        fwd_ptr = plan["fwd_ptr"]
        out["fwd_ptr"] = np.concatenate([np.asarray(fwd_ptr), fwd_ptr[-1] + np.cumsum(r_lens)]).astype(np.int64)
        return out

    def install_merge(self, plan: dict, built: dict) -> bool:
        """Swap the merged segment in (under the write lock). Rows added while it was built
        stay in the delta; False when a compaction renumbered the rows meanwhile."""
        if plan["layout"] != self.layout or plan["main_n"] != self.main_n:
            return False
        for name, arr in built.items():
            setattr(self, name, arr)
        upto = plan["upto"]
        self.delta_rows = self.delta_rows[upto - self.main_n :]
        self.main_n = upto
        # Drop the merged rows from the delta postings: each term's positions ascend, so one
        # bisection per term (not a loop over postings) — this runs under the write lock.
        for t, (ps, tfs) in list(self.delta.items()):
            i = bisect.bisect_left(ps, upto)
            if i == len(ps):
                del self.delta[t]
            elif i:
                self.delta[t] = (ps[i:], tfs[i:])
        self.delta_entries = sum(len(r[0]) for r in self.delta_rows)
        self.layout += 1
        return True

    def compact(self) -> None:
        """Drop dead rows here and now (tests, and an index no store maintains)."""
        self.install_compaction(plan := self.compaction_plan(), self.build_compaction(plan))

    def compaction_plan(self) -> dict:
        """What a compaction reads, taken under the read lock: a merge's plan, which rows are
        alive now, and a view of the vectors. Vectors set from here on are noted, so the
        install can carry them over."""
        plan = self.merge_plan()
        plan["alive"] = self.alive[: self.n].copy()
        plan["vecs"] = self.vecs.compaction_view()
        self._touched = []
        return plan

    def abandon_compaction(self) -> None:
        """The planned compaction will not be installed (its build failed or was cancelled):
        stop noting vectors for it, and let inline merges run again."""
        self._touched = None

    @staticmethod
    def build_compaction(plan: dict, cancelled=None) -> dict:
        """The compacted main segment over the plan's rows, computed without any lock: the
        delta merged in, dead rows' postings and forward entries dropped in place order
        (O(postings)), positions renumbered, vectors resealed."""
        merged = {name: plan[name] for name in ("post_pos", "post_tf", "fwd_term", "fwd_tf")} | MemIndex.build_merge(plan)
        alive = plan["alive"]
        keep = np.flatnonzero(alive)
        newpos = np.full(len(alive), -1, dtype=np.int64)
        newpos[keep] = np.arange(len(keep))
        post_pos, post_tf = np.asarray(merged["post_pos"]), np.asarray(merged["post_tf"])
        fwd_term, fwd_tf = np.asarray(merged["fwd_term"]), np.asarray(merged["fwd_tf"])
        # Kept postings by index, and each term boundary's count of kept postings before it
        # by bisection. (A cumulative sum over the 63M-entry mask at 1M rows held the GIL
        # for 1.4 s — and with it any thread inside the write lock — and took 3 s.)
        sel = np.flatnonzero(alive[post_pos])
        lens = np.diff(merged["fwd_ptr"])
        entry_keep = np.repeat(alive, lens)
        return {
            "keep": keep,
            "term_ptr": np.searchsorted(sel, merged["term_ptr"]).astype(np.int64),
            "post_pos": newpos[post_pos[sel]].astype(np.int32),
            "post_tf": post_tf[sel],
            "fwd_term": fwd_term[entry_keep],
            "fwd_tf": fwd_tf[entry_keep],
            "fwd_ptr": np.concatenate([[0], np.cumsum(lens[keep])]).astype(np.int64),
            "segments": VectorIndex.build_compacted(plan["vecs"], keep, cancelled),
        }

    def install_compaction(self, plan: dict, built: dict) -> bool:
        """Swap the compacted layout in (under the write lock; O(rows) numpy gathers, no
        postings work). What happened since the plan carries over: rows appended stay in the
        delta (renumbered), deletes stay dead (their statistics were applied when they came),
        dates and vector flags are read now, vectors set meanwhile are re-read. False when a
        merge or another compaction changed the layout meanwhile."""
        touched = self._touched
        self.abandon_compaction()
        if plan["layout"] != self.layout:
            return False
        upto, keep = plan["upto"], built["keep"]
        take = np.concatenate([keep, np.arange(upto, self.n, dtype=np.int64)])
        for name in ROW_ARRAYS:
            setattr(self, name, getattr(self, name)[take].copy())
        for name in ("term_ptr", "post_pos", "post_tf", "fwd_ptr", "fwd_term", "fwd_tf"):
            setattr(self, name, built[name])
        shift = upto - len(keep)
        self.delta_rows = self.delta_rows[upto - self.main_n :]
        for t, (ps, tfs) in list(self.delta.items()):
            i = bisect.bisect_left(ps, upto)
            if i == len(ps):
                del self.delta[t]
            else:
                self.delta[t] = ([p - shift for p in ps[i:]], tfs[i:])
        self.delta_entries = sum(len(r[0]) for r in self.delta_rows)
        segments = built["segments"]
        sealed = sum(s.size for s in segments)
        late = None
        if touched and upto:
            old = np.unique(np.concatenate(touched))
            old = old[(old < upto) & plan["alive"][np.minimum(old, upto - 1)]]
            new = np.searchsorted(keep, old)
            inside = new < sealed  # rows in the tail are re-read with it
            late = (old[inside], new[inside])
        self.vecs.install_compacted(segments, take[sealed:], late)
        self.n = len(take)
        self.main_n = len(keep)
        self.dead = int(np.count_nonzero(~self.alive[: self.n]))
        self.layout += 1
        self.compactions += 1
        return True

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
            parts_tf.append(np.asarray(d[1], dtype=np.uint16))
        if not parts_p:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        if len(parts_p) == 1:
            return parts_p[0], parts_tf[0].astype(np.float32)
        return np.concatenate(parts_p), np.concatenate(parts_tf).astype(np.float32)

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
