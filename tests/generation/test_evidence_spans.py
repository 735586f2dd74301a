"""Evidence spans through the chain: an endpoint model is asked to quote, after its answer, the
source sentences it rests on; the block is never shown, and each sentence is judged against its
quotes (grounding/verify.py `_quoted`).

The model is scripted (the benchmark's oracle server on loopback: real HTTP and streaming), a
stand-in for a paid model, as the developers' guide allows. Store, reader, verifier and policy
are real, over the project's own small texts."""

from __future__ import annotations

import pytest

from rag_core.generation.prompts import EVIDENCE_OPEN, EVIDENCE_TASK
from rag_core.config import get_settings
from rag_core.workspace import Workspace
from tests.generation.test_answer_path import OP, Script

QUESTION = "How often does the ferry to Hallundsvik sail?"
QUOTE = ("A car ferry runs between Portvessa and the mainland port of Hallundsvik four times a day; the crossing "
         "takes 75 minutes.")


class Asked(Script):
    """Remembers whether the answer prompt asked for evidence."""

    asked: list = []

    def reply(self, messages):
        text = "\n".join(m.get("content") if isinstance(m.get("content"), str) else "" for m in messages)
        if "Question:" in text and "yes or no" not in text:
            self.asked.append(EVIDENCE_TASK in text)
        return super().reply(messages)


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    root = tmp_path_factory.mktemp("ferry_docs")
    (root / "portvessa.md").write_text(
        "# Portvessa\n\n## Getting there\n\n" + QUOTE + " Vessa Airstrip, north of Portvessa, has scheduled flights to "
        "the provincial capital twice a week. There is no railway on the island.\n")
    (root / "office.md").write_text("# Office rules\n\nVisitors sign in at the front desk.\n")
    return root


def workspace(tmp_path, docs, base_url) -> Workspace:
    ws = Workspace(get_settings(tmp_path / "data", openai_base_url=base_url, openai_api_key="test",
                                llm_model="scripted", llm_crag=False, llm_condense=False))
    ws.create_kb("k", caller=OP)
    ws.ingest("k", [docs / "portvessa.md", docs / "office.md"], caller=OP)
    return ws


def block(*quotes: str) -> str:
    return f"\n{EVIDENCE_OPEN}\n" + "\n".join(f'[1] "{q}"' for q in quotes) + "\n</evidence>"


def test_the_block_is_never_shown_and_the_true_answer_reads_supported(tmp_path, server, docs):
    said = "The ferry to Hallundsvik sails four times daily, and each crossing lasts 75 minutes [1]."
    server.reader = Asked({QUESTION: said + block(QUOTE)})
    Asked.asked = []
    ws = workspace(tmp_path, docs, server.base_url)
    events = list(ws.answers.chain.stream(ws.answer_request(["k"], QUESTION, caller=OP)))
    a = events[-1].answer
    shown = "".join(e.text for e in events if e.kind == "token")
    assert Asked.asked and all(Asked.asked)  # the prompt asked for the quotes
    assert "evidence" not in shown and "car ferry runs" not in shown and "evidence" not in a.text
    assert not a.abstained, (a.decided_by, a.reason, a.signals)
    assert [c.label for c in a.claims] == ["supported"]
    ws.close()


def test_a_fact_the_quote_lacks_is_caught_though_the_passage_holds_it(tmp_path, server, docs):
    """"Twice a week" is in the passage, about the flights: held to its quote, the ferry sentence
    is unsupported, and with no supported sentence the answer is withheld."""
    server.reader = Asked({QUESTION: "The ferry to Hallundsvik sails twice a week [1]." + block(QUOTE)})
    ws = workspace(tmp_path, docs, server.base_url)
    a = ws.ask(["k"], QUESTION, caller=OP)
    assert a.abstained and a.decided_by == "verification"
    ws.close()
