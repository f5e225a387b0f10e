"""The packages a venv has beyond a reference venv, and their size on disk: what installing
a library into a holodeck environment adds. Usage: _venv_delta.py REF_PYTHON NEW_PYTHON."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_LIST = (
    "import importlib.metadata as m, json; print(json.dumps({d.metadata['Name'].lower()"
    ".replace('_', '-'): [str(d.locate_file(f)) for f in (d.files or [])] "
    "for d in m.distributions()}))"
)


def distributions(python: str) -> dict[str, list[str]]:
    out = subprocess.run([python, "-c", _LIST], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def main() -> None:
    ref, new = distributions(sys.argv[1]), distributions(sys.argv[2])
    sizes = {
        name: sum(os.path.getsize(p) for p in files if os.path.isfile(p))
        for name, files in new.items()
        if name not in ref
    }
    print(f"{len(sizes)} packages added, {sum(sizes.values()) / 1e6:.1f} MB")
    for name, size in sorted(sizes.items(), key=lambda item: -item[1])[:8]:
        print(f"  {name}: {size / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
