"""XLSX: sheets as pages, every row with its header, row ranges as sections."""

from __future__ import annotations

import zipfile

from rag_core.ingest.chunker import chunk_document
from rag_core.ingest.loaders import load_file


def make_xlsx(path, rows=120):
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "Inventory"
    ws.append(["Part", "Bin", "Quantity"])
    for i in range(rows):
        ws.append([f"bolt-{i}", f"B{i % 9}", i * 3])
    other = wb.create_sheet("Suppliers")
    other.append(["Supplier", "Country"])
    other.append(["Acme Fasteners", "Norway"])
    wb.save(path)
    return path


def test_xlsx_rows_carry_their_header_sheet_and_row_range(tmp_path):
    doc = load_file(make_xlsx(tmp_path / "stock.xlsx"))[0]
    assert doc.page_count == 2 and doc.metadata["rows"] == 121
    chunks = chunk_document(doc, doc_id="d", kb_id="k", chunk_size=600, chunk_overlap=0)
    c = next(c for c in chunks if "bolt-100\n" in c.text + "\n")
    assert "Part: bolt-100" in c.text and "Quantity: 300" in c.text  # the header goes with every row
    assert c.section.startswith("Inventory") and "Rows" in c.section
    lo, hi = (int(x) for x in c.section.rsplit("Rows ", 1)[1].split("–"))
    assert lo <= 102 <= hi  # bolt-100 is spreadsheet row 102 (header in row 1)
    sup = next(c for c in chunks if "Acme" in c.text)
    assert sup.page_start == 2 and "Country: Norway" in sup.text


def _with_core_xml(src, dst, core: str | None):
    """`src` with its docProps/core.xml replaced by `core` (dropped for None)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            if item.filename != "docProps/core.xml":
                zout.writestr(item, zin.read(item))
            elif core is not None:
                zout.writestr(item, core)
    return dst


_CORE = ('<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
         'xmlns:dcterms="http://purl.org/dc/terms/">{}</cp:coreProperties>')


def test_xlsx_date_from_core_properties(tmp_path):
    """Modified, else created; openpyxl fills a missing one in with the current time, which
    is not a date the file states."""
    src = make_xlsx(tmp_path / "src.xlsx", rows=2)
    both = _CORE.format("<dcterms:created>2020-01-02T00:00:00Z</dcterms:created>"
                        "<dcterms:modified>2024-02-03T04:05:06Z</dcterms:modified>")
    created = _CORE.format("<dcterms:created>2020-01-02T00:00:00Z</dcterms:created>")
    assert load_file(_with_core_xml(src, tmp_path / "a.xlsx", both))[0].metadata["date"] == "2024-02-03"
    assert load_file(_with_core_xml(src, tmp_path / "b.xlsx", created))[0].metadata["date"] == "2020-01-02"
    for name, core in (("c.xlsx", _CORE.format("")), ("d.xlsx", None)):
        doc = load_file(_with_core_xml(src, tmp_path / name, core))[0]
        assert "date" not in doc.metadata and doc.metadata["rows"] == 3
