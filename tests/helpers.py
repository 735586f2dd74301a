"""Test fixtures that must be built by hand because no writer library is installed."""

from __future__ import annotations


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


_STYLES = {"[code]": b"/F2 10 Tf", "[h]": b"/F3 15 Tf", "[small]": b"/F1 6 Tf"}  # Courier; Helvetica-Bold, larger; small


def make_pdf(pages: list[str], *, title: str | None = None) -> bytes:
    """A valid PDF with one page per string, each line of a string on its own text line
    (Helvetica 11 pt, WinAnsi so Latin-1 accents survive). `title` goes into /Info. A line
    starting with "[code]" is set in Courier 10 pt, one starting with "[h]" in Helvetica-Bold
    15 pt, one starting with "[small]" in Helvetica 6 pt (the marker itself is not drawn)."""
    objects: list[bytes] = []  # object n is objects[n - 1]

    def add(body: bytes) -> int:
        objects.append(body)
        return len(objects)

    catalog = add(b"")  # filled once the page tree exists
    tree = add(b"")
    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    mono = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Courier /Encoding /WinAnsiEncoding >>")
    bold = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    kids = []
    for text in pages:
        ops = [b"BT", b"/F1 11 Tf", b"13 TL", b"56 790 Td"]
        for line in text.split("\n"):
            style = next((k for k in _STYLES if line.startswith(k)), None)
            if style:
                ops += [_STYLES[style], _pdf_string(line[len(style):]) + b" Tj T*", b"/F1 11 Tf"]
            else:
                ops.append(_pdf_string(line) + b" Tj T*")
        ops.append(b"ET")
        stream = b"\n".join(ops)
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(
            add(
                b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 595 842] /Contents %d 0 R "
                b"/Resources << /Font << /F1 %d 0 R /F2 %d 0 R /F3 %d 0 R >> >> >>" % (tree, content, font, mono, bold)
            )
        )
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids),
        len(kids),
    )
    info = add(b"<< /Title " + _pdf_string(title) + b" >>") if title is not None else None

    return pdf_file(objects, catalog, info)


def pdf_file(objects: list[bytes], root: int, info: int | None = None) -> bytes:
    """The PDF file around numbered object bodies (object n is objects[n - 1]): header,
    objects, cross-reference table and trailer."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    trailer = b"<< /Size %d /Root %d 0 R" % (len(objects) + 1, root)
    if info:
        trailer += b" /Info %d 0 R" % info
    out += b"trailer\n" + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


# The steps every answer passes through, as LangChain callbacks name them (RAG_TRACE=jsonl:…):
# the chat page, `ask` and the benchmarks must all show these, from the one chain.
CHAIN_STEPS = {"groundwork_answer", "condense", "retrieve", "GroundworkRetriever", "gate", "respond", "verify"}


def traced_steps(path) -> list[str]:
    """Names of the steps started, in order, from a RAG_TRACE=jsonl:PATH file."""
    from rag_core.generation.tracing import read_trace

    return [r["name"] for r in read_trace(path) if r["event"] == "start"]
