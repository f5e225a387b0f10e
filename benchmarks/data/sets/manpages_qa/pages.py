"""The folder's man pages: every page that answers a question, 40 other git pages and 40
other pages drawn with a fixed seed (distractors). Prints one man page path a line."""

import glob
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAN = Path("/usr/share/man")


def page(name: str) -> str | None:
    hits = sorted(glob.glob(f"{MAN}/man[1-8]/{glob.escape(name)}.[1-8]*.gz"))
    return hits[0] if hits else None


answers = {row.split("\t")[2] for row in (HERE / "questions_written.tsv").read_text().splitlines()}
chosen = {p for p in map(page, answers) if p}
gits = sorted(set(glob.glob(f"{MAN}/man[157]/git*.gz")) - chosen)
chosen |= set(random.Random(62).sample(gits, 40))
skip = (
    "gcloud",
    "llvm",
    "x86_64",
    "perf-",
    "openssl-",
    "pam_",
    "devlink",
    "dcb",
    "org.freedesktop",
)
others = sorted(
    p
    for p in glob.glob(f"{MAN}/man[158]/*.gz")
    if p not in chosen and not Path(p).name.startswith(skip) and not Path(p).name.endswith("ssl.gz")
)
chosen |= set(random.Random(62).sample(others, 40))
print("\n".join(sorted(chosen)))
