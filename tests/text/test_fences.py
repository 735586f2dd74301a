"""An answer's Markdown never leaves a code fence open (issue 50: an unclosed ``` swallowed the
"Sources:" list of the API's answers)."""

from __future__ import annotations

from rag_core.text.sentences import close_fences, open_fence


def test_an_open_fence_is_found_and_closed():
    assert open_fence("Install it:\n```sh\nR CMD INSTALL pkg.tar.gz") == "```"
    assert close_fences("Install it:\n```sh\nR CMD INSTALL pkg.tar.gz").endswith("pkg.tar.gz\n```")
    assert open_fence("~~~~\ncode\n~~~") == "~~~~"  # a shorter fence does not close a longer one


def test_balanced_text_is_left_alone():
    for text in ("No code here.", "```\nx <- 1\n```\nThen run it.", "Inline ``` is not a fence line",
                 "````\n```\nnested\n```\n````"):
        assert open_fence(text) == "" and close_fences(text) == text
