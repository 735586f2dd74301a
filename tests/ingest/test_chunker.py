from __future__ import annotations

import re

import pytest

from rag_core.ingest.chunker import chunk_document
from rag_core.text.sentences import sentence_starts, split_sentences
from rag_core.ingest.loaders import load_file
from rag_core.models import LoadedDocument
from tests.helpers import make_pdf


def doc_of(*pages: str, title: str = "Doc Title", source: str = "doc.md") -> LoadedDocument:
    return LoadedDocument(source=source, title=title, mime="text/markdown", pages=list(pages))


def chunk(doc: LoadedDocument, **kwargs):
    kwargs.setdefault("doc_id", "d1")
    kwargs.setdefault("kb_id", "kb1")
    return chunk_document(doc, **kwargs)


def sentences(n: int, start: int = 0) -> str:
    return " ".join(f"Sentence number {i} talks about topic {i} in some detail." for i in range(start, start + n))


def full_text(doc: LoadedDocument) -> str:
    return "\n\n".join(doc.pages)


def assert_positions(doc: LoadedDocument, chunks) -> None:
    """The documented position contract holds for every chunk."""
    full = full_text(doc)
    for c in chunks:
        own = full[c.char_start : c.char_end]
        if c.chunk_type == "table" and c.text != own:
            assert c.text.endswith("\n" + own)  # a repeated header row, then the rows
        else:
            assert c.text == own
        assert c.line_start == full.count("\n", 0, c.char_start) + 1
        assert c.line_end == full.count("\n", 0, c.char_end - 1) + 1
        assert c.text.strip() == c.text and c.text


# ----------------------------------------------------------------------------- sentences


def test_split_sentences():
    text = (
        'Dr. Smith arrived at 3.5 p.m. today. He said "Stop." Then J. Doe left! '
        "Was it 2024? Yes, e.g. because of Fig. 2 it was.\n\nNew paragraph without end\n- a list item"
    )
    assert split_sentences(text) == [
        "Dr. Smith arrived at 3.5 p.m. today.",
        'He said "Stop."',
        "Then J. Doe left!",
        "Was it 2024?",
        "Yes, e.g. because of Fig. 2 it was.",
        "New paragraph without end",
        "- a list item",
    ]


def test_split_sentences_needs_a_capital_after_the_stop():
    assert split_sentences("version 2. then lower case continues.") == ["version 2. then lower case continues."]
    assert split_sentences("") == []


def test_sentence_starts_respects_bounds():
    text = "One. Two. Three. Four."
    assert sentence_starts(text) == [5, 10, 17]
    assert sentence_starts(text, 6, 16) == [10]


# ----------------------------------------------------------------------------- fields


def test_fields_are_filled():
    doc = doc_of("# Intro\n\nHello world.", title="T", source="s.md")
    [c] = chunk(doc, doc_id="abc", kb_id="kb9")
    assert (c.chunk_id, c.doc_id, c.kb_id, c.ordinal) == ("abc:00000", "abc", "kb9", 0)
    assert (c.title, c.source, c.section, c.chunk_type) == ("T", "s.md", "Intro", "paragraph")
    assert c.text == "# Intro\n\nHello world."
    assert (c.page_start, c.page_end, c.line_start, c.line_end) == (1, 1, 1, 3)


def test_ordinals_are_consecutive_and_ids_unique():
    doc = doc_of(sentences(200))
    chunks = chunk(doc, chunk_size=300)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert chunks[12].chunk_id == "d1:00012"
    assert len({c.chunk_id for c in chunks}) == len(chunks)


@pytest.mark.parametrize("pages", [[], [""], ["  \n\n  "], ["# Only\n\n## Headings"]])
def test_nothing_to_chunk(pages):
    assert chunk(doc_of(*pages)) == []


def test_bad_settings():
    with pytest.raises(ValueError):
        chunk(doc_of("x"), chunk_size=5)
    with pytest.raises(ValueError):
        chunk(doc_of("x"), chunk_overlap=-1)


# ----------------------------------------------------------------------------- sections


def test_heading_path_is_the_section():
    doc = doc_of("Preface text.\n\n# A\n\npara a\n\n## B\n\npara b\n\n### C ###\n\npara c\n\n## D\n\npara d\n\n# E\n\npara e")
    chunks = chunk(doc)
    assert [(c.section, c.text) for c in chunks] == [
        ("", "Preface text."),
        ("A", "# A\n\npara a"),
        ("A > B", "## B\n\npara b"),
        ("A > B > C", "### C ###\n\npara c"),
        ("A > D", "## D\n\npara d"),
        ("E", "# E\n\npara e"),
    ]
    assert_positions(doc, chunks)


def test_no_heading_only_chunks():
    chunks = chunk(doc_of("# A\n\n## B\n\nBody under B.\n\n## Empty\n\n# Last"))
    assert [(c.section, c.text) for c in chunks] == [("A > B", "## B\n\nBody under B.")]


def test_chunks_never_cross_headings():
    parts = []
    for s in range(6):
        parts.append(f"## Part {s}")
        parts += [sentences(4, start=s * 100 + p * 10) for p in range(5)]
    doc = doc_of("\n\n".join(parts))
    chunks = chunk(doc, chunk_size=400, chunk_overlap=100)
    assert len(chunks) > 12
    for c in chunks:
        headings = re.findall(r"^## Part (\d)$", c.text, flags=re.M)
        assert len(headings) <= 1
        if headings:
            assert c.text.startswith(f"## Part {headings[0]}\n")
        assert c.section.startswith("Part ")
        number = int(c.section.split()[-1])
        # every sentence in the chunk belongs to its section
        assert all(int(n) // 100 == number for n in re.findall(r"number (\d+)", c.text))
    assert_positions(doc, chunks)


def test_heading_stays_with_a_long_paragraph():
    doc = doc_of("# Title Here\n\n" + sentences(40))
    chunks = chunk(doc, chunk_size=500, chunk_overlap=0)
    assert chunks[0].text.startswith("# Title Here\n\nSentence number 0 ")
    assert all(len(c.text) <= 500 for c in chunks)
    assert all(c.section == "Title Here" for c in chunks)


def test_hash_inside_code_is_not_a_heading():
    doc = doc_of("# Real\n\n```python\n# comment\nx = 1\n```")
    [c] = chunk(doc)
    assert c.section == "Real"
    assert c.chunk_type == "code"


# ----------------------------------------------------------------------------- blocks


def test_code_block_kept_whole():
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})  # step" for i in range(20)) + "\n```"
    doc = doc_of(sentences(8) + "\n\n" + code + "\n\n" + sentences(8, start=50))
    chunks = chunk(doc, chunk_size=1000, chunk_overlap=100)
    holders = [c for c in chunks if "value_0 =" in c.text]
    assert len(holders) == 1 and code in holders[0].text
    assert holders[0].chunk_type == "code"
    assert sum(c.text.count("value_7 =") for c in chunks) == 1  # code is never repeated as overlap
    assert_positions(doc, chunks)


def test_long_code_block_split_on_lines():
    lines = [f"    result_{i} = function_call(argument_{i}, other={i})" for i in range(60)]
    doc = doc_of("```\n" + "\n".join(lines) + "\n```")
    chunks = chunk(doc, chunk_size=400, chunk_overlap=100)
    assert len(chunks) > 3
    seen = []
    for c in chunks:
        assert len(c.text) <= 400 and c.chunk_type == "code"
        body = [line for line in c.text.split("\n") if not line.startswith("```")]
        assert all(line.strip() in {x.strip() for x in lines} for line in body)  # whole lines only
        seen += [line.strip() for line in body]
    assert seen == [line.strip() for line in lines]  # each line once, in order: no overlap in code


def test_long_table_split_repeats_header():
    header = "| id | name | description |\n| --- | --- | --- |"
    rows = [f"| {i} | item {i} | a fairly ordinary description of item {i} |" for i in range(40)]
    doc = doc_of("Intro.\n\n## Table\n\n" + header + "\n" + "\n".join(rows) + "\n\nAfter the table.")
    chunks = chunk(doc, chunk_size=600, chunk_overlap=100)
    tables = [c for c in chunks if c.chunk_type == "table"]
    assert len(tables) >= 4
    found_rows = []
    for n, c in enumerate(tables):
        assert len(c.text) <= 600
        lines = c.text.split("\n")
        if n == 0:
            assert lines[0] == "## Table"
            lines = lines[2:]
        assert "\n".join(lines[:2]) == header
        found_rows += lines[2:]
    found_rows = [r for r in found_rows if r.startswith("| ")]
    assert found_rows == rows
    assert_positions(doc, chunks)


def test_list_block_type():
    doc = doc_of("Shopping:\n\n- apples and more apples\n- pears\n- plums from the garden\n1. first\n2) second")
    [c] = chunk(doc)
    assert c.chunk_type == "list"


def test_long_list_split_between_items():
    items = [f"- item {i}: " + "words " * 12 for i in range(30)]
    doc = doc_of("\n".join(items))
    chunks = chunk(doc, chunk_size=300, chunk_overlap=0)
    assert len(chunks) > 5
    for c in chunks:
        assert c.chunk_type == "list" and c.text.startswith("- item ")
        assert all(line.startswith("- item ") for line in c.text.split("\n"))


# ----------------------------------------------------------------------------- splitting and overlap


def test_long_paragraph_split_at_sentences_within_size():
    doc = doc_of(sentences(60))
    size, overlap = 300, 80
    chunks = chunk(doc, chunk_size=size, chunk_overlap=overlap)
    assert len(chunks) > 10
    full = full_text(doc)
    for c in chunks:
        assert len(c.text) <= size + overlap
        assert c.text.endswith("detail.")  # ends at a sentence end
        # starts at a sentence or at least a word start, never mid-word
        assert c.char_start == 0 or full[c.char_start - 1] == " "
    # every sentence is somewhere
    joined = " ".join(c.text for c in chunks)
    assert all(f"number {i} talks" in joined for i in range(60))
    assert_positions(doc, chunks)


def test_overlap_is_present_and_bounded():
    doc = doc_of(sentences(60))
    chunks = chunk(doc, chunk_size=300, chunk_overlap=80)
    for prev, nxt in zip(chunks, chunks[1:]):
        shared = prev.char_end - nxt.char_start
        assert 0 < shared <= 80  # overlap exists and is at most chunk_overlap
        assert nxt.char_start > prev.char_start  # never a whole earlier chunk again
        assert nxt.text.startswith(prev.text[-shared:])


def test_overlap_starts_at_a_sentence_when_one_fits():
    doc = doc_of(" ".join(f"Short one {i}." for i in range(200)))
    chunks = chunk(doc, chunk_size=200, chunk_overlap=60)
    assert all(c.text.startswith("Short one") for c in chunks)
    assert all(c.char_start < p.char_end for p, c in zip(chunks, chunks[1:]))


def test_zero_overlap_means_disjoint_chunks():
    doc = doc_of(sentences(60))
    chunks = chunk(doc, chunk_size=300, chunk_overlap=0)
    assert all(n.char_start >= p.char_end for p, n in zip(chunks, chunks[1:]))
    assert "".join(c.text for c in chunks).replace(" ", "") == full_text(doc).replace(" ", "")


def test_no_overlap_across_sections():
    doc = doc_of("# A\n\n" + sentences(10) + "\n\n# B\n\n" + sentences(10, start=100))
    chunks = chunk(doc, chunk_size=300, chunk_overlap=100)
    first_b = next(c for c in chunks if c.section == "B")
    assert first_b.text.startswith("# B\n")


def test_word_longer_than_chunk_is_cut_and_terminates():
    doc = doc_of("start " + "x" * 5000 + " end")
    chunks = chunk(doc, chunk_size=1000, chunk_overlap=150)
    assert all(len(c.text) <= 1150 for c in chunks)
    assert sum(c.text.count("x") for c in chunks) >= 5000
    assert chunks[-1].text.endswith("end")


def test_text_without_sentence_ends_split_between_words():
    doc = doc_of(" ".join(f"word{i}" for i in range(2000)))
    chunks = chunk(doc, chunk_size=500, chunk_overlap=50)
    full = full_text(doc)
    for c in chunks:
        assert len(c.text) <= 550
        assert re.fullmatch(r"word\d+( word\d+)*", c.text)  # no word is cut
        assert c.char_end == len(full) or full[c.char_end] == " "


def test_small_paragraphs_are_packed_together():
    paras = [f"Paragraph {i} is short." for i in range(30)]
    doc = doc_of("\n\n".join(paras))
    chunks = chunk(doc, chunk_size=200, chunk_overlap=0)
    assert 3 < len(chunks) < 30
    for c in chunks:
        assert len(c.text) <= 200
        assert all(p.endswith(".") for p in c.text.split("\n\n"))  # paragraphs kept whole


# ----------------------------------------------------------------------------- pages and lines


def test_page_numbers_on_a_generated_pdf(tmp_path):
    words = ["ALPHAWORD", "BRAVOWORD", "CHARLIEWORD"]
    pages = [
        # each line its own text: lines alike but for their numbers at every page's top and
        # bottom would be a running header, which the PDF loader removes
        "\n".join(f"Line {n} of page {p + 1} mentions {words[p] if n == 5 else 'nothing special'} "
                  f"{'abcdefghijkl'[n] * 3} {('red', 'green', 'blue')[p]} here." for n in range(12))
        for p in range(3)
    ]
    path = tmp_path / "three.pdf"
    path.write_bytes(make_pdf(pages))
    [doc] = load_file(path)
    assert doc.page_count == 3
    chunks = chunk(doc, chunk_size=250, chunk_overlap=0)
    for page, word in enumerate(words, start=1):
        [holder] = [c for c in chunks if word in c.text]
        assert holder.page_start == holder.page_end == page
    assert any(c.page_start < c.page_end for c in chunk(doc, chunk_size=2000))
    assert_positions(doc, chunks)


def test_page_ranges_and_lines_across_pages():
    doc = doc_of("p1 line1\np1 line2", "p2 line1", "p3 line1\np3 line2\np3 line3")
    [c] = chunk(doc)
    assert (c.page_start, c.page_end) == (1, 3)
    assert (c.line_start, c.line_end) == (1, 8)
    small = chunk(doc, chunk_size=26, chunk_overlap=0)  # page 1 + page 2 = 27 chars
    assert [(c.page_start, c.page_end) for c in small] == [(1, 1), (2, 2), (3, 3)]
    assert [(c.line_start, c.line_end) for c in small] == [(1, 2), (4, 4), (6, 8)]
    assert_positions(doc, small)


def test_positions_on_mixed_document():
    doc = doc_of(
        "# Guide\n\nIntro para.\n\n- a\n- b\n\n```\ncode\n```",
        "## Table\n\n| a | b |\n| --- | --- |\n" + "\n".join(f"| {i} | {i * i} |" for i in range(50)),
        "## End\n\n" + sentences(30),
    )
    chunks = chunk(doc, chunk_size=200, chunk_overlap=50)
    assert {c.chunk_type for c in chunks} >= {"paragraph", "table"}
    assert_positions(doc, chunks)


# ----------------------------------------------------------------------------- speed


def test_a_large_document_is_chunked_completely():
    section = "\n\n".join(["## Heading", sentences(12), "- item one\n- item two", sentences(30), "| a | b |\n| 1 | 2 |"])
    text = "\n\n".join([section] * 1000)  # ~3.7 MB; its speed: benchmarks/loader_speed.py
    doc = doc_of(*[text[i : i + 40_000] for i in range(0, len(text), 40_000)])
    chunks = chunk(doc)
    assert len(chunks) >= 3000  # 3 per section (slices that cut a sentence are joined back)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert chunks[-1].page_end == doc.page_count


def test_overlap_copies_prose_only():
    code = "```\n" + "\n".join(f"code_line_{i}()" for i in range(8)) + "\n```"
    doc = doc_of(code + "\n\nTiny tail.\n\n" + sentences(12))
    chunks = chunk(doc, chunk_size=200, chunk_overlap=150)
    assert sum(c.text.count("code_line_7") for c in chunks) == 1
    assert chunks[0].text.startswith("```") and "code_line" not in chunks[1].text
    assert chunks[1].text.startswith("Tiny tail.\n\nSentence number 0")  # the prose tail is the overlap
    assert chunks[1].char_start < chunks[0].char_end


def test_a_sentence_running_on_to_the_next_page_stays_whole():
    doc = doc_of("# Setup\n\nTo change the axis range you call the function",
                 "xlim with two numbers. It takes effect at once.",
                 "A new paragraph starts here.\n\nAnother one.")
    chunks = chunk(doc, chunk_size=2000)
    text = " ".join(" ".join(c.text.split()) for c in chunks)
    assert "you call the function xlim with two numbers." in text
    [c] = [c for c in chunks if "xlim" in c.text]
    assert c.page_start == 1 and c.page_end >= 2
    assert len(chunk(doc_of("A page that ends a sentence here.", "starts lowercase after it."),
                     chunk_size=2000)[0].text.split("\n\n")) == 2  # a finished sentence still ends its paragraph


def test_a_run_of_numbers_or_an_index_leader_is_never_a_heading(tmp_path):
    """gnuplot's manual prints a data-file comment "# 1 2 3 4" and asymptote's index an entry
    "# . . . 62": read as Markdown headings they named hundreds of passages' sections
    ("1 2 3 4 > Key"). In Markdown the rule is the chunker's; in a PDF the page's own "#"
    never becomes one of our headings at all."""
    md = LoadedDocument(source="m.md", title="M", mime="text/markdown", pages=[
        "# Data files\n\nComments start with #:\n\n# 1 2 3 4\n\nis a comment line.\n\n## Key\n\nThe key is the legend.\n\n"
        "# . . . . . . 62\n\nAn index.\n\n# 2024\n\nA year is a fine heading.\n"])
    sections = {c.section for c in chunk_document(md, doc_id="d", kb_id="k", chunk_size=200, chunk_overlap=0)}
    assert not any("1 2 3 4" in s or ". . ." in s for s in sections), sections
    assert "Data files > Key" in sections and "2024" in sections
    path = tmp_path / "gnuplot.pdf"
    path.write_bytes(make_pdf(["[h]Datafile comments", "Lines starting with # are comments, so\n# 1 2 3 4\n"
                               "is skipped.\n[h]Key\nThe key is the legend of the plot."]))
    doc = load_file(path)[0]
    chunks = chunk_document(doc, doc_id="d", kb_id="k", chunk_size=300, chunk_overlap=0)
    assert all("1 2 3 4" not in c.section for c in chunks), [c.section for c in chunks]
    assert any(c.section.endswith("Key") for c in chunks) and any("# 1 2 3 4" in c.text for c in chunks)


def test_the_sentence_after_a_heading_line_is_its_own():
    # PDF pages are rendered "# Heading\nFirst sentence" (no blank line): the heading ran into
    # the section's first sentence, which began with "#" and was never read as an answer
    assert split_sentences("# Quitting R\nTo quit the program the command is q().") == [
        "# Quitting R", "To quit the program the command is q()."]
    # a "# comment" line inside a code block is code, not a heading
    assert "# comment\nx <- 1" in split_sentences("Use:\n```\n# comment\nx <- 1\n```\n")
