"""A sentence copied from its source is supported by the match, however it was laid out."""

from __future__ import annotations

from rag_core.grounding.verify import answer_sentences, quotation_key, split_claims

SOURCE = ("4. To quit the R program the command is\n> q()\n\nAt this point you will be asked whether you want "
          "to save the data.\n```\n$ cd work\n$ R\n```\n")


def test_layout_does_not_change_a_quotation():
    assert quotation_key("To quit the R program the command is ```> q()``` [1].") in quotation_key(SOURCE)
    assert quotation_key("To quit the R program the command is `> q()`.") in quotation_key(SOURCE)
    assert quotation_key("``` $ cd work $ R ``` [2]") in quotation_key(SOURCE)
    assert quotation_key("To quit the R program the command is > exit()") not in quotation_key(SOURCE)


def test_a_marker_before_a_capital_ends_a_claim():
    # an extractive span ending in code, then the next sentence it took: two claims, not one
    claims = split_claims("To quit the R program the command is > q() [1] At this point you will be asked [1].")
    assert [c for c, _ in claims] == ["To quit the R program the command is > q()", "At this point you will be asked."]
    assert all(m == [1] for _, m in claims)
    assert len(answer_sentences("Paris is the capital [1] and the largest city [2].")) == 1  # lower case: one sentence
