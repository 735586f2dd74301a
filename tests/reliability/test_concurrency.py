"""Two processes ingesting, searching and deleting in one data folder at the same time lose
nothing and never show a half document (the 1,000-operation soak is
benchmarks/concurrency_soak.py; this is its short form)."""

from benchmarks.concurrency_soak import run


def test_two_processes_mixed_operations():
    res = run(ops=80, workers=2)
    assert res["ops"] == 80
    assert res["errors"] == 0, res["per_worker"]
    assert res["violations"] == 0, res["per_worker"]
    assert all(w["counts"]["search"] > 0 and w["counts"]["ingest"] > 0 for w in res["per_worker"])
