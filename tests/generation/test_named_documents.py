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
