"""The access matrix: every surface that reads or writes, tried by callers who must not get
through, against a real data folder (SQLite file, embedded store, real embedding model).

Surfaces are enumerated by introspection — every public Workspace method and every CLI
command — and each must be classified here: a method or command added without an identity, or
without a row in this matrix, fails the test. Scenarios, each against Alice's knowledge bases:
  hidden  — Bob against Alice's private knowledge base (he is not on it)
  reader  — Carol, a reader but not an owner, against Alice's shared knowledge base
  tenant  — a user of tenant "acme" against a knowledge base of tenant "globex"
Expected: hidden and tenant see nothing and change nothing, with exactly the error a missing
knowledge base gives; the reader reads and changes nothing ("only the owners ...").
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from rag_core.access import Caller, PermissionDenied
from rag_core.cli import GLOBAL_FLAGS, build_parser, main, parse_args
from rag_core.config import get_settings
from rag_core.errors import InputError, NotFound
from rag_core.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]

ALICE = Caller(user="alice")
BOB = Caller(user="bob")
CAROL = Caller(user="carol")
GINA = Caller(user="gina", tenant="globex")
ANA = Caller(user="ana", tenant="acme")
OP = Caller.operator()

SCENARIOS = {  # name -> (caller, knowledge base asked for, expected outcome class)
    "hidden": (BOB, "Alpha", "hidden"),
    "reader": (CAROL, "Shared", "reader"),
    "tenant": (ANA, "Globex", "hidden"),
}


@dataclass
class Target:
    name: str
    kb_id: str
    doc_id: str
    citation: object
    job_id: str
    tmp: Path


# Each public Workspace method that names a knowledge base, document or job: its kind and a call.
#   read  — allowed to readers; hidden for others
#   doc   — a document or citation (by id): allowed to readers; "not available" for others
#   write — owners and admins only
#   own   — the caller's own jobs only
def _new_file(t: Target) -> Path:
    p = t.tmp / "intruder.txt"
    p.write_text("Intruders write here: the quarterly numbers are 42.")
    return p


SURFACES = {
    "get_kb": ("read", lambda ws, c, t: ws.get_kb(t.name, caller=c)),
    "resolve_kbs": ("read", lambda ws, c, t: ws.resolve_kbs([t.name], caller=c)),
    "kb_counts": ("read", lambda ws, c, t: ws.kb_counts(t.name, caller=c)),
    "can_write": ("read", lambda ws, c, t: ws.can_write(t.name, caller=c)),
    "list_documents": ("read", lambda ws, c, t: ws.list_documents(t.name, caller=c, status=None)),
    "chunks": ("read", lambda ws, c, t: ws.chunks(t.name, caller=c)),
    "indexing_progress": ("read", lambda ws, c, t: ws.indexing_progress([t.name], caller=c)),
    "search": ("read", lambda ws, c, t: ws.search([t.name], "quarterly merger numbers", caller=c)),
    "retriever": ("read", lambda ws, c, t: ws.retriever([t.name], caller=c).invoke("quarterly merger numbers")),
    "answer_request": ("read", lambda ws, c, t: ws.answer_request([t.name], "When does the merger close?", caller=c)),
    "ask": ("read", lambda ws, c, t: ws.ask([t.name], "When does the merger close?", caller=c)),
    "answer_policy": ("read", lambda ws, c, t: ws.answer_policy(caller=c, kb_names=[t.name])),
    "list_jobs": ("read", lambda ws, c, t: ws.list_jobs(t.name, caller=c)),
    "accessible_document": ("doc", lambda ws, c, t: ws.accessible_document(t.kb_id, t.doc_id, caller=c)),
    "original_bytes": ("doc", lambda ws, c, t: ws.original_bytes(t.kb_id, t.doc_id, caller=c)),
    "cited_page": ("doc", lambda ws, c, t: ws.cited_page(t.citation, caller=c)),
    "cited_context": ("doc", lambda ws, c, t: ws.cited_context(t.citation, caller=c)),
    "cited_code": ("doc", lambda ws, c, t: ws.cited_code(t.citation, caller=c)),
    "writable_kb": ("write", lambda ws, c, t: ws.writable_kb(t.name, caller=c)),
    "update_kb": ("write", lambda ws, c, t: ws.update_kb(t.name, caller=c, acl_users=["bob", "carol", "ana"])),
    "delete_kb": ("write", lambda ws, c, t: ws.delete_kb(t.name, caller=c)),
    "ingest": ("write", lambda ws, c, t: ws.ingest(t.name, [_new_file(t)], caller=c)),
    "fill_vectors": ("write", lambda ws, c, t: ws.fill_vectors(t.name, caller=c)),
    "delete_document": ("write", lambda ws, c, t: ws.delete_document(t.name, t.doc_id, caller=c)),
    "set_document_date": ("write", lambda ws, c, t: ws.set_document_date(t.name, t.doc_id, "2001-02-03", caller=c)),
    "set_document_language": ("write", lambda ws, c, t: ws.set_document_language(t.name, t.doc_id, "de", caller=c)),
    "set_document_trust": ("write", lambda ws, c, t: ws.set_document_trust(t.name, t.doc_id, "trusted", caller=c)),
    "search_filters": ("read", lambda ws, c, t: ws.search_filters(ws.resolve_kbs([t.name], caller=c), caller=c)),
    "ingest_url": ("write", lambda ws, c, t: ws.ingest_url(t.name, "http://127.0.0.1:9/x", caller=c)),
    "submit_upload": ("write", lambda ws, c, t: ws.submit_upload(t.name, [("x.txt", b"intruder text")], caller=c)),
    "job": ("own", lambda ws, c, t: ws.job(t.job_id, caller=c)),
    "cancel_job": ("own", lambda ws, c, t: ws.cancel_job(t.job_id, caller=c)),
    "retry_with_password": ("own", lambda ws, c, t: ws.retry_with_password(t.job_id, "x.pdf", "pw", caller=c)),
}
# Methods scoped to the caller itself (no other party's object named): tested one by one below.
CALLER_SCOPED = {"list_kbs", "create_kb", "conversations", "feedback_for", "last_kbs", "remember_kbs", "migrate_to",
                 "gap_report", "feedback_signals", "revert_feedback", "delete_my_questions", "export_user_data",
                 "erase_user_data", "calibrate_answer_policy", "start_calibration", "calibration_status",
                 "reembed",  # admins only: tests/test_reembed.py
                 "cache_stats",  # admins only: below
                 "query_log_notice",  # names only knowledge bases the caller sees: tests/test_privacy.py
                 "alert_rules", "add_alert_rule", "delete_alert_rule", "check_alerts",
                 "firing_alerts",  # admins only: tests/test_alerts.py
                 "thread_kbs"}  # the caller's own conversation: below, with Bob asking of Alice's
# process lifecycle, and retention: it applies each knowledge base's own setting (an owner's
# choice, made through update_kb), not a caller's request
NO_IDENTITY = {"close", "start_worker", "purge_expired"}


def public_methods() -> dict:
    return {n: f for n, f in inspect.getmembers(Workspace, inspect.isfunction) if not n.startswith("_")}


def test_every_public_workspace_method_takes_an_explicit_caller():
    for name, fn in public_methods().items():
        if name in NO_IDENTITY:
            continue
        p = inspect.signature(fn).parameters.get("caller")
        assert p is not None, f"Workspace.{name} takes no caller"
        assert p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty, \
            f"Workspace.{name}: caller must be keyword-only with no default (nothing falls back to the operator)"


def test_every_public_workspace_method_is_in_the_matrix():
    assert set(public_methods()) == set(SURFACES) | CALLER_SCOPED | NO_IDENTITY, \
        "a Workspace method was added or removed: classify it in tests/test_access_matrix.py"


# ---- the data folder: Alice's private and shared knowledge bases, Gina's in another tenant ----
@pytest.fixture(scope="module")
def world(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("matrix")
    ws = Workspace(get_settings(tmp / "data"))
    targets = {}
    for name, owner, readers in (("Alpha", ALICE, ["alice"]), ("Shared", ALICE, ["alice", "carol"]),
                                 ("Globex", GINA, [])):
        kb = ws.create_kb(name, caller=owner, acl_users=readers)
        f = tmp / f"{name.lower()}.txt"
        f.write_text(f"{name} memo. The merger with Quokka Corp closes in March. The quarterly numbers are secret.")
        stats = ws.ingest(name, [f], caller=owner)
        doc_id = stats.reports[0].doc_ids[0]
        cit = ws.ask([name], "When does the merger close?", caller=owner).citations[0]
        job_id = ws.jobs.submit(kb.kb_id, [("x.pdf", b"%PDF-1.4 not really")], owner.user)  # not run: no worker
        targets[name] = Target(name, kb.kb_id, doc_id, cit, job_id, tmp)
    yield ws, targets
    ws.close()


def snapshot(ws: Workspace, t: Target) -> tuple:
    kb = ws.appdb.find_kb(t.kb_id)
    docs = [(d.doc_id, d.status, d.date) for d in ws.appdb.list_documents(t.kb_id, status=None)]
    job = tuple(ws.db.query_one("SELECT status, cancel FROM ingest_jobs WHERE job_id=?", (t.job_id,)))
    return kb, docs, ws.store.count(t.kb_id), job


def outcome(fn) -> tuple[str, str]:
    try:
        fn()
    except NotFound as exc:
        return "NotFound", str(exc)
    except PermissionDenied as exc:
        return "PermissionDenied", str(exc)
    return "ok", ""


def matrix(world) -> dict[tuple[str, str], tuple[str, str]]:
    ws, targets = world
    out = {}
    for scen, (caller, kb_name, _) in SCENARIOS.items():
        t = targets[kb_name]
        for surface, (kind, fn) in SURFACES.items():
            before = snapshot(ws, t)
            out[(surface, scen)] = outcome(lambda: fn(ws, caller, t))
            if kind in ("write", "own"):
                assert snapshot(ws, t) == before, f"{surface} changed {kb_name} for {caller.user}"
    return out


def test_isolation_matrix(world, capsys):
    ws, targets = world
    got = matrix(world)
    # the same surfaces against a knowledge base that does not exist, for the error text
    missing = Target("Nope", "nope", "nope", replace(targets["Alpha"].citation, kb_id="nope", doc_id="nope"),
                     "nope", targets["Alpha"].tmp)
    for surface, (kind, fn) in SURFACES.items():
        miss_kind, miss_msg = outcome(lambda: fn(ws, BOB, missing))
        assert miss_kind == "NotFound", surface
        for scen, (caller, kb_name, expected) in SCENARIOS.items():
            kind_got, msg = got[(surface, scen)]
            if expected == "hidden" or kind == "own":
                assert kind_got == "NotFound", (surface, scen, kind_got)
                # hidden reads exactly like missing: same words, the caller's own name for it
                assert msg.replace(kb_name, "<asked>") == miss_msg.replace("Nope", "<asked>"), (surface, scen, msg)
                rest = msg.replace(f"'{kb_name}'", "")
                assert not any(n in rest for n in ("Alpha", "Shared", "Globex")), (surface, scen, msg)
            elif kind == "write":
                assert kind_got == "PermissionDenied", (surface, scen, kind_got)
            else:
                assert kind_got == "ok", (surface, scen, kind_got, msg)
    # a reader lists no jobs of the owner's
    assert ws.list_jobs("Shared", caller=CAROL) == []
    with capsys.disabled():  # the table for the closing note (pytest -s shows it too)
        print("\nsurface               " + "  ".join(f"{s:<16}" for s in SCENARIOS))
        for surface in SURFACES:
            print(f"{surface:<22}" + "  ".join(f"{got[(surface, s)][0]:<16}" for s in SCENARIOS))


def test_caller_scoped_surfaces(world, tmp_path):
    ws, targets = world
    assert [k.name for k in ws.list_kbs(caller=BOB)] == []
    assert [k.name for k in ws.list_kbs(caller=CAROL)] == ["Shared"]
    assert [k.name for k in ws.list_kbs(caller=ANA)] == []
    assert {k.name for k in ws.list_kbs(caller=GINA)} == {"Globex"}
    assert {k.name for k in ws.list_kbs(caller=OP)} == {"Alpha", "Shared", "Globex"}
    # remembering a hidden knowledge base's name brings nothing back
    ws.remember_kbs(["Alpha", "Shared"], caller=CAROL)
    assert ws.last_kbs(caller=CAROL) == ["Shared"]
    # conversations: Alice's thread cannot be read, renamed or deleted by Bob
    mine = ws.conversations(caller=ALICE)
    tid = mine.create()
    mine.add(tid, "user", "When does the merger close?")
    bobs = ws.conversations(caller=BOB)
    assert bobs.list() == []
    for fn in (lambda: bobs.messages(tid), lambda: bobs.rename(tid, "x"), lambda: bobs.delete(tid),
               lambda: bobs.add(tid, "user", "hi")):
        with pytest.raises(NotFound):
            fn()
    assert len(mine.messages(tid)) == 1
    with pytest.raises(NotFound):  # which knowledge bases her conversation asked: not Bob's to know
        ws.thread_kbs(tid, caller=BOB)
    # feedback: Bob can neither rate nor read Alice's answer; the same words as a missing one
    answer = ws.ask(["Alpha"], "When does the merger close?", caller=ALICE)
    qid = ws.feedback_for(caller=ALICE).log_answer(answer, [targets["Alpha"].kb_id])
    bob_fb = ws.feedback_for(caller=BOB)
    with pytest.raises(InputError) as hidden:
        bob_fb.rate(qid, -1, "wrong")
    with pytest.raises(InputError) as missing:
        bob_fb.rate("no-such-id", -1, "wrong")
    assert str(hidden.value) == str(missing.value)
    assert bob_fb.rating_of(qid) is None
    assert qid not in set(bob_fb.frame()["query_id"])
    assert qid in set(ws.feedback_for(caller=OP).frame()["query_id"])  # admins see everyone's
    # migrating the whole folder is the operator's or an admin's
    with pytest.raises(PermissionDenied):
        ws.migrate_to(object(), caller=BOB)
    # the gap report, learnt records and privacy tools: one's own, or an admin's
    ws.feedback_for(caller=ALICE).rate(qid, 1)
    assert "merger" not in ws.gap_report(caller=BOB)["topics"].to_csv()
    assert ws.feedback_signals(caller=BOB) == [] and ws.feedback_signals(caller=CAROL) == []
    assert ws.feedback_signals(caller=ALICE)  # she owns Alpha
    for fn in (lambda: ws.revert_feedback(caller=ALICE, kb_name="Alpha"),
               lambda: ws.export_user_data("alice", caller=BOB), lambda: ws.erase_user_data("alice", caller=BOB)):
        with pytest.raises(PermissionDenied):
            fn()
    with pytest.raises(NotFound):
        ws.revert_feedback(caller=OP, kb_name="Nope")
    # the answer policy: anyone reads the one in force; only an admin calibrates it
    assert ws.answer_policy(caller=BOB)["name"] == ws.answer_policy(caller=OP)["name"]
    for fn in (lambda: ws.calibrate_answer_policy(caller=ALICE, limit=2), lambda: ws.start_calibration(caller=BOB),
               lambda: ws.calibration_status(caller=CAROL), lambda: ws.reembed(caller=ALICE),
               lambda: ws.cache_stats(caller=BOB)):
        with pytest.raises(PermissionDenied):
            fn()
    assert ws.calibration_status(caller=OP) == {}
    assert set(ws.cache_stats(caller=OP)) == {"entries", "hits"}
    assert ws.delete_my_questions(caller=BOB) == 0
    assert qid in set(ws.feedback_for(caller=OP).frame()["query_id"])  # Bob's deletion touched only his
    # creating a knowledge base with a hidden one's name succeeds (nothing revealed) and is Bob's
    own = Workspace(get_settings(tmp_path / "data"))
    own.create_kb("Merger Quokka", caller=ALICE, acl_users=["alice"])
    kb = own.create_kb("merger quokka", caller=BOB)
    assert kb.owners == ["bob"] and own.get_kb("merger quokka", caller=BOB).kb_id == kb.kb_id
    assert own.get_kb("Merger Quokka", caller=ALICE).owners == ["alice"]  # her own wins for her
    # a knowledge base is created in its creator's tenant; only an admin may name another
    assert own.create_kb("Acme notes", caller=ANA).tenant == "acme"
    with pytest.raises(PermissionDenied):
        own.create_kb("Elsewhere", caller=ANA, tenant="globex")
    own.close()


def test_owners_write_and_name_co_owners(tmp_path):
    ws = Workspace(get_settings(tmp_path / "data"))
    ws.create_kb("Team", caller=ALICE, acl_users=["alice", "carol"])
    with pytest.raises(PermissionDenied):
        ws.update_kb("Team", caller=CAROL, description="mine now")
    ws.update_kb("Team", caller=ALICE, owners=["alice", "carol"])
    assert ws.update_kb("Team", caller=CAROL, description="co-owned").description == "co-owned"
    with pytest.raises(InputError):
        ws.update_kb("Team", caller=CAROL, owners=[])  # never ownerless by accident
    ws.close()


# ---- the command line --------------------------------------------------------------------------
def command_paths(parser: argparse.ArgumentParser | None = None, prefix=()) -> list[tuple[str, ...]]:
    parser = parser or build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [prefix]
    out = []
    for name, p in subs[0].choices.items():
        out += command_paths(p, prefix + (name,))
    return out


# Every command with the arguments it needs, and its kind (as for SURFACES).
CLI = {
    ("kb", "create"): ("self", ["New"]),
    ("kb", "update"): ("write", ["{kb}", "--description", "taken over"]),
    ("kb", "list"): ("self", []),
    ("kb", "delete"): ("write", ["{kb}"]),
    ("ingest",): ("write", ["--kb", "{kb}", "{file}"]),
    ("delete",): ("write", ["--kb", "{kb}", "{doc}"]),
    ("search",): ("read", ["--kb", "{kb}", "--query", "merger"]),
    ("ask",): ("read", ["--kb", "{kb}", "When does the merger close?"]),
    ("verify",): ("none", ["--pairs", "{pairs}", "--out", "{out}"]),  # reads no data folder
    ("migrate",): ("admin", ["--to", "weaviate"]),
    ("eval", "beir"): ("self", ["{folder}"]),  # indexes into the caller's own knowledge base
    ("chunks",): ("read", ["--kb", "{kb}", "--out", "{out}"]),
    ("date",): ("write", ["--kb", "{kb}", "{doc}", "2001-02-03"]),
    ("language",): ("write", ["--kb", "{kb}", "{doc}", "de"]),
    ("trust",): ("write", ["--kb", "{kb}", "{doc}", "trusted"]),
    ("reembed",): ("admin", []),
    ("learned", "list"): ("self", []),  # records of knowledge bases the caller owns (admins: all)
    ("learned", "revert"): ("admin", ["--id", "1"]),
    ("calibrate",): ("admin", ["--limit", "2"]),  # --show: anyone (the policy in force, no data)
    ("privacy", "forget-mine"): ("self", []),
    ("privacy", "export"): ("self", ["--of", "x", "--out", "{out}"]),  # oneself, or anyone: admins
    ("privacy", "erase"): ("admin", ["--of", "x"]),
    ("privacy", "purge"): ("operator", []),  # applies the knowledge bases' own retention
    ("alerts", "list"): ("admin", []),  # alert rules: admins (tests/test_alerts.py::test_cli_alerts)
    ("alerts", "add"): ("admin", ["error_rate", "0.2"]),
    ("alerts", "delete"): ("admin", ["x"]),
    ("alerts", "check"): ("admin", []),
    # The machine operator's tools: whoever runs them holds the data folder (its database);
    # --user/--groups/--tenant name the key's owner (tests/api, tests/test_api_keys.py).
    ("api-key", "create"): ("operator", ["--scope", "read"]),
    ("api-key", "list"): ("operator", []),
    ("api-key", "revoke"): ("operator", ["{doc}"]),
    # Identity comes with each HTTP request (API keys, OIDC), not from flags (tests/api/test_access.py).
    ("serve",): ("none", []),
}


def test_every_cli_command_is_in_the_matrix():
    assert set(command_paths()) == set(CLI), "a CLI command was added or removed: classify it here"


@pytest.mark.parametrize("path", sorted(CLI))
@pytest.mark.parametrize("flag", GLOBAL_FLAGS)
def test_shared_flags_mean_the_same_in_every_position(path, flag):
    args = [a.format(kb="K", file="f", doc="d", pairs="p", out="o", folder="F") for a in CLI[path][1]]
    value = [] if flag == "--json" else ["v1"]
    positions = [[flag, *value, *path, *args], [*path, *args, flag, *value]]
    if len(path) == 2:
        positions.append([path[0], flag, *value, path[1], *args])
    attr = flag.lstrip("-").replace("-", "_")
    for argv in positions:
        ns = parse_args(argv)
        assert getattr(ns, attr) == (True if flag == "--json" else "v1"), argv
        for other in GLOBAL_FLAGS:  # the others keep their defaults, wherever this one stood
            if other != flag:
                o = other.lstrip("-").replace("-", "_")
                assert getattr(ns, o) in (None, False), (argv, o)


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_matrix(world, capsys, monkeypatch):
    ws, targets = world
    data = str(ws.settings.data_dir)
    for var in ("RAG_USER", "RAG_GROUPS", "RAG_TENANT", "RAG_AUTH"):
        monkeypatch.delenv(var, raising=False)
    tmp = targets["Alpha"].tmp
    (tmp / "cli.txt").write_text("Intruders write here too.")
    who = {"hidden": ["--user", "bob"], "reader": ["--user", "carol"], "tenant": ["--user", "ana", "--tenant", "acme"]}
    for path, (kind, template) in CLI.items():
        if kind not in ("read", "write"):
            continue
        for scen, (caller, kb_name, expected) in SCENARIOS.items():
            t = targets[kb_name]
            out_file = tmp / "cli_out.jsonl"
            out_file.unlink(missing_ok=True)
            fill = dict(kb=kb_name, file=str(tmp / "cli.txt"), doc=t.doc_id, out=str(out_file))
            before = snapshot(ws, t)
            # identity flags before the command, as --help shows them
            code, out, err = run_cli(capsys, "--data-dir", data, *who[scen], *path, *[a.format(**fill) for a in template])
            miss = run_cli(capsys, "--data-dir", data, *who[scen], *path,
                           *[a.format(**{**fill, "kb": "Nope"}) for a in template])
            if expected == "hidden":
                assert code == 2 and err.replace(kb_name, "<asked>") == miss[2].replace("Nope", "<asked>"), (path, scen, err)
                assert not out_file.exists(), (path, scen)  # nothing written for a hidden one
                assert out == "" and "Alpha" not in err.replace(kb_name, "")
            elif kind == "write":
                assert code == 2 and "only the owners" in err, (path, scen, err)
            else:
                shown = out + (out_file.read_text() if "{out}" in template and out_file.exists() else "")
                assert code == 0 and "merger" in shown.lower(), (path, scen, out, err)
            if kind == "write":
                assert snapshot(ws, t) == before, (path, scen)
    # kb list as Bob, identity before the command, JSON before it too: only JSON, nothing of Alice's
    code, out, _ = run_cli(capsys, "--json", "--user", "bob", "--data-dir", data, "kb", "list")
    assert code == 0 and json.loads(out) == []
    code, out, _ = run_cli(capsys, "--data-dir", data, "kb", "--user", "carol", "--json", "list")
    assert [r["name"] for r in json.loads(out)] == ["Shared"]
    code, _, err = run_cli(capsys, "--data-dir", data, "--user", "bob", "migrate", "--to", "weaviate")
    assert code == 2 and "admin" in err
    code, _, err = run_cli(capsys, "--data-dir", data, "--user", "bob", "calibrate", "--limit", "2")
    assert code == 2 and "admin" in err
    code, out, _ = run_cli(capsys, "--data-dir", data, "--user", "bob", "--json", "calibrate", "--show")
    assert code == 0 and json.loads(out)["name"] == "conservative" and "Not calibrated" not in out


def test_cli_with_no_identity_is_the_operator_unless_auth_is_required(world, capsys, monkeypatch):
    ws, _ = world
    data = str(ws.settings.data_dir)
    for var in ("RAG_USER", "RAG_GROUPS", "RAG_TENANT"):
        monkeypatch.delenv(var, raising=False)
    code, out, _ = run_cli(capsys, "--json", "--data-dir", data, "kb", "list")
    assert {r["name"] for r in json.loads(out)} == {"Alpha", "Shared", "Globex"}
    monkeypatch.setenv("RAG_AUTH", "required")
    code, out, err = run_cli(capsys, "--json", "--data-dir", data, "kb", "list")
    assert code == 2 and out == "" and "RAG_AUTH=required" in err
    monkeypatch.setenv("RAG_USER", "carol")
    code, out, _ = run_cli(capsys, "--json", "--data-dir", data, "kb", "list")
    assert [r["name"] for r in json.loads(out)] == ["Shared"]
    assert "local no-auth" in build_parser().format_help() and "operator" in build_parser().format_help()


def test_data_dir_and_identity_before_the_command_in_a_real_process(tmp_path):
    """The reported reproduction, as a user types it: flags before the command."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    env["PYTHONPATH"] = str(REPO)

    def cli(*a):
        return subprocess.run([sys.executable, "-m", "rag_core", *a], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=300)

    data = tmp_path / "elsewhere"
    assert cli("--data-dir", str(data), "--user", "alice", "kb", "create", "HR", "--allow-users", "alice").returncode == 0
    assert (data / "groundwork.db").exists() or any(data.iterdir())
    assert not (tmp_path / ".groundwork").exists()  # not in the current folder
    (tmp_path / "memo.txt").write_text("Salaries rise 4% in April.")
    assert cli("--data-dir", str(data), "--user", "alice", "ingest", "--kb", "HR", str(tmp_path / "memo.txt")).returncode == 0
    p = cli("--user", "bob", "--data-dir", str(data), "search", "--kb", "HR", "--query", "salaries")
    assert p.returncode == 2 and "Salaries" not in p.stdout and p.stderr.strip() == "error: no knowledge base named 'HR'"
    p = cli("--json", "--user", "bob", "--data-dir", str(data), "kb", "list")
    assert p.returncode == 0 and json.loads(p.stdout) == []


# ---- the pages ---------------------------------------------------------------------------------
@pytest.fixture
def app_world(tmp_path, monkeypatch):
    import streamlit as st

    data = tmp_path / "data"
    ws = Workspace(get_settings(data))
    ws.create_kb("Alpha", caller=ALICE, acl_users=["alice"])
    ws.create_kb("Shared", caller=ALICE, acl_users=["alice", "carol"])
    for name in ("Alpha", "Shared"):
        f = tmp_path / f"{name}-memo.txt"
        f.write_text(f"{name} memo: the merger closes in March.")
        ws.ingest(name, [f], caller=ALICE)
    # Alice's upload, already finished: its file name must not reach anyone else's page
    job = ws.jobs.submit(ws.get_kb("Shared", caller=ALICE).kb_id, [("alice-salaries.txt", b"x")], "alice")
    ws.jobs.finish(job, "done")
    ws.close()
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    monkeypatch.chdir(REPO)
    for var in ("RAG_GROUPS", "RAG_TENANT", "RAG_AUTH"):
        monkeypatch.delenv(var, raising=False)
    st.cache_resource.clear()
    yield data
    st.cache_resource.clear()


def _app(user: str, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("RAG_USER", user)
    return AppTest.from_file(str(REPO / "streamlit_app.py"), default_timeout=120).run()


def _texts(at) -> str:
    parts = []
    for kind in ("markdown", "caption", "info", "success", "warning", "error", "text", "subheader", "title"):
        parts += [str(getattr(e, "value", "")) for e in getattr(at, kind)]
    parts += [str(b.label) for b in at.button]
    return "\n".join(parts)


def test_pages_show_a_reader_nothing_to_change_and_nobody_else_s_uploads(app_world, monkeypatch):
    at = _app("carol", monkeypatch)
    assert not at.exception
    assert at.sidebar.multiselect[0].options == ["Shared"]  # chat: "Alpha" is not even listed
    at.switch_page("pages/upload.py").run()
    assert not at.exception
    assert at.selectbox(key="upload_kb").options == ["Shared"]
    assert not at.get("file_uploader"), "a reader can upload"
    assert not [b for b in at.button if b.label == "Delete"], "a reader can delete documents"
    assert "alice-salaries" not in _texts(at), "another user's upload job is shown"
    assert any("only its owners" in i.value for i in at.info)
    at.switch_page("pages/knowledge_bases.py").run()
    assert at.selectbox(key="settings_kb").options == ["Shared"]
    assert next(b for b in at.button if b.label == "Save").disabled
    assert next(b for b in at.button if b.label == "Delete knowledge base").disabled
    assert all(c.disabled for c in at.checkbox if c.label.startswith("Yes, delete"))
    # the answer policy in force is shown to a reader, in words; calibrating it is an admin's
    assert any(e.label.startswith("Answer policy in force:") for e in at.expander)
    assert any("reader decides" in m.value for m in at.markdown)
    assert not [b for b in at.button if b.label == "Calibrate for this model"]


def test_pages_let_the_owner_write_and_see_her_uploads(app_world, monkeypatch):
    at = _app("alice", monkeypatch)
    at.switch_page("pages/upload.py").run()
    at.selectbox(key="upload_kb").set_value("Shared").run()
    assert not at.exception
    assert at.get("file_uploader")
    assert [b for b in at.button if b.label == "Delete"]
    assert "alice-salaries" in _texts(at) or any("1 ingested" in s.value or "Done" in s.value for s in at.success)
    at.switch_page("pages/knowledge_bases.py").run()
    at.selectbox(key="settings_kb").set_value("Shared").run()
    assert not next(b for b in at.button if b.label == "Save").disabled
