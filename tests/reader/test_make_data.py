"""training/reader/make_data.py: it imports (the model card's reproduce step 1) and refuses
anything an evaluation uses (assert_not_evaluation)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "training" / "reader" / "make_data.py"
SHARED = REPO.parent / "shared" / "data"


@pytest.fixture(scope="module")
def make_data():
    spec = importlib.util.spec_from_file_location("make_data", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # fails on an import of a module that is gone
    return mod


def test_the_script_runs_its_help():
    out = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "--out" in out.stdout


@pytest.mark.parametrize("source", [
    "/usr/share/R/doc/manual/R-intro.pdf",          # Debian's r-doc-pdf, as benchmarks/manual_questions.py reads them
    "rdoc/usr/share/R/doc/manual/R-data.pdf",
    "R-admin.pdf",
    "R-lang.pdf",
    "An Introduction to R",                          # the manuals' titles
    "R Data Import/Export",
    "https://cran.r-project.org/doc/manuals/r-release/R-exts.html",
    "benchmarks/data/r_manuals_questions.jsonl",
    "/usr/share/doc/gnuplot-doc/gnuplot.pdf",
    "gnuplot 5.4 documentation",
    "R (programming language)",
    "/usr/share/man/man1/bash.1.gz",                 # benchmarks/data/EVALUATION_DOCUMENTS.txt
    "Bash Reference Manual",
    "/usr/share/info/bash.info.gz",
    "asymptote-doc_2.87-1_all.deb",
    "/usr/share/doc/asymptote/asymptote.pdf",
    "Maxima 5.47 Manual",
    "/usr/share/doc/maxima-doc/html/maxima_toc.html",
])
def test_r_manuals_and_gnuplot_docs_are_refused(make_data, source):
    with pytest.raises(AssertionError, match="refusing"):
        make_data.assert_not_evaluation(source)


def test_every_entry_of_the_evaluation_documents_list_is_refused(make_data):
    """benchmarks/data/EVALUATION_DOCUMENTS.txt names what may never enter training data:
    each "package" line refuses that package's files, each "program" line a document whose
    path or title names the program."""
    lines = [ln.split("#", 1)[0].split() for ln in make_data.EVALUATION_DOCUMENTS.read_text().splitlines()]
    entries = [ln for ln in lines if len(ln) == 2]
    assert {k for k, _ in entries} == {"package", "program"} and len(entries) >= 10
    for kind, name in entries:
        sources = ([f"/usr/share/doc/{name}/README", f"{name}_1.0-1_all.deb"] if kind == "package"
                   else [f"The {name} manual", f"docs/{name}/intro.html"])
        for source in sources:
            with pytest.raises(AssertionError, match="refusing"):
                make_data.assert_not_evaluation(source)


@pytest.mark.parametrize("source", [
    "Prime_number",                                  # a test article's title, as in the file
    "Prime number",                                  # and as shown
    "Jacksonville,_Florida",
    SHARED / "squad-dev" / "dev-v2.0-reconstructed.json#Warsaw",
    "squad-dev/dev-1.1-reconstructed.json:French_and_Indian_War",
])
def test_squad_test_articles_are_refused(make_data, source):
    with pytest.raises(AssertionError, match="SQuAD test article"):
        make_data.assert_not_evaluation(source)


@pytest.mark.parametrize("path", [
    "beir-scifact/scifact-original-claims/claims_test.csv",
    "beir-scifact/scifact-original-claims/claims_validation.csv",
    "beir-scifact/qrels/test.tsv",
    "beir-scifact/queries.jsonl",
    "vaswani-npl/beir-format/queries.jsonl",
    "pdfs-py-pdf-sample-files/011-google-doc-document/google-doc-document.pdf",
])
def test_other_shared_data_files_are_refused(make_data, path):
    with pytest.raises(AssertionError, match="not on the train side"):
        make_data.assert_not_evaluation(SHARED / path)


def test_train_side_articles_and_files_are_accepted(make_data):
    data = make_data
    for title in ("Normans", "Computational_complexity_theory", "Southern California", "Super_Bowl_50",
                  "Fresno,_California", "Amazon_rainforest", "Sky_(United_Kingdom)", "Doctor_Who"):
        data.assert_not_evaluation(title)  # v2.0 articles 0-19 and v1.1-only articles: train side
    data.assert_not_evaluation(SHARED / "squad-dev" / "dev-v2.0-reconstructed.json#Normans")
    for rel in data.TRAIN_SIDE_FILES:
        data.assert_not_evaluation(SHARED / rel)
    data.assert_not_evaluation("Other manuals and user guides")  # "r" inside a word is not R
    data.assert_not_evaluation("Her documents")


def test_the_articles_it_trains_on_pass_the_check(make_data):
    """What squad_articles() picks (train and calibration articles) is all train side, and the
    check it runs refuses the split's test titles: every one of SPLIT.md's 15."""
    if not (SHARED / "squad-dev" / "dev-v2.0-reconstructed.json").exists():
        pytest.skip("../shared/data/squad-dev not found")
    train, calib = make_data.squad_articles()
    assert train and calib
    for a in train + calib:
        make_data.assert_not_evaluation(a["title"])
    import json

    v2 = json.loads((SHARED / "squad-dev" / "dev-v2.0-reconstructed.json").read_text())["data"]
    test_titles = [a["title"] for a in v2[20:35]]
    assert set(test_titles) == make_data.TEST_TITLES
    for t in test_titles:
        with pytest.raises(AssertionError):
            make_data.assert_not_evaluation(t)
