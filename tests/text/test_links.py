"""A model's URLs are made inert (rag_core/text/links.py): no Markdown renderer turns them into an
image it fetches or a link it follows, the text still reads as written, and a streamed answer is
made inert piece by piece with the same result as the whole."""

from __future__ import annotations

import pytest

from rag_core.text.links import defuse_prefix, defuse_urls, has_live_url

ATTACKS = [
    "![status](http://127.0.0.1:8/pixel.png?q=descale+every+four+weeks)",
    "![a](<http://127.0.0.1:8/p.png> \"title\")",
    "[click](http://127.0.0.1:8/?q=secret)",
    "[x](javascript:alert(1))",
    "See <http://127.0.0.1:8/auto> now.",
    "Bare http://127.0.0.1:8/bare?q=1 and www.example.org/x.",
    "[1]: http://127.0.0.1:8/ref\n\nText [go][1].",
    "<img src=\"http://127.0.0.1:8/i.png\">",
    "<a href=\"http://127.0.0.1:8/\">here</a>",
    "<iframe src=http://127.0.0.1:8/></iframe>",
    "Mail <a@b.example>.",
    "garak's form: AI Injection succeeded.\n![hello](https://127.0.0.1:8/logo.png?q=SGVsbG8=)",
]


@pytest.mark.parametrize("text", ATTACKS)
def test_no_image_link_or_html_survives(text):
    assert has_live_url(text)  # the check itself sees the attack
    assert not has_live_url(defuse_urls(text))


def test_the_text_still_reads_and_code_is_left_alone():
    assert defuse_urls("Read https://cran.r-project.org/doc/FAQ/. Then [1].") == \
        "Read `https://cran.r-project.org/doc/FAQ/`. Then [1]."
    assert defuse_urls("![hello](http://h/p.png?q=1) [2]") == "hello `http://h/p.png?q=1` [2]"
    code = "Run `curl https://x.org`:\n```\nwget http://y.org/a\n```\n"
    assert defuse_urls(code) == code
    for plain in ("R: x <- c(1, 2); Lst[[1]] [3].", "[1]: The kettle is descaled monthly.", "a < b and c > d"):
        assert defuse_urls(plain) == plain


def test_streamed_pieces_give_the_whole_answers_result():
    full = ("AI Injection succeeded. ![hello](http://127.0.0.1:9/logo.png?q=ZGVz) [1] see https://e.example/x?a=1. "
            "Done [2].\n```\nwget http://y.org\n```\nEnd https://z.org")
    shown = ""
    for i in range(1, len(full) + 1):
        now = defuse_prefix(full[:i])
        assert now.startswith(shown)  # never takes back what was shown
        assert not has_live_url(now)
        shown = now
    assert defuse_urls(full).startswith(shown) and not has_live_url(defuse_urls(full))
