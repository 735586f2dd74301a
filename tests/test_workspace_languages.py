"""A data folder from before languages, opened by this version (Workspace._backfill_languages)."""

from __future__ import annotations

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace

OP = Caller.operator()
GERMAN = ("# Reisekosten\n\nReisekosten werden innerhalb von 30 Tagen nach Einreichung der Belege erstattet. "
          "Für Bahnreisen gilt die zweite Klasse, für Flugreisen die Economy-Klasse.\n")
ENGLISH = ("# Travel expenses\n\nTravel expenses are reimbursed within 30 days of submitting the receipts. "
           "Train journeys are booked in second class.\n")


def terms_of(ws, doc_id):
    return [bytes(r[0]) for r in ws.db.query("SELECT terms FROM chunks WHERE doc_id=? ORDER BY ordinal", (doc_id,))]


def test_an_old_folder_reads_english_exactly_as_before_and_its_german_document_in_german(tmp_path):
    settings = get_settings(tmp_path / "data")
    (tmp_path / "reise.md").write_text(GERMAN, encoding="utf-8")
    (tmp_path / "travel.md").write_text(ENGLISH, encoding="utf-8")
    ws = Workspace(settings)
    ws.create_kb("docs", caller=OP)
    ws.ingest("docs", [tmp_path / "reise.md", tmp_path / "travel.md"], caller=OP)
    kb = ws.get_kb("docs", caller=OP)
    docs = {d.source: d for d in ws.list_documents("docs", caller=OP)}
    de, en = docs["reise.md"].doc_id, docs["travel.md"].doc_id
    # what the folder held before languages: every chunk indexed as English, no language known
    for doc_id in (de, en):
        ws.store.reanalyse_document(kb.kb_id, doc_id, "")
    with ws.db.transaction() as c:
        c.execute("UPDATE documents SET language=NULL, language_source=NULL")
    english_terms = terms_of(ws, en)
    before = [(r.chunk.chunk_id, round(r.score, 6)) for r in
              ws.search(["docs"], "How fast are travel expenses reimbursed?", k=5, caller=OP).results]
    german_q = "Wann werden Reisekosten erstattet?"
    assert ws.store.get_chunks([f"{kb.kb_id}/{de}#0"])[0].language == ""
    ws.close()

    ws = Workspace(settings)  # the upgrade runs once, on opening
    try:
        got = {d.source: (d.language, d.language_source) for d in ws.list_documents("docs", caller=OP)}
        assert got == {"reise.md": ("de", "detected"), "travel.md": ("en", "detected")}
        assert terms_of(ws, en) == english_terms  # the English index is untouched
        assert [(r.chunk.chunk_id, round(r.score, 6)) for r in
                ws.search(["docs"], "How fast are travel expenses reimbursed?", k=5, caller=OP).results] == before
        assert all(c.language == "de" for c in ws.store.document_chunks(kb.kb_id, de))
        hits = ws.search(["docs"], german_q, k=1, mode="keyword", caller=OP).results
        assert hits[0].chunk.doc_id == de
        assert ws.appdb.documents_without_language() == []
    finally:
        ws.close()


def test_an_owner_corrects_a_documents_language_and_its_keyword_index_follows(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    try:
        (tmp_path / "tabla.md").write_text("Las contraseñas se cambian cada año en el portal.", encoding="utf-8")
        ws.create_kb("docs", caller=OP)
        ws.ingest("docs", [tmp_path / "tabla.md"], caller=OP, language="en")  # wrongly given
        doc = ws.list_documents("docs", caller=OP)[0]
        assert (doc.language, doc.language_source) == ("en", "set")
        assert ws.search(["docs"], "cambiar", k=3, mode="keyword", caller=OP).results == []
        fixed = ws.set_document_language("docs", doc.doc_id, "ES", caller=OP)
        assert fixed.language == "es"
        assert ws.list_documents("docs", caller=OP)[0].language_source == "set"
        assert ws.search(["docs"], "cambiar", k=3, mode="keyword", caller=OP).results
    finally:
        ws.close()
