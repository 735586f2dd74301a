"""The planner (rag_core/generation/planner.py): offline rules, the model's JSON decision and
its fallbacks. The model is LangChain's fake chat model: no model runs in CI for routing
(benchmarks/routing.py measures real local models)."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser

from rag_core.generation.planner import CatalogueEntry, Planner, mentioned, parse_plan, rule_route, topic_terms

CAT = [
    CatalogueEntry("k", "1", "R-intro.pdf", "An Introduction to R"),
    CatalogueEntry("k", "2", "R-data.pdf", "R Data Import/Export"),
    CatalogueEntry("k", "3", "R-admin.pdf", "R Installation and Administration"),
    CatalogueEntry("k", "4", "R-lang.pdf", "R Language Definition"),
    CatalogueEntry("g", "5", "gnuplot.pdf", "gnuplot documentation"),
    CatalogueEntry("s", "6", "policy-2023.md", "Travel policy 2023"),
    CatalogueEntry("s", "7", "policy-2024.md", "Travel policy 2024"),
]


def route(q, cat=CAT):
    r = rule_route(q, cat)
    return r.kind, [d.source for d in r.documents]


@pytest.mark.parametrize("q,kind,docs", [
    ("Summarize R-intro.pdf", "document", ["R-intro.pdf"]),
    ("What are the main topics of the gnuplot manual?", "document", ["gnuplot.pdf"]),
    ("Give me an overview of the R installation guide", "document", ["R-admin.pdf"]),
    ("Fasse das Handbuch zu gnuplot zusammen", "document", ["gnuplot.pdf"]),
    ("compare R-intro.pdf and R-lang.pdf", "compare", ["R-intro.pdf", "R-lang.pdf"]),
    ("R-intro.pdf と R-lang.pdf の違いは何ですか？", "compare", ["R-intro.pdf", "R-lang.pdf"]),
    ("What changed between policy-2023.md and policy-2024.md?", "compare", ["policy-2023.md", "policy-2024.md"]),
    # technical topics that use route words are searches
    ("How do I get a summary of a data frame?", "search", []),
    ("What is the difference between <- and = in R?", "search", []),
    ("How do I compare two strings?", "search", []),
    ("What flows through Paris?", "search", []),
])
def test_rules(q, kind, docs):
    assert route(q) == (kind, docs)


def test_a_plain_word_file_stem_names_by_rarity_not_by_spelling():
    # "gnuplot" is gnuplot.pdf's stem and a title word: it names the document; "R" is in
    # every R manual's name and names none of them
    assert [d.source for d in mentioned("the gnuplot manual", CAT)] == ["gnuplot.pdf"]
    assert mentioned("What is R?", CAT) == []


def test_the_scope_stands_for_this_document_and_these_two():
    one = [CAT[0]]
    assert route("Summarize this document", one) == ("document", ["R-intro.pdf"])
    assert route("compare these two", CAT[5:7]) == ("compare", ["policy-2023.md", "policy-2024.md"])
    # without "this"/"these", a comparison must name its documents
    assert route("what are the differences?", CAT)[0] == "search"


def test_model_plan_is_validated():
    assert parse_plan('{"route": "document", "documents": [5]}', CAT).documents == (CAT[4],)
    assert parse_plan('Sure! {"route": "compare", "documents": [1, 4]}', CAT).kind == "compare"
    for bad in ["", "search", '{"route": "summarize"}', '{"route": "document", "documents": [99]}',
                '{"route": "document", "documents": [1, 2]}', '{"route": "compare", "documents": [1]}',
                '{"route": "document", "documents": ["x"]}', '{"route": "document"']:
        assert parse_plan(bad, CAT) is None, bad


def fake(*replies):
    return FakeListChatModel(responses=list(replies)) | StrOutputParser()


def test_the_model_decides_when_its_plan_is_valid():
    # rules alone miss this phrasing; the model's decision is taken
    q = "What's the gist of R-data.pdf, roughly?"
    got = Planner(llm=fake('{"route": "document", "documents": [2]}')).plan(q, CAT)
    assert (got.kind, got.by, got.documents) == ("document", "model", (CAT[1],))
    # a search decision is taken too (the model is never vetoed by the rules)
    got = Planner(llm=fake('{"route": "search", "documents": []}')).plan("Summarize R-intro.pdf", CAT)
    assert (got.kind, got.by) == ("search", "model")


class Boom(FakeListChatModel):
    def _call(self, *a, **k):
        raise TimeoutError("model down")


@pytest.mark.parametrize("llm", [fake("I think you should read it."), fake('{"route": "document", "documents": [42]}'),
                                 Boom(responses=["x"]) | StrOutputParser()])
def test_missing_invalid_or_failed_plans_fall_back_to_the_rules(llm):
    got = Planner(llm=llm).plan("Summarize R-intro.pdf", CAT)
    assert (got.kind, got.by, [d.source for d in got.documents]) == ("document", "rules", ["R-intro.pdf"])
    assert "model" in got.reason


def test_the_model_is_not_asked_about_plain_searches():
    class Never(FakeListChatModel):
        def _call(self, *a, **k):
            raise AssertionError("the planner asked the model about a plain search")

    got = Planner(llm=Never(responses=["x"]) | StrOutputParser()).plan("What does the seq function return?", CAT)
    assert got.kind == "search"


def test_the_model_only_sees_and_names_the_callers_catalogue():
    seen = []

    class Recording(FakeListChatModel):
        def _call(self, messages, *a, **k):
            seen.append(messages[0].content)
            return '{"route": "document", "documents": [3]}'  # outside a two-entry catalogue

    mine = CAT[:2]
    got = Planner(llm=Recording(responses=["x"]) | StrOutputParser()).plan("Summarize R-data.pdf", mine)
    assert "R-admin" not in seen[0] and "gnuplot" not in seen[0]
    assert got.by == "rules" and got.documents == (CAT[1],)


def test_override():
    p = Planner()
    assert p.plan("Summarize R-intro.pdf", CAT, override="search").kind == "search"
    got = p.plan("R-intro.pdf and R-lang.pdf", CAT, override="compare")
    assert got.kind == "compare" and got.by == "user"
    with pytest.raises(ValueError):
        p.plan("x y z", CAT, override="everything")


def test_topic_terms_drop_names_and_route_words():
    docs = (CAT[0], CAT[3])
    assert topic_terms("compare R-intro.pdf and R-lang.pdf on factors", docs) == ["factors"]
    assert topic_terms("What do R-intro and R-lang say about environments?", docs) == ["environments"]
    assert topic_terms("compare the two documents", docs) == []


def test_auto_asks_an_endpoints_model_but_not_a_local_file(tmp_path):
    from rag_core.config import get_settings

    assert not get_settings(tmp_path).planner_asks_model  # offline
    assert get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1").planner_asks_model
    assert not get_settings(tmp_path, llm_gguf=tmp_path / "m.gguf").planner_asks_model  # measured weaker than the rules
    assert get_settings(tmp_path, llm_gguf=tmp_path / "m.gguf", llm_planner="model").planner_asks_model
    assert not get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_planner="rules").planner_asks_model


# ---- documents named by what they are (issue 53, part 3) ----------------------------------
NAMED = [
    CatalogueEntry("s", "b1", "bash.pdf", "BASH(1) General Commands Manual"),
    CatalogueEntry("s", "b2", "bashref.pdf", "Bash Reference Manual"),
    CatalogueEntry("g", "a1", "asymptote.pdf", "Asymptote: the Vector Graphics Language"),
    CatalogueEntry("g", "a2", "asyRefCard.pdf", "Asymptote Reference Card"),
    CatalogueEntry("g", "a3", "asy-latex.pdf", "The asymptote package"),
    CatalogueEntry("r", "r1", "R-admin.pdf", "R Installation and Administration"),
    CatalogueEntry("r", "r2", "R-FAQ.pdf", "R FAQ"),
    CatalogueEntry("d", "d1", "scan-0042.txt", "scan 0042", description="Travel reimbursement rules for field staff"),
]


@pytest.mark.parametrize("q,kind,docs", [
    ("Summarise the bash man page in a few bullet points.", "document", ["bash.pdf"]),  # a man page by its title's form
    ("give me the gist of the Asymptote manual", "document", ["asymptote.pdf"]),  # the file its stem names
    ("what does R-admin cover that the R FAQ doesn't?", "compare", ["R-admin.pdf", "R-FAQ.pdf"]),  # file name and words
    ("What does the Bash Reference Manual cover that the man page leaves out?", "compare", ["bash.pdf", "bashref.pdf"]),
    ("Summarize the travel reimbursement rules", "document", ["scan-0042.txt"]),  # by what its first line says
])
def test_a_document_is_named_by_its_title_its_form_or_its_description(q, kind, docs):
    k, got = route(q, NAMED)
    assert k == kind and sorted(got) == sorted(docs), (k, got)
