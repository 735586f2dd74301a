"""Ingestion end to end with the real embedding model and the real SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.workspace import Workspace
from tests.ingest.loaders.util import pdf_with_a_broken_page

OP = Caller.operator()  # the local no-auth user: access is tested in tests/test_access_matrix.py
SAMPLES = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pdfs-py-pdf-sample-files"


@pytest.fixture
def ws(tmp_path):
    w = Workspace(get_settings(tmp_path / "data"))
    yield w
    w.close()


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_batch_goes_on_past_bad_files(ws, tmp_path):
    kb = ws.create_kb("docs", caller=OP)
    good = write(tmp_path / "rajiv-pant-biography.md", "# Early life\n\nRajiv grew up in Kathmandu and studied physics.\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"\x00\x01garbage" * 50)
    odd = write(tmp_path / "notes.xyz", "hello")
    stats = ws.ingest(kb.name, [good, empty, junk, odd], caller=OP)
    by_file = {r.file: r for r in stats.reports}
    assert by_file["rajiv-pant-biography.md"].status == "ingested"
    assert by_file["rajiv-pant-biography.md"].chunks >= 1
    for bad in ("empty.txt", "junk.pdf", "notes.xyz"):
        assert by_file[bad].status == "failed" and by_file[bad].reason
    assert "unsupported" in by_file["notes.xyz"].reason
    docs = ws.appdb.list_documents(kb.kb_id)
    assert [d.source for d in docs] == ["rajiv-pant-biography.md"]
    assert ws.appdb.list_documents(kb.kb_id, status=None) == docs  # nothing half-registered
    # the file name's words are searchable: "biography" appears only in the file name
    hits = ws.search([kb.name], "rajiv biography", k=3, mode="keyword", caller=OP).results
    assert hits and hits[0].chunk.source == "rajiv-pant-biography.md"
    assert ws.store.health()["ok"]


def test_a_page_that_could_not_be_read_is_in_the_file_report(ws, tmp_path):
    """A PDF whose page 2 has a damaged content stream goes in (pages 1 and 3 are indexed),
    and its report, the line the user sees, names page 2 as left out. The file is read by
    the isolated worker process, as uploads are."""
    kb = ws.create_kb("damaged", caller=OP)
    pdf = tmp_path / "field-notes.pdf"
    pdf.write_bytes(pdf_with_a_broken_page(
        ["The heron nests by the northern lake.", "This page is damaged.", "The otter hunts along the river bank."],
        broken=2))
    report = ws.ingestor.ingest(kb, [pdf], embed=False).reports[0]
    assert report.status == "ingested" and report.pages == 3
    assert "page 2 " in report.reason and "could not be extracted" in report.reason, report.reason
    chunks = ws.store.document_chunks(kb.kb_id, report.doc_ids[0])
    assert any("otter" in c.text and c.page_end == 3 for c in chunks)
    assert not any("damaged" in c.text for c in chunks)
    fine = tmp_path / "clean.pdf"
    fine.write_bytes(pdf_with_a_broken_page(["A clean page about kingfishers and their nests."], broken=0))
    clean = ws.ingestor.ingest(kb, [fine], embed=False).reports[0]
    assert clean.status == "ingested" and clean.reason == ""


def test_duplicate_and_new_version(ws, tmp_path):
    kb = ws.create_kb("dups", caller=OP)
    f = write(tmp_path / "policy.txt", "Employees may work remotely on Fridays.")
    assert ws.ingest(kb.name, [f], caller=OP).reports[0].status == "ingested"
    again = ws.ingest(kb.name, [f], caller=OP).reports[0]
    assert again.status == "duplicate"
    copy = write(tmp_path / "copy-of-policy.txt", "Employees may work remotely on Fridays.")
    assert ws.ingest(kb.name, [copy], caller=OP).reports[0].status == "duplicate"
    assert len(ws.appdb.list_documents(kb.kb_id)) == 1
    # a changed file with the same name replaces the old version
    write(f, "Employees may work remotely on Mondays and Fridays.")
    assert ws.ingest(kb.name, [f], caller=OP).reports[0].status == "ingested"
    docs = ws.appdb.list_documents(kb.kb_id)
    assert len(docs) == 1
    texts = [c.text for c in ws.store.document_chunks(kb.kb_id, docs[0].doc_id)]
    assert any("Mondays" in t for t in texts)
    assert ws.store.count(kb.kb_id) == docs[0].chunks


def test_jsonl_records_keep_their_ids_and_reimport_is_idempotent(ws, tmp_path):
    kb = ws.create_kb("records", caller=OP)
    recs = [{"_id": "r1", "title": "Zebras", "text": "Zebras have black and white stripes."},
            {"id": 2, "title": "Owls", "text": "Owls hunt at night."}]
    f = tmp_path / "recs.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in recs))
    rep = ws.ingest(kb.name, [f], caller=OP).reports[0]
    assert rep.status == "ingested" and sorted(rep.doc_ids) == ["2", "r1"]
    assert ws.ingest(kb.name, [f], caller=OP).reports[0].status == "duplicate"
    hit = ws.search([kb.name], "stripes", k=1, mode="keyword", caller=OP).results[0]
    assert hit.chunk.doc_id == "r1" and hit.chunk.title == "Zebras"
    # the same records in a second knowledge base do not collide
    kb2 = ws.create_kb("records-2", caller=OP)
    assert ws.ingest(kb2.name, [f], caller=OP).reports[0].status == "ingested"
    assert ws.store.count(kb.kb_id) == ws.store.count(kb2.kb_id) == 2


def test_delete_removes_everywhere(ws, tmp_path):
    kb = ws.create_kb("del", caller=OP)
    a = write(tmp_path / "a.txt", "The capybara is the largest living rodent.")
    b = write(tmp_path / "b.txt", "The blue whale is the largest animal.")
    ws.ingest(kb.name, [a, b], caller=OP)
    doc = next(d for d in ws.appdb.list_documents(kb.kb_id) if d.source == "a.txt")
    assert ws.delete_document(kb.name, doc.doc_id, caller=OP)
    assert all(r.chunk.doc_id != doc.doc_id for r in ws.search([kb.name], "capybara rodent", k=5, mode="keyword", caller=OP).results)
    assert all(r.chunk.doc_id != doc.doc_id for r in ws.search([kb.name], "capybara rodent", k=5, mode="vector", caller=OP).results)
    assert not ws.delete_document(kb.name, doc.doc_id, caller=OP)
    assert not Path(doc.stored_path).exists()


def test_vector_search_finds_meaning_not_words(ws, tmp_path):
    kb = ws.create_kb("sem", caller=OP)
    write(tmp_path / "cars.txt", "The automobile needs new tyres and an oil change.")
    write(tmp_path / "food.txt", "Bake the bread at 220 degrees for thirty minutes.")
    ws.ingest(kb.name, [tmp_path / "cars.txt", tmp_path / "food.txt"], caller=OP)
    top = ws.search([kb.name], "vehicle maintenance", k=1, mode="vector", caller=OP).results[0]
    assert top.chunk.source == "cars.txt"


def test_embedding_cache_spares_the_model(ws, tmp_path):
    kb = ws.create_kb("cache", caller=OP)
    f = write(tmp_path / "x.txt", "Cached text about glaciers and their retreat.")
    first = ws.ingest(kb.name, [f], caller=OP)
    assert first.embedded == 1
    ws.delete_document(kb.name, first.reports[0].doc_ids[0], caller=OP)
    second = ws.ingest(kb.name, [f], caller=OP)
    assert second.reports[0].status == "ingested" and second.embedded == 0


def test_interrupted_ingest_is_cleaned_up(ws, tmp_path):
    """A registry row left 'indexing' by a dead process, with chunks written: the next run
    removes both (the SIGKILL version of this lives with the reliability tests)."""
    from rag_core.models import Document

    kb = ws.create_kb("crash", caller=OP)
    f = write(tmp_path / "ok.txt", "Survivor text about lighthouses.")
    ws.ingest(kb.name, [f], caller=OP)
    ghost = Document(doc_id="ghost", kb_id=kb.kb_id, source="ghost.txt", title="", mime="text/plain", sha256="x")
    ws.appdb.begin_document(ghost)
    with ws.db.transaction() as c:  # its writer's lease ran out: the writer is gone
        c.execute("UPDATE documents SET lease_owner='another-host:gone', lease_until=0 WHERE doc_id='ghost'")
    from rag_core.models import Chunk
    import numpy as np

    ws.store.add_chunks([Chunk(chunk_id=f"{kb.kb_id}/ghost#0", doc_id="ghost", kb_id=kb.kb_id, text="ghost lighthouse")],
                        np.ones((1, 384), dtype=np.float32) / np.sqrt(384))
    assert ws.ingestor.recover_interrupted() == 1
    assert ws.appdb.get_document(kb.kb_id, "ghost") is None
    assert all(r.chunk.doc_id != "ghost" for r in ws.search([kb.name], "lighthouse", k=5, mode="keyword", caller=OP).results)


@pytest.mark.skipif(not SAMPLES.exists(), reason="../shared/data/pdfs-py-pdf-sample-files not present")
def test_real_pdf_folder(ws):
    kb = ws.create_kb("pdfs", caller=OP)
    folder = SAMPLES / "004-pdflatex-4-pages"
    enc = SAMPLES / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"
    img = SAMPLES / "007-imagemagick-images" / "imagemagick-images.pdf"
    stats = ws.ingest(kb.name, [folder, enc, img], caller=OP)
    by = {r.file: r for r in stats.reports}
    assert by["pdflatex-4-pages.pdf"].status == "ingested" and by["pdflatex-4-pages.pdf"].pages == 4
    assert by["imagemagick-images.pdf"].status == "failed" and "no text" in by["imagemagick-images.pdf"].reason
    doc = next(d for d in ws.appdb.list_documents(kb.kb_id) if d.source == "pdflatex-4-pages.pdf")
    pages = {c.page_start for c in ws.store.document_chunks(kb.kb_id, doc.doc_id)}
    assert pages == {1, 2, 3, 4}


def test_batch_and_document_limits_have_clear_messages(tmp_path):
    from rag_core.errors import GroundworkError

    w = Workspace(get_settings(tmp_path / "lim", max_files_per_batch=2, max_chunks_per_doc=3, chunk_size=200,
                               chunk_overlap=0))
    w.create_kb("lim", caller=OP)
    files = [write(tmp_path / f"f{i}.txt", f"file {i}") for i in range(3)]
    with pytest.raises(GroundworkError, match="3 files in one batch; the limit is 2"):
        w.ingest("lim", files, caller=OP)
    long = write(tmp_path / "long.txt", "\n\n".join(f"Paragraph {i} " + "words " * 40 for i in range(10)))
    rep = w.ingest("lim", [long, files[0]], caller=OP).reports
    assert rep[0].status == "failed" and "limit is 3" in rep[0].reason
    assert rep[1].status == "ingested"
    w.close()
