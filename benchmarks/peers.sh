#!/usr/bin/env bash
# The peers' environment for benchmarks (never for the product): Chroma, and apsw + sqlite-vec
# for the vector-search comparison. Prints the python to pass as --peers.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/.venv-peers"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" --disable-pip-version-check -q install chromadb apsw sqlite-vec numpy
echo "$venv/bin/python"
