#!/bin/bash
# The benchmark set issue 48 re-ran before and after the answer path was split (figures: results/issue48_before_after.json).
# usage: run_bench.sh REPO TAG   — runs the #48 before/after benchmark set, logs to /tmp/bench-TAG
set -x
REPO=$1; TAG=$2; OUT=/tmp/bench-$TAG; mkdir -p $OUT
cd $REPO
export RAG_ANSWER_CACHE=false PYTHONUNBUFFERED=1
python benchmarks/routing.py --out $OUT/routing.json > $OUT/routing.log 2>&1
python benchmarks/manual_questions.py --set v2 --pdfs /tmp/manuals/usr --data-dir /tmp/gw-manuals-v2 --out $OUT/manual_v2.jsonl > $OUT/manual_v2.log 2>&1
python benchmarks/perfect_reader.py --set manuals --pdfs /tmp/manuals/usr --data-dir /tmp/gw-manuals-v2 --gates shipped > $OUT/pr_manuals_shipped.log 2>&1
python benchmarks/perfect_reader.py --set manuals --pdfs /tmp/manuals/usr --data-dir /tmp/gw-manuals-v2 --gates shipped --policy model > $OUT/pr_manuals_model.log 2>&1
python benchmarks/answer_quality.py --data-dir /tmp/gw-squad --split test --n 300 --skip-verifier > $OUT/squad_test.log 2>&1
python benchmarks/perfect_reader.py --set squad --data-dir /tmp/gw-oracle-squad --n 100 --limit 50 --gates shipped --policy conservative > $OUT/pr_squad.log 2>&1
python benchmarks/summaries.py chain --split test --data-dir /tmp/gw-summaries --out $OUT/summaries_chain.json > $OUT/summaries.log 2>&1
cp benchmarks/results/perfect_reader_* $OUT/ 2>/dev/null
echo ALLDONE > $OUT/done
