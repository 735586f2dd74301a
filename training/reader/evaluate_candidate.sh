#!/usr/bin/env bash
# A trained reader run evaluated in place of the shipped one (issue 25): int8 export into
# rag_core/reader/model/, multi-domain calibration, then the issue's benchmarks with the
# selection weights refitted and the threshold chosen on the train side (SQuAD calib).
# It overwrites the shipped model files and benchmark results: `git restore rag_core/reader/model
# rag_core/generation/selection_weights.json benchmarks/results` puts them back when the run is
# not adopted.
#
#   training/reader/evaluate_candidate.sh RUN_DIR OUT_DIR
#
# Environment (defaults as in the reproduce commands of MODEL_CARD.md):
#   VENV_TRAIN  the training venv (torch)           CACHE  mix/, pairs/ (mix_data.py, make_data.py)
#   MANUALS     the unpacked manual packages (usr/) SQUAD_KB, MANUALS_KB  data folders (built on first use)
#   EXPORT_ARGS extra export.py flags (e.g. "--keep-fp32 12 --fp32-from first" when plain int8 drifts)
#   SCIFACT_HELDOUT the --scifact-heldout share the run's mix_data.py used (default 0.2)
set -euo pipefail
RUN=$1; E=$2
CACHE=${CACHE:-/work/cache}; VENV_TRAIN=${VENV_TRAIN:-$CACHE/venv-train}; MANUALS=${MANUALS:-/tmp/manuals/usr}
SQUAD_KB=${SQUAD_KB:-$CACHE/gw-squad}; MANUALS_KB=${MANUALS_KB:-$CACHE/gw-manuals}
cd "$(dirname "$0")/../.."
mkdir -p "$E"
"$VENV_TRAIN/bin/python" training/reader/export.py --run "$RUN" --pairs "$CACHE/mix" ${EXPORT_ARGS:-} 2>&1 | grep -v -i warn | tee "$E/export.log"
python training/reader/calibrate.py --pairs "$CACHE/pairs" --domains --docs "$CACHE/mix/docs_heldout.jsonl" \
    --scifact-heldout "${SCIFACT_HELDOUT:-0.2}" > "$E/calibrate.log" 2>&1
cp rag_core/reader/model/reader.json rag_core/reader/model/calibration_report.json "$E/"
python benchmarks/evidence_vs_topical.py --pdfs "$MANUALS" --out "$E/evidence_vs_topical.json" 2>&1 | tee "$E/evt.log"
python benchmarks/answer_quality.py --data-dir "$SQUAD_KB" --split calib --fit-selection --choose --skip-verifier > "$E/aq_calib.log" 2>&1
cp rag_core/generation/selection_weights.json "$E/"
T=$(python -c "import json,sys
for l in open(sys.argv[1]):
    d = json.loads(l) if l.startswith('{') else {}
    if 'chosen_threshold' in d: print(d['chosen_threshold']['threshold'])" "$E/aq_calib.log")
echo "threshold $T" | tee "$E/threshold.txt"
RAG_ANSWER_THRESHOLD=$T python benchmarks/manual_questions.py --set v2 --pdfs "$MANUALS" --data-dir "$MANUALS_KB" \
    --out "$E/manual_v2.jsonl" > "$E/manual.log" 2>&1
RAG_ANSWER_THRESHOLD=$T python benchmarks/answer_quality.py --data-dir "$SQUAD_KB" --split test --n 300 > "$E/aq_test.log" 2>&1
echo done | tee -a "$E/threshold.txt"
