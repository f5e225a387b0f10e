"""Run every benchmark in turn (``make bench``); each prints its own results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = [
    "bench_embed.py",
    "bench_ingest.py",
    "bench_retrieval.py",
    "bench_local_index.py",
    "bench_redis.py",
    "bench_redis_ingest.py",
    "bench_serve.py",
    "bench_serve_rest.py",
]

if __name__ == "__main__":
    for script in SCRIPTS:
        if (HERE / script).exists():
            print(f"== {script}", flush=True)
            subprocess.run([sys.executable, str(HERE / script)], check=True, cwd=HERE)
