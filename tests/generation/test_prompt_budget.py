"""The passages a model reads, within a token budget (generation/prompt_budget.py, issue 52): the
reader's best sentences first, whole passages where they fit, and the prompt says where text
was left out. The chain test runs the real store, reader and chain against the scripted
OpenAI-compatible server on loopback (benchmarks/oracle_llm.py), which stands in for a model
and records the prompt it was sent."""

from __future__ import annotations

import re

from benchmarks.oracle_llm import OracleServer, _Reply
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.generation.prompt_budget import ELLIPSIS, fit, shown
from rag_core.models import Chunk, ScoredChunk
from rag_core.text.tokens import count_tokens
from rag_core.workspace import Workspace

OP = Caller.operator()
FILLER = [f"Paragraph filler number {n} talks about the weather in the valley at length." for n in range(12)]


def passage(i: int, sentences: list[str]) -> ScoredChunk:
    return ScoredChunk(Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", kb_id="k", text=" ".join(sentences), source=f"f{i}.md"),
                       1.0 - i / 10)


def test_passages_that_fit_are_read_whole():
    srcs = [passage(0, FILLER[:2]), passage(1, FILLER[2:4])]
    got = fit(srcs, {0: 1, 1: 0}, budget=1000)
    assert got.keep == 2 and got.windows == {}
    assert shown(srcs, got.windows) == srcs


def test_no_budget_reads_everything():
    srcs = [passage(0, FILLER)]
    assert fit(srcs, {0: 5}, budget=0).keep == 1 and fit(srcs, {0: 5}, budget=0).windows == {}


def test_over_budget_the_best_sentences_come_first_and_the_cut_is_marked():
    answer = "The warranty period of the kettle is two years from the date of purchase."
    first = FILLER[:6] + [answer] + FILLER[6:12]
    second = ["The second passage opens here.", "The kettle's lid opens with the button on its handle."]
    third = ["A third passage about nothing that matters at all to anybody here today, truly nothing."]
    srcs = [passage(0, first), passage(1, second), passage(2, third)]
    cost = {t: count_tokens(t) + 1 for t in (answer, second[1], third[0], FILLER[6])}
    assert cost[third[0]] > cost[FILLER[6]]
    budget = cost[answer] + cost[second[1]] + cost[FILLER[6]]  # room for one more sentence
    got = fit(srcs, {0: 6, 1: 1}, budget)
    assert got.tokens <= budget
    assert got.keep == 2  # the third passage's best sentence no longer fits
    window = got.windows[0]
    assert answer in window
    assert window.startswith(ELLIPSIS) and window.endswith(ELLIPSIS)  # text left out on both sides
    assert FILLER[6] in window and FILLER[5] not in window  # it grew after its sentence first
    # the second passage keeps its best sentence; the best passage grew first
    assert second[1] in got.windows[1] and second[0] not in got.windows[1]
    # the prompt's copy holds the window; the passage itself is unchanged
    view = shown(srcs, got.windows)
    assert view[0].chunk.text == window and srcs[0].chunk.text == " ".join(first)
    assert view[0].chunk.chunk_id == "c0"


def test_a_passage_alone_over_budget_is_still_read_in_part():
    srcs = [passage(0, FILLER)]
    got = fit(srcs, {0: 3}, budget=5)
    assert got.keep == 1 and got.windows[0].strip(ELLIPSIS + " ") == FILLER[3]


class Recorder:
    """Answers with the sentence about the warranty, cited [1]; keeps every prompt it is sent."""

    def __init__(self):
        self.prompts: list[str] = []

    def reply(self, messages):
        text = "\n".join(m.get("content") if isinstance(m.get("content"), str) else "" for m in messages)
        self.prompts.append(text)
        q = re.findall(r"Question: (.+)", text)
        return _Reply("The kettle's warranty lasts two years [1].", "answer", {"question": q[-1] if q else ""})


def test_the_model_reads_the_readers_best_sentences_within_the_budget(tmp_path):
    doc = tmp_path / "kettle.md"
    body = (" ".join(FILLER[:6]) + " The kettle's warranty lasts two years from the date of purchase. "
            + " ".join(FILLER[6:]))
    doc.write_text("# Kettle\n\n" + body + "\n")
    srv = OracleServer({})
    srv.reader = Recorder()
    try:
        ws = Workspace(get_settings(tmp_path / "data", openai_base_url=srv.base_url, openai_api_key="test",
                                    llm_model="scripted", llm_crag=False, llm_condense=False, llm_context_tokens=60,
                                    answer_cache=False))
        ws.create_kb("k", caller=OP)
        ws.ingest("k", [doc], caller=OP)
        ans = ws.ask(["k"], "How long is the kettle's warranty?", caller=OP)
        cited = ws.store.get_chunks([c.chunk_id for c in ans.citations])
        ws.close()
    finally:
        srv.stop()
    prompt = next(p for p in srv.reader.prompts if "<retrieved_context>" in p)
    context = re.findall(r"<retrieved_context>\n(.*?)\n</retrieved_context>", prompt, re.S)[-1]
    assert "warranty lasts two years from the date of purchase" in context
    assert ELLIPSIS in context
    assert FILLER[0] not in context and FILLER[11] not in context
    assert count_tokens(context) < count_tokens(body) / 2
    # the answer cites the passage itself (its chunk, not the prompt's window)
    assert not ans.abstained and ans.citations
    assert cited and FILLER[0] in cited[0].text and FILLER[11] in cited[0].text
