"""The public LangChain face: `from rag_core import GroundworkRetriever`, built from a data folder
as anyone's code would, passes LangChain's own standard retriever suite (langchain-tests), and
keeps Groundwork's identity rules: no user = an anonymous caller (open knowledge bases only)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from rag_core import GroundworkRetriever
from rag_core.access import Caller
from rag_core.config import get_settings
from rag_core.errors import NotFound
from rag_core.workspace import Workspace

FACTS = [f"# Planet {name}\n\n{name} is a planet. {fact}\n" for name, fact in (
    ("Mercury", "Mercury is the smallest planet and closest to the Sun."),
    ("Venus", "Venus is the hottest planet, with a thick carbon dioxide atmosphere."),
    ("Mars", "Mars is red because of iron oxide on its surface."),
    ("Jupiter", "Jupiter is the largest planet and has a great red spot."),
    ("Saturn", "Saturn has bright rings of ice."),
)]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("public")
    ws = Workspace(get_settings(root / "data"))
    alice = Caller.of("alice")
    ws.create_kb("planets", caller=alice)
    ws.create_kb("private", caller=alice, acl_users=["alice"])
    for i, text in enumerate(FACTS):
        (root / f"p{i}.md").write_text(text)
    ws.ingest("planets", [root / f"p{i}.md" for i in range(len(FACTS))], caller=alice)
    (root / "secret.md").write_text("# Secret\n\nThe planet X project is codenamed Nightjar.\n")
    ws.ingest("private", [root / "secret.md"], caller=alice)
    ws.close()
    return root / "data"


class TestGroundworkRetrieverStandard(RetrieversIntegrationTests):
    @pytest.fixture(autouse=True)
    def _data(self, data_dir):
        self.data_dir = data_dir

    @property
    def retriever_constructor(self):
        return GroundworkRetriever.from_data_dir

    @property
    def retriever_constructor_params(self) -> dict:
        return {"data_dir": self.data_dir, "knowledge_bases": ["planets"]}

    @property
    def retriever_query_example(self) -> str:
        return "Which planet is the largest?"


def test_k_is_min_of_k_and_what_exists_and_no_threshold_cuts_below_it(data_dir):
    r = GroundworkRetriever.from_data_dir(data_dir, ["planets"], k=50)
    try:
        docs = r.invoke("ice rings")
        assert len(docs) == len(FACTS)  # all there are, though most are not about rings
        assert "Saturn" in docs[0].page_content
        assert len(r.invoke("ice rings", k=2)) == 2
        with pytest.raises(ValueError):
            r.invoke("ice rings", k=0)
    finally:
        r.close()


async def test_async_and_batch(data_dir):
    r = GroundworkRetriever.from_data_dir(data_dir, ["planets"], k=1)
    try:
        docs = await r.ainvoke("Why is Mars red?")
        assert len(docs) == 1 and isinstance(docs[0], Document) and "iron oxide" in docs[0].page_content
        both = r.batch(["hottest planet", "smallest planet"])
        assert "Venus" in both[0][0].page_content and "Mercury" in both[1][0].page_content
    finally:
        r.close()


def test_without_a_user_it_is_anonymous_never_the_operator(data_dir):
    with pytest.raises(NotFound) as exc:
        GroundworkRetriever.from_data_dir(data_dir, ["private"])
    assert "private" in str(exc.value)
    with pytest.raises(NotFound):
        GroundworkRetriever.from_data_dir(data_dir, ["private"], user="bob")
    r = GroundworkRetriever.from_data_dir(data_dir, ["private"], user="alice", k=1)
    try:
        assert "Nightjar" in r.invoke("project codename")[0].page_content
    finally:
        r.close()


def test_it_composes_into_a_users_own_lcel_chain(data_dir):
    from langchain_core.runnables import RunnableLambda

    r = GroundworkRetriever.from_data_dir(data_dir, ["planets"], k=2)
    try:
        chain = r | RunnableLambda(lambda docs: [d.metadata["source"] for d in docs])
        sources = chain.invoke("great red spot")
        assert len(sources) == 2 and sources[0].endswith(".md")
    finally:
        r.close()
