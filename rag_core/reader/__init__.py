"""The reader/judge: a small cross-encoder that reads a question (or claim) and a text
*together* — the one thing word overlap and a bi-encoder's cosine cannot do.

Our own model (DESIGN.md §5, §8): all-MiniLM-L6-v2 fine-tuned on train-side SQuAD and
SciFact pairs (training/reader/, model card in model/MODEL_CARD.md), int8 ONNX, run with
onnxruntime (no torch). One network, three tasks, selected by a prefix on the first text:

- ``answers``:  does this sentence answer the question?   (answer selection, abstention,
  the *answers the question* score)
- ``supports``: do these source sentences state this claim? (claim verification)
- ``relevant``: is this passage relevant to the query?      (reranking)

Outputs are logits; `model/reader.json` holds a per-task Platt calibration fitted on
held-out *train-side* pairs, so `prob()` is a probability one threshold can be set on.
The file's sha256 is checked at load: a corrupted or swapped model refuses to load.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import MissingDependency
from ..inference import SessionPair, cpu_session

MODEL_DIR = Path(__file__).with_name("model")
MODEL_FILE = MODEL_DIR / "reader-int8.onnx"
META_FILE = MODEL_DIR / "reader.json"
# Token limits per task, as in training (training/reader/train.py MAX_LEN).
MAX_LEN = {"answers": 128, "supports": 160, "relevant": 192}
TASKS = tuple(MAX_LEN)


# `answers` may read a sentence with its neighbours (issue 25): the candidate first, so
# truncation cuts context and never the sentence judged, then up to this many words of the
# sentence before it and of the one after it.
CONTEXT_WORDS = 24


def answer_input(heading: str, sentence: str, before: str = "", after: str = "") -> str:
    """The `answers` task's second text: "HEADING | SENTENCE", and with neighbours
    "HEADING | SENTENCE || BEFORE ... AFTER" — the form training/reader/make_data.py writes."""
    if not before and not after:
        return f"{heading} | {sentence}"
    b = " ".join(before.split()[-CONTEXT_WORDS:])
    a = " ".join(after.split()[:CONTEXT_WORDS])
    return f"{heading} | {sentence} || {b} ... {a}"


class ReaderIntegrityError(RuntimeError):
    pass


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass(frozen=True)
class Calibration:
    a: float = 1.0
    b: float = 0.0

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        return 1.0 / (1.0 + np.exp(-(self.a * logits + self.b)))


# The SQuAD-only Platt fit of `answers` that every answer logged before the three-domain
# calibration (issue 25) was scored with; logs that do not name their calibration used it.
LEGACY_ANSWERS = Calibration(0.704496, -0.678881)


def calibrations(meta: dict) -> dict[str, Calibration]:
    """Each task's Platt fit from reader.json's contents (identity where none is recorded)."""
    return {t: Calibration(**meta.get("calibration", {}).get(t, {})) for t in TASKS}


@lru_cache(maxsize=4)
def answers_calibration(meta_file: Path = META_FILE) -> Calibration:
    """The shipped `answers` calibration, read from reader.json without loading the model."""
    return calibrations(json.loads(meta_file.read_text()))["answers"]


class Reader:
    # One pair per run: dynamic int8 quantisation scales activations per run, so in a batch a
    # pair's score would depend on its neighbours (logits moved by up to 0.19). Run alone,
    # every pair has one score whatever else is read, and there is no padding; measured on
    # 2 cores, batch 1 was as fast as batch 32 (34–37 vs 24–29 pairs/s, under load).
    def __init__(self, model_file: Path = MODEL_FILE, meta_file: Path = META_FILE, threads: int = 0,
                 batch_size: int = 1):
        try:
            import tokenizers
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise MissingDependency(f"the reader model needs {exc.name}: pip install -r requirements.txt") from exc
        from ..text.tokens import tokenizer_path as _tokenizer_path

        if not model_file.exists():
            raise ReaderIntegrityError(f"reader model missing: {model_file}")
        meta = json.loads(meta_file.read_text())
        digest = file_sha256(model_file)
        if digest != meta["sha256"]:
            raise ReaderIntegrityError(
                f"reader model {model_file.name} has sha256 {digest[:12]}…, expected {meta['sha256'][:12]}… "
                "(file corrupted or replaced; restore it from the repository)"
            )
        self.meta = meta
        self.sha256 = digest
        self.calibration = calibrations(meta)
        # Whether this model was trained to read an answer candidate with its neighbouring
        # sentences (answer_input's long form); a model that was not reads sentences alone.
        self.reads_context = bool(meta.get("answers_context", False))
        self.batch_size = batch_size
        self._tok = {}
        for task, n in MAX_LEN.items():
            tok = tokenizers.Tokenizer.from_file(str(_tokenizer_path()))
            tok.enable_truncation(n, strategy="longest_first")
            tok.no_padding()
            self._tok[task] = tok
        # No global lock: overlapping calls run on a one-thread session (rag_core/inference.py).
        self.sessions = SessionPair(lambda n: cpu_session(model_file, n), threads)
        self.session = self.sessions.wide

    def logits(self, task: str, firsts: list[str], seconds: list[str]) -> np.ndarray:
        if task not in MAX_LEN:
            raise ValueError(f"unknown reader task {task!r}")
        if len(firsts) != len(seconds):
            raise ValueError("firsts and seconds differ in length")
        out = np.zeros(len(firsts), dtype=np.float64)
        if not firsts:
            return out
        enc = self._tok[task].encode_batch([(f"{task}: {a}", b or " ") for a, b in zip(firsts, seconds)])
        order = sorted(range(len(enc)), key=lambda i: len(enc[i].ids))
        for s in range(0, len(order), self.batch_size):
            idx = order[s : s + self.batch_size]
            width = max(len(enc[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for r, i in enumerate(idx):
                e = enc[i]
                ids[r, : len(e.ids)] = e.ids
                types[r, : len(e.ids)] = e.type_ids
                mask[r, : len(e.ids)] = 1
            with self.sessions.session() as session:
                res = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
            out[idx] = res.reshape(-1)
        return out

    def prob(self, task: str, firsts: list[str], seconds: list[str]) -> np.ndarray:
        return self.calibration[task](self.logits(task, firsts, seconds))

    # ---- the three questions it answers ----------------------------------------------------
    def answers(self, question: str, sentences: list[str], titles: list[str] | None = None) -> np.ndarray:
        """P(the sentence answers the question), per sentence; `titles` give each sentence
        the document context it was trained with ("TITLE | SENTENCE")."""
        titles = titles or [""] * len(sentences)
        return self.prob("answers", [question] * len(sentences), [f"{t} | {s}" for t, s in zip(titles, sentences)])

    def supports(self, claims: list[str], evidence: list[str]) -> np.ndarray:
        """P(evidence[i] states claims[i])."""
        return self.prob("supports", claims, evidence)

    def relevant(self, query: str, passages: list[str], titles: list[str] | None = None) -> np.ndarray:
        titles = titles or [""] * len(passages)
        return self.prob("relevant", [query] * len(passages), [f"{t} | {p}" for t, p in zip(titles, passages)])


@lru_cache(maxsize=2)
def get_reader(threads: int = 0) -> Reader:
    """One reader per process (the model loads once, ~0.2 s)."""
    return Reader(threads=threads)
