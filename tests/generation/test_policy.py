"""The answer policy over scripted signals: every decision, and the rule named as decided_by."""

from __future__ import annotations

import json

import pytest

from rag_core.config import get_settings
from rag_core.generation import policy as P
from rag_core.generation.calibrate import fit
from rag_core.generation import policy_choice as PC
from rag_core.generation.policy import AnswerPolicy, PolicyParams, Signals
from rag_core.generation.policy_choice import policy_for, policy_for_kbs
from rag_core.models import KnowledgeBase, RetrievalSettings

CONSERVATIVE = AnswerPolicy(PolicyParams("conservative", 0.16, 0.50, offline_min=0.16, correct_below=0.68))
MODEL = AnswerPolicy(PolicyParams("model", 0.0, 0.0, offline_min=0.16, correct_below=0.68))


def test_nothing_retrieved_is_decided_by_retrieval():
    d = MODEL.before_generation(Signals("llm", passages=0))
    assert d.abstain and d.decided_by == P.RETRIEVAL


def test_offline_the_reader_judges_under_every_policy():
    for policy in (CONSERVATIVE, MODEL):
        low = policy.before_generation(Signals("extractive", passages=3, evidence=0.10))
        assert low.abstain and low.decided_by == P.READER and "0.10" in low.detail and "0.10" not in low.reason
        assert not policy.before_generation(Signals("extractive", passages=3, evidence=0.30)).abstain


def test_the_reader_vetoes_a_model_only_where_the_policy_says_so():
    weak = Signals("llm", passages=4, evidence=0.05)
    assert CONSERVATIVE.before_generation(weak).decided_by == P.READER
    assert not MODEL.before_generation(weak).abstain
    written = Signals("llm", passages=4, evidence=0.05, labels=("supported",), answers=0.2)
    assert CONSERVATIVE.decide(written).decided_by == P.WRITTEN
    shown = MODEL.decide(written)
    assert shown.action == "answer" and shown.decided_by == P.MODEL


def test_the_models_own_verdict_decides():
    assert MODEL.before_generation(Signals("llm", passages=4, relevance=False)).decided_by == P.RELEVANCE
    d = MODEL.decide(Signals("llm", passages=4, declined=True))
    assert d.abstain and d.decided_by == P.DECLINED


def test_an_answer_with_no_supported_sentence_is_never_shown():
    for policy in (CONSERVATIVE, MODEL):
        d = policy.decide(Signals("llm", passages=4, labels=("unsupported", "partial"), answers=0.9))
        assert d.abstain and d.decided_by == P.VERIFICATION
    flagged = MODEL.decide(Signals("llm", passages=4, labels=("supported", "unsupported"), answers=0.9))
    assert flagged.action == "flag" and flagged.decided_by == P.MODEL


def test_grounded_only_and_lookups():
    d = MODEL.decide(Signals("llm", passages=4, labels=("unsupported",), grounded_only=True, kept=0))
    assert d.abstain and d.decided_by == P.GROUNDED
    # a lookup shows the document's own sentences: decided as a lookup, held to the one
    # "no supported sentence" rule like every route
    assert MODEL.decide(Signals("llm", passages=4, lookup=True, labels=("unsupported", "supported"))).decided_by == P.LOOKUP
    assert MODEL.decide(Signals("llm", passages=4, lookup=True, labels=("unsupported",))).decided_by == P.VERIFICATION
    assert CONSERVATIVE.before_generation(Signals("llm", passages=2, lookup=True, evidence=0.0)).action == "proceed"


def test_uncalibrated_an_endpoint_model_decides_and_a_local_file_keeps_the_gates(tmp_path):
    # the defaults the realistic-model harness measured best (policy_choice.policy_for)
    s = get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_model="m")
    p = policy_for(s)
    assert p.name == "model" and "not calibrated" in p.params.source and "endpoint" in p.params.source
    assert (p.params.evidence_min, p.params.written_min) == (0.0, 0.0)
    gguf = tmp_path / "small.gguf"
    gguf.write_bytes(b"GGUF")
    local = policy_for(get_settings(tmp_path, llm_gguf=gguf))
    assert local.name == "conservative" and "not calibrated" in local.params.source
    assert (local.params.evidence_min, local.params.written_min) == (s.answer_threshold, s.llm_answer_threshold)
    assert "Not calibrated" in local.describe()["summary"]
    assert policy_for(s, "conservative").params.evidence_min == s.answer_threshold


def test_a_stored_calibration_is_the_models_own(tmp_path):
    s = get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_model="m")
    key = PC.model_key(s)
    PC.save_calibrated(tmp_path, key, {"evidence_min": 0.0, "written_min": 0.3},
                       {"answerable_correct": 0.8, "unanswerable_abstained": 0.9, "questions": 270, "target_met": True},
                       [], {"fingerprint": PC.fingerprint(s)})
    p = policy_for(s)
    assert p.name == "calibrated" and p.params.written_min == 0.3 and p.params.evidence_min == 0.0
    assert "8 of 10" in p.describe()["summary"] and "9 of 10" in p.describe()["summary"]
    # another model, or the same name at another endpoint, is not calibrated by it
    other = get_settings(tmp_path, openai_base_url="http://127.0.0.1:10/v1", llm_model="m")
    assert policy_for(other).name == "model" and "not calibrated" in policy_for(other).params.source
    assert policy_for(s, "conservative").name == "conservative"  # a knowledge base's choice wins


def test_knowledge_bases_asked_together_get_the_strictest_of_their_policies(tmp_path):
    s = get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_model="m", answer_policy="model")
    kb = lambda p: KnowledgeBase(kb_id=p or "x", name=p or "x", retrieval=RetrievalSettings(answer_policy=p))  # noqa: E731
    # a knowledge base without a setting follows the deployment's (here: model)
    assert policy_for_kbs(s, [kb(""), kb("")]).name == "model"
    # a "model" base asked with a "conservative" one: the conservative lines hold for both
    both = policy_for_kbs(s, [kb("model"), kb("conservative")])
    assert (both.params.evidence_min, both.params.written_min) == (s.answer_threshold, s.llm_answer_threshold)
    weak = Signals("llm", passages=4, evidence=0.05)
    assert both.before_generation(weak).decided_by == P.READER
    assert not policy_for_kbs(s, [kb("model")]).before_generation(weak).abstain
    # an unset base under a conservative deployment is not loosened by a "model" base beside it
    c = get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_model="m", answer_policy="conservative")
    assert policy_for_kbs(c, [kb("model"), kb("")]).params.evidence_min == c.answer_threshold


def _rows(spec):
    return [{"answerable": a, "correct": c, "abstained": ab, "evidence": e, "answers": w}
            for a, c, ab, e, w in spec]


def test_the_fit_keeps_right_answers_a_veto_would_cost():
    # a model that declines near-misses by itself: no reader line gains anything, so none is set
    rows = _rows([(True, True, False, 0.05, 0.3)] * 8 + [(True, False, False, 0.5, 0.6)] * 2
                 + [(False, False, True, 0.3, 0.0)] * 9 + [(False, False, False, 0.4, 0.7)])
    params, fig, frontier, met = fit(rows, 0.85, llm=True)
    assert met and params == {"evidence_min": 0.0, "written_min": 0.0}
    assert fig["answerable_correct"] == 0.8 and fig["unanswerable_abstained"] == 0.9
    assert frontier[0]["unanswerable_abstained"] == 1.0 and all(
        a["answerable_correct"] < b["answerable_correct"] for a, b in zip(frontier, frontier[1:]))


def test_the_fit_sets_a_line_where_the_model_answers_near_misses():
    # a model that never declines: the written answer's P(answers) separates, so that line is set
    rows = _rows([(True, True, False, 0.3, 0.8)] * 10 + [(False, False, False, 0.3, 0.2)] * 10)
    params, fig, _, met = fit(rows, 0.85, llm=True)
    assert met and 0.2 < params["written_min"] <= 0.8 and fig["answerable_correct"] == 1.0
    assert fig["unanswerable_abstained"] == 1.0


def test_the_fit_says_when_no_policy_reaches_the_target():
    rows = _rows([(True, True, False, 0.5, 0.5)] * 5 + [(False, False, False, 0.5, 0.5)] * 5)
    _, fig, _, met = fit(rows, 0.85, llm=True)
    # declining every near-miss here means answering nothing: that is not chosen, and it says so
    assert not met and fig["target_met"] is False and fig["answerable_correct"] == 1.0


def test_the_shipped_calibration_set_is_train_side_and_small():
    from rag_core.generation.calibrate import SET_PATH, load_set

    docs, qs, _ = load_set()
    assert SET_PATH.stat().st_size <= 1_000_000 and len(docs) >= 40
    ans = [q for q in qs if q["answerable"]]
    assert len(ans) * 2 == len(qs)
    text = {d["id"]: d["text"] for d in docs}
    assert all(q["evidence"] in text[q["doc"]] and all(a in q["evidence"] for a in q["answers"]) for q in ans)
    bench = (SET_PATH.parents[3] / "benchmarks" / "data")
    for f in bench.glob("*.jsonl"):  # no benchmark question is a calibration question
        asked = {json.loads(x).get("question") for x in f.read_text().splitlines() if x.strip()}
        assert not asked & {q["question"] for q in qs}


@pytest.mark.parametrize("name", P.POLICIES)
def test_every_policy_name_is_a_setting(tmp_path, name):
    assert get_settings(tmp_path, answer_policy=name).answer_policy == name


def _calibrate(tmp_path, s, fp=None, questions=270, met=True):
    PC.save_calibrated(tmp_path, PC.model_key(s), {"evidence_min": 0.05, "written_min": 0.4},
                       {"answerable_correct": 0.7, "unanswerable_abstained": 0.9, "questions": questions,
                        "target_met": met}, [], {"fingerprint": fp if fp is not None else PC.fingerprint(s)})


def test_auto_ignores_a_stale_tiny_or_target_missing_calibration_and_says_why(tmp_path):
    s = get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_model="m")
    _calibrate(tmp_path, s)
    assert policy_for(s).name == "calibrated"
    stale = {**PC.fingerprint(s), "reader_scale": "0000"}  # made before reader.json moved the scale
    _calibrate(tmp_path, s, fp=stale)
    p = policy_for(s)
    # ignored: the uncalibrated default of an endpoint model applies, and says why
    assert p.name == "model" and "stale" in p.params.source and "reader scale" in p.params.source
    assert p.params.written_min == 0.0
    # the fast model that runs the relevance check, or a decision-changing setting, moved
    assert "stale" in policy_for(s.model_copy(update={"llm_fast_model": "small"})).params.source
    _calibrate(tmp_path, s)
    assert "stale" in policy_for(s.model_copy(update={"llm_relevance_check": True})).params.source
    _calibrate(tmp_path, s, questions=4)
    assert "only 4 questions" in policy_for(s).params.source
    _calibrate(tmp_path, s, met=False)
    assert "missed its target" in policy_for(s).params.source


def test_the_calibration_key_covers_what_moves_the_signals(tmp_path):
    s = get_settings(tmp_path, openai_base_url="http://127.0.0.1:9/v1", llm_model="m")
    fp = PC.fingerprint(s)
    assert {"reader", "reader_scale", "selection", "prompts", "settings", "calibration_set", "fast_model"} <= set(fp)
    assert PC.fingerprint(s.model_copy(update={"llm_crag": False})) != fp
    assert PC.fingerprint(s, set_sha256="other") != fp


def _signal_rows(n=40, seed=0):
    """Rows as the calibration records them: full signals, some unmeasured (None), a document
    route, a fallback to the reader, declines and unsupported answers."""
    import random

    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        answerable = i % 2 == 0
        kind = rnd.choice(["plain", "plain", "plain", "none", "declined", "unsupported", "document", "fallback"])
        sig = Signals("llm", passages=4, evidence=round(rnd.random(), 2), answers=round(rnd.random(), 2),
                      labels=("supported",))
        if kind == "none":
            sig = Signals("llm", passages=4, evidence=None, answers=None, labels=("supported",))
        elif kind == "declined":
            sig = Signals("llm", passages=4, evidence=0.3, declined=True)
        elif kind == "unsupported":
            sig = Signals("llm", passages=4, evidence=0.9, answers=0.9, labels=("unsupported",))
        elif kind == "document":
            sig = Signals("llm", route="document", labels=("supported",))
        elif kind == "fallback":
            sig = Signals("extractive", passages=4, evidence=0.9, labels=("supported",), fallback="down")
        rows.append({"id": str(i), "answerable": answerable, "correct": answerable and rnd.random() < 0.8,
                     "abstained": False, "mode": sig.mode, "signals": sig.record(), "kind": kind})
    return rows


def test_the_replay_is_the_policys_own_code():
    from rag_core.generation.calibrate import GRID, Replay

    rows = _signal_rows()
    replay = Replay(rows, llm=True)
    assert replay.fallbacks == sum(r["kind"] == "fallback" for r in rows)  # left out: they say nothing of the model
    kept = [r for r in rows if r["kind"] != "fallback"]
    for e in GRID[::10]:
        for w in GRID[::10]:
            policy = Replay.policy(float(e), float(w))
            brute = [not policy.before_generation(Signals.from_record(r["signals"])).abstain
                     and not policy.decide(Signals.from_record(r["signals"])).abstain for r in kept]
            assert replay.shown(float(e), float(w)).tolist() == brute
    strict = replay.shown(0.99, 0.99)
    kinds = [r["kind"] for r in kept]
    # unmeasured signals are not a zero; a document is never vetoed by the reader's lines
    assert all(strict[i] for i, k in enumerate(kinds) if k in ("none", "document"))
    assert not any(strict[i] for i, k in enumerate(kinds) if k in ("declined", "unsupported"))


def test_the_fit_finds_a_nonzero_line_on_recorded_signals():
    from rag_core.generation.calibrate import fit

    rows = []
    for i in range(30):  # right answers read high on the written answer, near-misses low
        rows.append({"answerable": True, "correct": True, "abstained": False, "mode": "llm",
                     "signals": Signals("llm", passages=3, evidence=0.2, answers=0.6 + i / 100,
                                        labels=("supported",)).record()})
        rows.append({"answerable": False, "correct": False, "abstained": False, "mode": "llm",
                     "signals": Signals("llm", passages=3, evidence=0.2, answers=0.1 + i / 100,
                                        labels=("supported",)).record()})
    params, fig, _, met = fit(rows, 0.9, llm=True)
    assert met and 0.39 < params["written_min"] <= 0.6 and params["evidence_min"] == 0.0
    assert fig["answerable_correct"] == 1.0 and fig["unanswerable_abstained"] >= 0.9
    # the chain applies the fitted line: a written answer at 0.3 is withheld, at 0.7 shown
    p = AnswerPolicy(PolicyParams("calibrated", params["evidence_min"], params["written_min"], 0.16, 0.68))
    assert p.decide(Signals("llm", passages=3, labels=("supported",), answers=0.3)).decided_by == P.WRITTEN
    assert not p.decide(Signals("llm", passages=3, labels=("supported",), answers=0.7)).abstain


def test_one_rule_for_no_supported_sentence_and_one_for_a_decline_on_every_route():
    for route in ("search", "document", "compare"):
        for labels in ((), ("unsupported",), ("partial", "unsupported")):
            d = MODEL.decide(Signals("llm", passages=2, route=route, labels=labels))
            assert d.abstain and d.decided_by == P.VERIFICATION and d.mode == "llm"
        d = CONSERVATIVE.decide(Signals("llm", route=route, declined=True, labels=("supported",)))
        assert d.decided_by == P.DECLINED
    assert P.model_declined("I don't have information about that in the selected knowledge bases.")
    assert not P.model_declined("The sources do not mention a warranty, but descale it monthly [1].")


def test_the_reader_standing_in_for_a_failed_model_is_held_to_its_line():
    d = MODEL.decide(Signals("extractive", passages=3, evidence=0.05, labels=("supported",), fallback="timeout"))
    assert d.abstain and d.decided_by == P.READER and d.mode == "extractive"
    shown = MODEL.decide(Signals("extractive", passages=3, evidence=0.5, labels=("supported",), fallback="timeout"))
    assert shown.action == "answer" and shown.decided_by == P.READER and shown.mode == "extractive"
