"""The embedded store's vectors: exact while small, approximate (HNSW) segments as it grows.

Positions are the row positions of `MemIndex`. Three parts:

- the *tail*, the newest rows, fp32 in memory and searched exactly by one mat-vec. Below
  `SEAL_ROWS` rows this is the whole collection: exact search is what a small knowledge base
  gets. The crossover (benchmarks/ann_crossover.py, 2 cores): at 10k rows exact takes 0.12 ms
  and a graph 0.21 ms, at 20k 0.26 against 0.21, at 160k 4.6 against 0.33 — and exact needs
  no build and has no recall loss;
- *segments*, immutable runs of positions sealed from the tail: fp16 vectors (memory-mapped
  once persisted) and a faiss HNSW graph over 8-bit scalar-quantised codes. A segment is
  sealed cheaply under the store's write lock and searched exactly (fp32 copy) until its
  graph is built — outside the lock, so searches never wait for a graph (`next_job` /
  `install`). Segments of one size merge eight at a time into one of the next size
  (20k → 160k → 1.28M), so each vector is inserted into a graph about log8(n/20k) times and a
  query visits O(log n) graphs;
- *patches*: vectors that arrived after their row was sealed (a document searchable by
  keyword first), searched exactly.

Why faiss-cpu: its HNSW takes a filter bitmap (`IDSelectorBitmap`), so a knowledge-base,
date or access filter is applied inside the graph walk instead of by over-fetching with an
unknowable bound; indexes are written and reopened with their codes memory-mapped
(`IO_FLAG_MMAP_IFC`); SQ8 codes are a quarter of fp32; the wheel is self-contained (BLAS
inside). hnswlib cannot map an index from disk and filters through a Python callback per
visited node, as does usearch's Python API. Build and query costs by size:
benchmarks/ann_crossover.py (results/ann_crossover.json).

Filters: a segment where the filter keeps few rows (≤ `EXACT_FILTERED` or under 5%) is
scanned exactly over just those rows — a graph walk would have to step over ~20× more
excluded nodes than it returns and loses recall; otherwise the graph is walked with the
bitmap and a wider beam. Candidates from every part are rescored with the stored fp16
vectors, so returned scores are exact to fp16 rounding whichever path found them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

SEAL_ROWS = 20_000  # tail size at which rows are sealed into a segment
MERGE_FACTOR = 8  # segments of one level merged into one of the next
# A filtered segment is scanned exactly when the filter keeps at most this many rows (or under
# 5%): fp16 rows gathered and widened cost ~0.75 µs each, 5,000 about 4 ms.
EXACT_FILTERED = 5_000
HNSW_M = 32
# Graph quality against query cost, chosen on 200 real questions disjoint from the ones
# benchmarks/scale.py reports on, over a 160k-row segment of its data: efConstruction 100
# reached recall@10 0.97 at efSearch 128 and 0.99 at 256; 200 gives 0.980 at 128 and 0.995
# at 256 (0.5 ms a graph), for twice the build time, which runs off the request path.
EF_CONSTRUCTION = 200
EF_SEARCH = 256
CANDIDATES = 100  # per graph, before exact rescoring
BUILD_THREADS = 1  # OpenMP threads of a graph build (build_graph says why)


def _faiss():
    try:
        import faiss  # noqa: PLC0415 - heavy, only needed past SEAL_ROWS
    except ImportError as exc:  # pragma: no cover - faiss-cpu is in requirements.txt
        raise RuntimeError(
            "faiss-cpu is needed for knowledge bases over 20,000 chunks: pip install -r requirements.txt"
        ) from exc
    return faiss


def build_graph(vec16: np.ndarray):
    """An HNSW graph over SQ8 codes of these vectors (labels 0..len-1). Pure: safe to run
    while searches use the segments it will replace."""
    faiss = _faiss()
    # One OpenMP thread, for the calling thread only (the setting is per thread): graphs are
    # built in the background while people search, and on two cores a build on both left
    # searches ~360 ms p50 during a 1M rebuild. One thread builds ~1.7× slower.
    faiss.omp_set_num_threads(BUILD_THREADS)
    x = np.ascontiguousarray(vec16, dtype=np.float32)
    index = faiss.IndexHNSWSQ(x.shape[1], faiss.ScalarQuantizer.QT_8bit, HNSW_M, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = EF_CONSTRUCTION
    sample = x if len(x) <= 50_000 else x[np.random.default_rng(0).choice(len(x), 50_000, replace=False)]
    index.train(sample)
    index.add(x)
    return index


class Cancelled(Exception):
    """A compaction build given up (the store is closing)."""


@dataclass(eq=False)
class Segment:
    start: int
    end: int
    level: int
    vec16: np.ndarray  # (end - start, dim) float16, in memory or memory-mapped
    graph: object | None = None  # faiss index; None until built
    vec32: np.ndarray | None = None  # kept only until the graph exists (exact search meanwhile)
    files: tuple[str, str] | None = None  # (vectors, graph) once persisted

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass
class Job:
    """Work done outside the lock: a graph for `inputs[0]`, or a merge of `inputs`."""
    inputs: list[Segment]
    vec16: np.ndarray = field(default=None)  # type: ignore[assignment]
    graph: object | None = None


class VectorIndex:
    def __init__(self, dim: int = 0) -> None:
        self.dim = dim
        self.n = 0
        self.segments: list[Segment] = []
        self.tail = np.zeros((0, dim), dtype=np.float32)
        self.patches: dict[int, np.ndarray] = {}
        self.changed = False  # segments changed since the last snapshot

    # ---- layout ----------------------------------------------------------------------
    @property
    def sealed(self) -> int:
        return self.segments[-1].end if self.segments else 0

    def set_dim(self, dim: int) -> None:
        if dim and not self.dim:
            # rows appended before any vector (keyword first) hold zeros until theirs arrive
            self.dim = dim
            self.tail = np.zeros((max(len(self.tail), self.n), dim), dtype=np.float32)

    def _grow_tail(self, rows: int) -> None:
        if rows <= len(self.tail):
            return
        grown = np.zeros((max(rows, 2 * len(self.tail), 1024), self.dim), dtype=np.float32)
        used = self.n - self.sealed
        grown[:used] = self.tail[:used]
        self.tail = grown

    def _reset_tail(self, rest: np.ndarray) -> None:
        """The tail holds just these rows (the ones after the last sealed segment)."""
        self.tail = np.zeros((max(len(rest), 1024), self.dim), dtype=np.float32)
        self.tail[: len(rest)] = rest

    # ---- writes (under the store's write lock) ----------------------------------------
    def append(self, vectors: list[np.ndarray | None]) -> None:
        """One entry per new position; None: no vector yet (zeros, excluded by has_vec)."""
        used = self.n - self.sealed
        self._grow_tail(used + len(vectors))
        for i, v in enumerate(vectors):
            if v is not None:
                self.tail[used + i] = v
        self.n += len(vectors)
        self.seal()

    def append_block(self, block: np.ndarray) -> None:
        """Bulk append (cold load): rows already fp32 (zeros where there is no vector)."""
        used = self.n - self.sealed
        self._grow_tail(used + len(block))
        self.tail[used : used + len(block)] = block
        self.n += len(block)
        self.seal()

    def seal(self) -> None:
        used = self.n - self.sealed
        if used < SEAL_ROWS or not self.dim:
            return
        take = used - used % SEAL_ROWS
        block = self.tail[:take]
        for s in range(0, take, SEAL_ROWS):
            self.segments.append(_sealed(self.sealed, block[s : s + SEAL_ROWS].copy()))
        self._reset_tail(self.tail[take:used].copy())
        self.changed = True

    def set(self, positions: list[int], vectors: np.ndarray) -> None:
        base = self.sealed
        for p, v in zip(positions, vectors):
            if p >= base:
                self.tail[p - base] = v
            else:
                self.patches[p] = np.asarray(v, dtype=np.float32).copy()

    # ---- graph building (outside the lock) -------------------------------------------
    def next_job(self) -> Job | None:
        """The next graph to build: a merge of MERGE_FACTOR same-level neighbours first
        (largest level first), else a sealed segment without its graph."""
        segs = self.segments
        for i in range(len(segs) - MERGE_FACTOR + 1):
            run = segs[i : i + MERGE_FACTOR]
            if all(s.level == run[0].level for s in run):
                return Job(run)
        for s in segs:
            if s.graph is None:
                return Job([s])
        return None

    @staticmethod
    def run(job: Job) -> Job:
        job.vec16 = job.inputs[0].vec16 if len(job.inputs) == 1 else np.concatenate([s.vec16 for s in job.inputs])
        job.graph = build_graph(job.vec16)
        return job

    def install(self, job: Job) -> bool:
        """Swap the built segment in (under the write lock); False when the inputs are gone
        (a compaction replaced them meanwhile)."""
        segs = self.segments
        try:
            i = next(k for k, s in enumerate(segs) if s is job.inputs[0])
        except StopIteration:
            return False
        if segs[i : i + len(job.inputs)] != job.inputs:
            return False
        first, last = job.inputs[0], job.inputs[-1]
        level = first.level + (1 if len(job.inputs) > 1 else 0)
        segs[i : i + len(job.inputs)] = [Segment(first.start, last.end, level, job.vec16, job.graph)]
        self.changed = True
        return True

    def build_all(self) -> None:
        """Build every pending graph inline (tests; the store leaves this to its maintenance thread)."""
        while (job := self.next_job()) is not None:
            self.install(self.run(job))

    # ---- compaction ------------------------------------------------------------------
    # Positions renumbered to `keep` (dead rows dropped), in three steps so that the costly
    # one runs with no lock held: a view taken under the read lock, the new segments *and
    # their graphs* built from it off the lock, and a short install under the write lock.
    # Graphs are built before the install because segments without one are scanned exactly:
    # at 1M rows (665k kept) searches took 312 ms p50 instead of 20 ms for the minutes their
    # rebuild took (benchmarks/compaction.py). Segments are cut at the largest sizes the tiered
    # scheme allows (20k·8^level), so each vector is inserted into one graph, once, and the
    # layout is one that merges would have made. Each segment is gathered straight from the
    # old layout: gathering every vector at once as fp32 cost 1.5 GB of extra memory at 1M.
    def compaction_view(self) -> "VectorIndex":
        """The vectors as they are now, safe to read while writes go on: segments are
        immutable, and the tail and patches (changed in place by writes) are copied."""
        view = copy.copy(self)
        view.segments, view.patches = list(self.segments), dict(self.patches)
        view.tail = self.tail[: self.n - self.sealed].copy()
        return view

    @staticmethod
    def build_compacted(view: "VectorIndex", keep: np.ndarray, cancelled=None) -> list[Segment]:
        """The segments of the compacted layout, with their graphs (pure; no lock needed).
        `cancelled()` is asked between segments (a graph takes up to ~100 s at 1M): true
        raises Cancelled, so closing a store need not wait for a whole compaction."""
        out: list[Segment] = []
        if not view.dim:
            return out
        start = 0
        while len(keep) - start >= SEAL_ROWS:
            if cancelled is not None and cancelled():
                raise Cancelled
            level = 0
            while SEAL_ROWS * MERGE_FACTOR ** (level + 1) <= len(keep) - start:
                level += 1
            size = SEAL_ROWS * MERGE_FACTOR**level
            vec16 = view.get(keep[start : start + size]).astype(np.float16)
            out.append(Segment(start, start + size, level, vec16, build_graph(vec16)))
            start += size
        return out

    def install_compacted(self, segments: list[Segment], rest: np.ndarray,
                          late: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Swap the compacted layout in (under the write lock). `rest`: today's positions of
        the rows after the new segments, in their new order (read now, so vectors that arrived
        meanwhile are current); `late`: (today's, new) positions of vectors set after the view
        was taken whose rows are inside the new segments — they become patches."""
        if not self.dim:
            self.n = sum(s.size for s in segments) + len(rest)
            return
        tail = self.get(rest)
        late_vecs = self.get(late[0]) if late is not None and len(late[0]) else None
        self.segments, self.patches = segments, {}
        self._reset_tail(tail)
        self.n = (segments[-1].end if segments else 0) + len(rest)
        if late_vecs is not None:
            self.set(late[1].tolist(), late_vecs)
        self.changed = True
        self.seal()

    def compact(self, keep: np.ndarray) -> None:
        """All three steps at once (tests; the store builds off the lock)."""
        segments = self.build_compacted(self.compaction_view(), keep)
        self.install_compacted(segments, keep[sum(s.size for s in segments):])

    # ---- reads -----------------------------------------------------------------------
    def get(self, positions) -> np.ndarray:
        positions = np.asarray(positions, dtype=np.int64)
        out = np.zeros((len(positions), self.dim), dtype=np.float32)
        if not len(positions) or not self.dim:
            return out
        base = self.sealed
        in_tail = positions >= base
        out[in_tail] = self.tail[positions[in_tail] - base]
        if (~in_tail).any():
            starts = np.array([s.start for s in self.segments])
            which = np.searchsorted(starts, positions, side="right") - 1
            for k in np.unique(which[~in_tail]).tolist():
                sel = (which == k) & ~in_tail
                seg = self.segments[k]
                out[sel] = seg.vec16[positions[sel] - seg.start]
            if self.patches:
                for i in np.flatnonzero(~in_tail).tolist():
                    v = self.patches.get(int(positions[i]))
                    if v is not None:
                        out[i] = v
        return out

    def dot(self, positions, q: np.ndarray) -> np.ndarray:
        return self.get(positions) @ q

    def search(self, q: np.ndarray, k: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Top k positions (and scores) among `mask` (bool over all positions)."""
        if k <= 0 or not self.dim or self.n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        q = np.ascontiguousarray(q, dtype=np.float32).reshape(-1)
        cands: list[np.ndarray] = []
        base = self.sealed
        used = self.n - base
        if used:
            m = mask[base : self.n]
            if m.any():
                s = np.where(m, self.tail[:used] @ q, -np.inf)
                cands.append(base + _topk(s, k))
        for seg in self.segments:
            m = mask[seg.start : seg.end]
            count = int(np.count_nonzero(m))
            if not count:
                continue
            if seg.graph is None or count <= EXACT_FILTERED or count < seg.size // 20:
                idx = np.flatnonzero(m)
                vecs = seg.vec32[idx] if seg.vec32 is not None else seg.vec16[idx].astype(np.float32)
                cands.append(seg.start + idx[_topk(vecs @ q, k)])
            else:
                cands.append(seg.start + _graph_search(seg.graph, q, max(CANDIDATES, k), m, count, seg.size))
        if self.patches:
            ps = np.fromiter(self.patches, dtype=np.int64, count=len(self.patches))
            ps = ps[mask[ps]]
            if len(ps):
                cands.append(ps)
        if not cands:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        pos = np.unique(np.concatenate(cands))
        pos = pos[mask[pos]]
        scores = self.dot(pos, q)
        top = _topk(scores, k)
        return pos[top], scores[top]

    def nbytes_resident(self) -> int:
        """Memory this index holds outside memory-mapped files (settings page, benchmarks)."""
        total = self.tail.nbytes + sum(v.nbytes for v in self.patches.values())
        for s in self.segments:
            if s.files is None:
                total += s.vec16.nbytes
            if s.vec32 is not None:
                total += s.vec32.nbytes
        return total


def _sealed(start: int, v32: np.ndarray) -> Segment:
    """A new level-0 segment over these fp32 rows (which it keeps: exact search until its
    graph is built)."""
    return Segment(start, start + len(v32), 0, v32.astype(np.float16), vec32=v32)


def _topk(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k best finite scores, best first."""
    finite = np.isfinite(scores)
    k = min(k, int(finite.sum()))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    part = part[np.isfinite(scores[part])]
    return part[np.argsort(-scores[part], kind="stable")]


def _graph_search(graph, q: np.ndarray, k: int, m: np.ndarray, count: int, size: int) -> np.ndarray:
    faiss = _faiss()
    params = faiss.SearchParametersHNSW()
    # A filter that drops part of the graph widens the beam in proportion (capped), so the
    # walk still meets k kept nodes.
    params.efSearch = int(min(EF_SEARCH * max(1.0, size / max(count, 1)), 4 * EF_SEARCH))
    bits = None
    if count < size:
        bits = np.packbits(m, bitorder="little")
        sel = faiss.IDSelectorBitmap(size, faiss.swig_ptr(bits))
        params.sel = sel
    _, labels = graph.search(q.reshape(1, -1), k, params=params)
    labels = labels[0]
    del bits
    return labels[labels >= 0].astype(np.int64)
