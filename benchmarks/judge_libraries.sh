#!/bin/sh
# What a kept evaluation library would cost a holodeck user, measured against holodeck's own
# venv (.venv): each library in a throwaway venv under ${TMPDIR:-/tmp}, then the size of the
# packages it adds, its import time (best of 5), and the hosts it tries to reach while
# DeepEval's FaithfulnessMetric judges one case through benchmarks' fake server on 127.0.0.1.
# Usage: sh benchmarks/judge_libraries.sh   (from the repository root; needs PyPI)
set -eu
ROOT=$(pwd)
T=${TMPDIR:-/tmp}/holodeck-judge-libraries
mkdir -p "$T"
for lib in deepeval ragas; do
  [ -x "$T/$lib/bin/python" ] || { python3 -m venv "$T/$lib"; "$T/$lib/bin/pip" -q install "$lib" numpy pytest; }
  echo "== $lib $("$T/$lib/bin/python" -c "import importlib.metadata as m; print(m.version('$lib'))")"
  "$ROOT/.venv/bin/python" "$ROOT/benchmarks/_venv_delta.py" "$ROOT/.venv/bin/python" "$T/$lib/bin/python"
done
best() { b=999; for i in 1 2 3 4 5; do
    t=$( { /usr/bin/time -f "%e" "$2" -c "$3" >/dev/null 2>&1; } 2>&1 | tail -1 )
    b=$(python3 -c "print(min($b, $t))"); done; echo "import, $1: $b s"; }
best "python alone" "$ROOT/.venv/bin/python" "pass"
best "holodeck's judge layer (openai) + rouge-score + sacrebleu" "$ROOT/.venv/bin/python" \
  "import holodeck.evaluations.evaluator, rouge_score.rouge_scorer, sacrebleu"
best "deepeval" "$T/deepeval/bin/python" "from deepeval.metrics import FaithfulnessMetric, GEval"
best "ragas" "$T/ragas/bin/python" "from ragas.metrics import Faithfulness" || true
echo "== hosts DeepEval tries while judging one case (default, then DEEPEVAL_TELEMETRY_OPT_OUT=YES)"
PYTHONPATH="$ROOT/benchmarks/_netlog:$ROOT/tests" "$T/deepeval/bin/python" "$ROOT/benchmarks/_deepeval_probe.py" 2>&1 | grep '^NET' | sort | uniq -c || true
DEEPEVAL_TELEMETRY_OPT_OUT=YES PYTHONPATH="$ROOT/benchmarks/_netlog:$ROOT/tests" \
  "$T/deepeval/bin/python" "$ROOT/benchmarks/_deepeval_probe.py" 2>&1 | grep '^NET' | sort | uniq -c || echo "   (none)"
