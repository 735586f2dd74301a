"""HTML to light Markdown."""

from __future__ import annotations

import pytest

from rag_core.errors import LoadError
from rag_core.ingest.loaders import load_file
from tests.ingest.loaders.util import load_one, write


PAGE = """<!doctype html><html><head><title>Guide Page</title>
<style>.x{color:red}</style><script>var secret = "SCRIPTTEXT";</script></head>
<body><h1>Main <b>Title</b></h1>
<p>Intro with <a href="#">a link</a> and <code>x=1</code>.<br>Second line.</p>
<!-- COMMENTTEXT -->
<ul><li>First item</li><li>Second <i>item</i><ul><li>Nested</li></ul></li></ul>
<h2>Data</h2>
<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann | B</td><td>30</td></tr></table>
<pre><code>def f():
    return 1
</code></pre>
<noscript>NOSCRIPTTEXT</noscript><template><p>TEMPLATETEXT</p></template><svg><text>SVGTEXT</text></svg>
<div hidden>HIDDENTEXT</div><div>Last <span>words</span></div></body></html>"""


def test_html_is_converted_to_light_markdown(tmp_path):
    doc = load_one(write(tmp_path, "page.html", PAGE))
    text = doc.pages[0]
    assert doc.title == "Guide Page"
    assert doc.mime == "text/html"
    for junk in ("SCRIPTTEXT", "color:red", "COMMENTTEXT", "NOSCRIPTTEXT", "TEMPLATETEXT", "SVGTEXT", "HIDDENTEXT"):
        assert junk not in text
    assert "# Main Title\n\nIntro with a link and `x=1`.\nSecond line.\n\n" in text
    assert "- First item\n- Second item\n  - Nested" in text
    assert "## Data\n\n| Name | Age |\n| --- | --- |\n| Ann \\| B | 30 |" in text
    assert "```\ndef f():\n    return 1\n```" in text
    assert text.endswith("Last words")


def test_html_title_falls_back_to_h1_then_file_name(tmp_path):
    assert load_one(write(tmp_path, "a.htm", "<h1>Only Heading</h1><p>x</p>")).title == "Only Heading"
    assert load_one(write(tmp_path, "plain-page.html", "<p>just text</p>")).title == "plain page"


def test_html_honours_meta_charset(tmp_path):
    html = '<html><head><meta charset="windows-1252"></head><body><p>Café</p></body></html>'
    assert load_one(write(tmp_path, "c.html", html.encode("cp1252"))).pages == ["Café"]


def test_deeply_nested_html_does_not_crash(tmp_path):
    depth = 20000
    html = "<div>" * depth + "<p>deep text</p>" + "</div>" * depth
    doc = load_one(write(tmp_path, "deep.html", html))
    assert doc.pages == ["deep text"]


def test_html_without_text_is_refused(tmp_path):
    with pytest.raises(LoadError, match="no text found"):
        load_file(write(tmp_path, "empty.html", "<html><head><script>x()</script></head><body> </body></html>"))


@pytest.mark.parametrize(
    ("head", "body", "date"),
    [
        # modified before published, whatever the order in the page; names are case-insensitive
        ('<meta property="article:published_time" content="2023-02-01T08:00:00+01:00">'
         '<meta property="Article:Modified_Time" content="2024-03-05T22:30:00-05:00">', "", "2024-03-05"),
        ('<meta name="DC.date" content="2020-07">', '<time datetime="2019-01-01">x</time>', "2020-07-01"),
        ('<meta http-equiv="last-modified" content="Tue, 15 Nov 1994 08:12:31 GMT">', "", "1994-11-15"),
        ('<meta name="date" content="someday">', '<time>Monday</time><time datetime="2022-09-10T10:00">x</time>',
         "2022-09-10"),  # a meta that is not a date gives way to <time>
        ('<meta name="description" content="2021-01-01">', "", None),
    ],
)
def test_html_date(tmp_path, head, body, date):
    page = f"<html><head>{head}</head><body><p>Text.</p>{body}</body></html>"
    assert load_one(write(tmp_path, "d.html", page)).metadata.get("date") == date
