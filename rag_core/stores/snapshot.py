"""The embedded store's in-memory index, persisted so a cold start maps it instead of
rebuilding it (at 1M chunks: seconds instead of minutes).

A snapshot is a cache of the SQLite rows, never the truth: it records how far it had applied
the database (`max_row`, the tombstone and vector-update sequence numbers, the date-edit
counter), and opening it replays only what happened since — rows after `max_row` from the
chunk table, deletes from the tombstone log, or, when that log was pruned past the snapshot,
a set difference against the live row ids (no replay of the whole history). Anything
unreadable or inconsistent means no snapshot: the index is loaded from SQLite and a new one
written.

Layout under `<data>/index/`: `CURRENT` names the manifest (JSON); large arrays are `.npy`
files opened memory-mapped (postings, forward terms, fp16 vectors) and faiss graphs read with
their codes memory-mapped; vector segments are immutable and named by a unique tag, so a new
snapshot writes only segments it has not written before. Writers hold an exclusive `flock`
(two processes on one folder take turns), readers a shared one while they open files, so
the clean-up of unreferenced files never removes a file being opened; a file already mapped
stays valid after unlinking (POSIX).
"""

from __future__ import annotations

import fcntl
import json
import logging
import mmap
import os
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import numpy as np

from .. import faults
from .memindex import KEYWORD_ARRAYS, ROW_ARRAYS, MemIndex
from .vector_index import Segment, VectorIndex, _faiss

VERSION = 1


@contextmanager
def _flock(folder: Path, exclusive: bool) -> Iterator[None]:
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "LOCK", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _save_npy(path: Path, arr: np.ndarray) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, np.asarray(arr))
    os.replace(tmp, path)


def _load_npy(path: Path, random_access: bool = False) -> np.ndarray:
    arr = np.load(path, mmap_mode="r")
    if random_access and isinstance(arr, np.memmap) and getattr(arr, "_mmap", None) is not None:
        # rows read one by one (rescoring): no read-ahead of neighbours nobody asked for
        arr._mmap.madvise(mmap.MADV_RANDOM)
    return arr


def capture(mi: MemIndex, state: dict) -> dict:
    """What a snapshot writes, taken while the caller holds the index still (a read lock):
    copies of the small mutable arrays and references to the large ones, which are replaced,
    never changed in place, so `write` can run after the lock is released. Only the main
    segment is captured: rows after it are read from SQLite by the next open."""
    n = mi.main_n
    segments = []
    for seg in mi.vecs.segments:
        if seg.graph is None or seg.end > n:
            break  # from here on, vectors are re-read from SQLite
        segments.append(seg)
    saved_end = segments[-1].end if segments else 0
    return {
        "mi": {"k1": mi.k1, "b": mi.b, "n": n, "dim": mi.dim, "codes": list(mi.codes.items()),
               "df_len": len(mi.df)},
        "keyword": {name: getattr(mi, name) for name in KEYWORD_ARRAYS if name != "df"},
        "rows": {name: getattr(mi, name)[:n].copy() for name in ROW_ARRAYS},
        "segments": segments,
        "patches": {p: v for p, v in mi.vecs.patches.items() if p < saved_end},
        "saved_end": saved_end,
        "state": dict(state),
    }


def write(view: dict, folder: Path) -> str:
    """Write a captured view as the current snapshot; returns the manifest's name."""
    m = view["mi"]
    n, rows = m["n"], view["rows"]
    faiss = _faiss() if view["segments"] else None
    with _flock(folder, exclusive=True):
        tag = uuid.uuid4().hex[:12]
        files: dict[str, str] = {}
        for name, arr in view["keyword"].items():
            files[name] = f"{name}-{tag}.npy"
            _save_npy(folder / files[name], arr)
        # df over the captured rows only (the live index also counts rows after them)
        alive = rows["alive"]
        fwd_ptr, fwd_term = view["keyword"]["fwd_ptr"], view["keyword"]["fwd_term"]
        live_entries = np.repeat(alive, np.diff(fwd_ptr[: n + 1]))
        df = np.zeros(m["df_len"], dtype=np.int32)
        counts = np.bincount(np.asarray(fwd_term)[live_entries], minlength=len(df))
        df[: len(counts)] = counts
        files["df"] = f"df-{tag}.npy"
        _save_npy(folder / files["df"], df)
        files["rows"] = f"rows-{tag}.npz"
        np.savez(folder / files["rows"], **rows)
        segments = []
        for seg in view["segments"]:
            if seg.files is None or not all((folder / f).exists() for f in seg.files):
                stem = f"seg-{seg.start}-{seg.end}-{uuid.uuid4().hex[:12]}"
                _save_npy(folder / f"{stem}.f16.npy", seg.vec16)
                faiss.write_index(seg.graph, str(folder / f"{stem}.faiss"))
                seg.files = (f"{stem}.f16.npy", f"{stem}.faiss")
            segments.append({"start": seg.start, "end": seg.end, "level": seg.level, "files": list(seg.files)})
        patches = view["patches"]
        order = sorted(patches)
        files["patches"] = f"patches-{tag}.npz"
        np.savez(folder / files["patches"], pos=np.array(order, dtype=np.int64),
                 vec=np.array([patches[p] for p in order], dtype=np.float32).reshape(-1, m["dim"]))
        manifest = {
            "version": VERSION, "n": n, "dim": m["dim"], "k1": m["k1"], "b": m["b"],
            "max_row": int(rows["row_ids"][n - 1]) if n else 0,
            "codes": [[k, v] for k, v in m["codes"]],
            "alive_count": int(alive.sum()),
            "total_dl": float(rows["dl"][alive].sum(dtype=np.float64)),
            "dead": int(n - alive.sum()), "files": files, "segments": segments, "saved_end": view["saved_end"],
            **view["state"],
        }
        name = f"manifest-{tag}.json"
        faults.reach("snapshot.files")  # its arrays written, no manifest names them yet
        (folder / f"{name}.tmp").write_text(json.dumps(manifest))
        os.replace(folder / f"{name}.tmp", folder / name)
        faults.reach("snapshot.manifest")  # a manifest, not yet CURRENT
        (folder / "CURRENT.tmp").write_text(name)
        os.replace(folder / "CURRENT.tmp", folder / "CURRENT")
        faults.reach("snapshot.current")  # the old snapshot's files not yet removed
        keep = {"LOCK", "CURRENT", name, *files.values(), *(f for s in segments for f in s["files"])}
        for f in folder.iterdir():
            if f.name not in keep:
                f.unlink(missing_ok=True)
        return name


def load(folder: Path, dim_hint: int = 0) -> tuple[MemIndex, dict] | None:
    """The snapshot's index and manifest, or None (no snapshot, or not readable)."""
    if not (folder / "CURRENT").exists():
        return None
    try:
        with _flock(folder, exclusive=False):
            manifest = json.loads((folder / (folder / "CURRENT").read_text().strip()).read_text())
            if manifest.get("version") != VERSION:
                return None
            mi = MemIndex(manifest["k1"], manifest["b"])
            files = manifest["files"]
            for name in KEYWORD_ARRAYS:
                setattr(mi, name, _load_npy(folder / files[name]))
            mi.df = np.array(mi.df)  # updated in place by adds and deletes
            with np.load(folder / files["rows"]) as rows:
                for name in ROW_ARRAYS:
                    setattr(mi, name, np.array(rows[name]))
            n = mi.n = mi.main_n = manifest["n"]
            mi.codes = {k: v for k, v in manifest["codes"]}
            mi.max_row = manifest["max_row"]
            mi.alive_count, mi.total_dl, mi.dead = manifest["alive_count"], manifest["total_dl"], manifest["dead"]
            vi = VectorIndex(manifest["dim"])
            if manifest["segments"]:
                faiss = _faiss()
                for s in manifest["segments"]:
                    vec16 = _load_npy(folder / s["files"][0], random_access=True)
                    graph = faiss.read_index(str(folder / s["files"][1]), faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY)
                    vi.segments.append(Segment(s["start"], s["end"], s["level"], vec16, graph, files=tuple(s["files"])))
            with np.load(folder / files["patches"]) as p:
                vi.patches = {int(k): v.copy() for k, v in zip(p["pos"], p["vec"])}
            vi.n = manifest["saved_end"]
            mi.vecs = vi
            if len(mi.row_ids) != n or len(mi.fwd_ptr) != n + 1 or (dim_hint and vi.dim and vi.dim != dim_hint):
                return None
            return mi, manifest
    except Exception:  # noqa: BLE001 - a snapshot is a cache: anything wrong with it means none
        logging.getLogger(__name__).warning("index snapshot in %s unreadable; loading from the database", folder,
                                            exc_info=True)
        return None
