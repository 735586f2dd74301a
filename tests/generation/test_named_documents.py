"""Documents named by what they are (issue 53, part 3), through the Workspace: the description
read at ingest (the first heading or line) names a document whose file name and title do not,
and "show me X" answers with the document itself."""

from __future__ import annotations

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()


def test_a_document_is_found_by_what_its_first_line_says(tmp_path):
    (tmp_path / "scan-0042.txt").write_text(
        "Travel reimbursement rules for field staff\n\nTrain tickets are reimbursed in second class. Hotel nights "
        "are reimbursed up to 120 euros. Meals are paid by a daily allowance of 28 euros.\n")
    (tmp_path / "menu.txt").write_text("Canteen menu for March\n\nSoup on Mondays, fish on Fridays.\n")
    ws = Workspace(get_settings(tmp_path / "data", answer_cache=False))
    try:
        ws.create_kb("hr", caller=OP)
        ws.ingest("hr", [tmp_path / "scan-0042.txt", tmp_path / "menu.txt"], caller=OP)
        docs = {d.source: d for d in ws.list_documents("hr", caller=OP)}
        assert docs["scan-0042.txt"].description == "Travel reimbursement rules for field staff"
        a = ws.ask(["hr"], "Summarize the travel reimbursement rules", caller=OP)
        assert a.route == "document" and [d["source"] for d in a.plan["documents"]] == ["scan-0042.txt"]
        assert not a.abstained and "120 euros" in a.text
        shown = ws.ask(["hr"], "Show me the canteen menu", caller=OP)
        assert shown.plan.get("intent") == "show" and shown.plan["documents"][0]["source"] == "menu.txt"
        assert any(c.source == "menu.txt" for c in shown.citations)  # the page opens the document from these
    finally:
        ws.close()


def test_with_a_model_a_one_line_summary_made_at_ingest_names_the_document(tmp_path):
    """The summary is the fast model's; here LangChain's fake chat model stands in for it (no
    model runs in CI). The planner then finds the scan by what the summary says."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from rag_core.generation.planner import CatalogueEntry, rule_route

    (tmp_path / "scan-0043.txt").write_text("12.03.2026\n\nSoup on Mondays, fish on Fridays, desserts change weekly.\n")
    ws = Workspace(get_settings(tmp_path / "data", answer_cache=False, openai_base_url="http://127.0.0.1:9/v1"))
    try:
        fake = FakeListChatModel(responses=["Canteen menu listing the week's dishes"])
        ws.__dict__["fast_chat_model"] = fake  # the configured fast model, replaced by the stand-in
        ws.create_kb("hr", caller=OP)
        assert ws.ingest("hr", [tmp_path / "scan-0043.txt"], caller=OP).reports[0].status == "ingested"
        doc = ws.list_documents("hr", caller=OP)[0]
        assert doc.description.endswith(" — Canteen menu listing the week's dishes")
        cat = [CatalogueEntry(doc.kb_id, doc.doc_id, doc.source, doc.title, description=doc.description)]
        r = rule_route("Summarize the canteen menu", cat)
        assert r.kind == "document" and r.documents[0].source == "scan-0043.txt"
    finally:
        ws.close()


def test_a_failing_model_leaves_the_first_line(tmp_path):
    from rag_core.ingest.pipeline import describe
    from rag_core.models import LoadedDocument

    ld = LoadedDocument(source="a.txt", title="a", mime="text/plain", pages=["Travel rules for field staff\n\nText."])

    def broken(text):
        raise TimeoutError("the model did not answer")

    assert describe(ld, broken) == "Travel rules for field staff"
    assert describe(ld, lambda text: "Company travel policy") == "Travel rules for field staff — Company travel policy"
