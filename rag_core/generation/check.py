"""Verify: a draft's citations placed and its sentences checked against the sources they
cite (grounding/verify.py), the LLM judge where switched on (recorded as the judge that
labelled), and grounded-only filtering. The result (`Checked`) is what the policy reads and
the answer shows; nothing here decides whether it is shown."""

from __future__ import annotations

import re
from dataclasses import replace

from ..grounding.citations import MARKER, attach_markers
from ..grounding.verify import answer_sentences, grounding_score, plain
from ..models import Claim, ScoredChunk
from .kit import Kit
from .judge import judge as model_judge
from .passage import cite
from .steps import Checked, Turn


class Checker:
    def __init__(self, kit: Kit, verify):
        self.kit = kit
        self.verify = verify  # the named runnable (draft, sources, question) -> (claims, grounding)

    def check(self, text: str, sources: list[ScoredChunk], question: str, config,
              leads: dict[int, list[str]] | None = None) -> Checked:
        """A written draft with its markers placed, uncited and mis-cited sentences cited where
        a passage supports them, and verified."""
        leads = leads or {}
        evidence = getattr(text, "evidence", None) or {}  # the quotes a model named (kit.Written)
        text = attach_markers(text)
        claims, grounding = self.verify.invoke((text, sources, question, leads, evidence), config)
        text, fixed = fix_citations(text, claims)
        if fixed:
            claims, grounding = self.verify.invoke((text, sources, question, leads, evidence), config)
        for c in claims:  # who placed each citation: the writer of the draft, or this checker
            c.cited_by = "checker" if c.text in fixed else "model" if c.cited else None
        return Checked(text, sources, claims, grounding, len(fixed), leads=leads, evidence=evidence)

    def grounded_only(self, turn: Turn, checked: Checked, question: str, config) -> Checked:
        """Grounded-only knowledge bases: the answer without its unsupported sentences, verified
        again (`kept` is the number of sentences left; None when not grounded-only)."""
        if not any(kb.grounded_only for kb in turn.req.kbs):
            return checked
        kept = [c for c in checked.claims if c.label != "unsupported"]
        if kept and len(kept) < len(checked.claims):
            cited_by = {c.text: c.cited_by for c in checked.claims}
            keep = {c.text for c in kept}
            text = rewrite_sentences(checked.text, lambda span, claim: span if claim in keep else "")
            claims, grounding = self.verify.invoke((text, checked.sources, question, checked.leads, checked.evidence),
                                                   config)
            for c in claims:
                c.cited_by = cited_by.get(c.text, "model" if c.cited else None)
            checked = replace(checked, text=text, claims=claims, grounding=grounding)
        return replace(checked, kept=len(kept))

    def judge(self, turn: Turn, checked: Checked, config, language: str = "en") -> tuple[Checked, Turn]:
        """The model checks every sentence against its sources in one structured call (judge.py);
        the verdicts that hold up replace the local labels, and the answer records who judged.

        A local GGUF model never judges: measured as judge on the realistic harness's fit half
        (benchmarks/paraphrase_verifier.py --judge), Qwen2.5 1.5B called 10 of 10 swapped-fact
        sentences and 9 of 10 invented ones supported, and 0.5B called 3 of 10 verbatim copies
        and most faithful paraphrases partial or unsupported. A judge that agrees with everything,
        or with nothing, is no judge; the local check's labels stand and the answer says why."""
        if self.kit.settings.llm_gguf:
            return replace(checked, verified_by="reader (a local model is not trusted as judge)"), turn
        try:
            got = model_judge(self.kit.llm, checked.claims, checked.sources, config, language)
        except Exception as exc:  # noqa: BLE001 - the endpoint failed: the local check stands
            return checked, self.kit.failed(turn, exc)
        if got is None:
            return replace(checked, verified_by="reader (judge reply unusable)"), turn
        if not got.used:
            return replace(checked, verified_by=f"reader ({got.note})"), turn
        return replace(checked, claims=got.claims, grounding=grounding_score(got.claims),
                       verified_by=f"model ({got.note})"), turn


def fix_citations(draft: str, claims: list[Claim]) -> tuple[str, set[str]]:
    """Citations placed by the checker, not the model (small models forget markers, and
    often cite [1] whatever the fact's passage):
    - a sentence left uncited gets the passage the verifier found supporting it best;
    - a sentence whose cited passages do not support it, while another passage does, cites
      that passage instead.
    Their labels are then judged against the new passage like any citation; an unsupported
    sentence stays as it is (uncited, or with the model's citation, shown as unsupported).
    Returns the draft and the sentences (marker-free text) whose citation the checker placed."""
    new = {c.text: c.best_source for c in claims if not c.cited and c.best_source and c.label != "unsupported"}
    new.update({c.text: c.supported_by for c in claims if c.cited and c.supported_by})
    if not new:
        return draft, set()
    fixed: set[str] = set()

    def recite(span: str, claim: str) -> str:
        if claim not in new:
            return span
        fixed.add(claim)
        return cite(_OLD_MARKERS.sub("", span).rstrip(), new[claim])

    return rewrite_sentences(draft, recite), fixed


_OLD_MARKERS = re.compile(r"[ \t]*" + MARKER.pattern, re.I)


def rewrite_sentences(draft: str, change) -> str:
    """The draft with each sentence's span replaced by change(span, its claim text) ("" drops
    it), everything between sentences (line breaks, paragraphs, a code block's layout) and
    every character inside a kept sentence as written (issue 50: a re-cited sentence was
    rebuilt from its claim text, flattened, "local .tar.gz" read "local.tar.gz"). Where a
    sentence cannot be placed in the draft, the sentences are joined as they split."""
    out, pos = [], 0
    for sent in answer_sentences(draft):
        body = sent.strip()
        m = re.compile(r"\s+".join(map(re.escape, body.split()))).search(draft, pos) if body else None
        if m is None:
            return " ".join(x for x in (change(s.strip(), plain(s)) for s in answer_sentences(draft)) if x)
        new = change(m.group(), plain(body))
        out.append(draft[pos:m.start()] if new or not out else draft[pos:m.start()].rstrip(" \t"))
        out.append(new)
        pos = m.end()
    out.append(draft[pos:])
    return re.sub(r"\n{3,}", "\n\n", "".join(out)).strip()
