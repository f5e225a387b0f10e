#!/bin/bash
# The HTML half of the real-document corpus: the Python 3.11 and Node.js 18 manuals as Debian
# ships them (python3-doc pulls in python3.11-doc; nodejs-doc), with their navigation, sidebars
# and scripts as a user's folder holds them. Needs `apt-get update` once; no other network.
#   benchmarks/realdocs/build_html_corpus.sh /work/corpus/html
set -euo pipefail
OUT=${1:?usage: build_html_corpus.sh OUT_DIR}
WORK=$(mktemp -d)
chmod 755 "$WORK"  # let apt's _apt user write the downloads
cd "$WORK"
apt-get download python3.11-doc nodejs-doc >/dev/null
for d in *.deb; do dpkg-deb -x "$d" root; done
mkdir -p "$OUT"/{python-html,nodejs-html}
# Python: the rendered pages (not _sources, _static or the search index)
(cd root/usr/share/doc/python3.11/html && find . -name '*.html' -not -path './_*' | while read -r f; do
   mkdir -p "$OUT/python-html/$(dirname "$f")"; cp "$f" "$OUT/python-html/$f"; done)
# Node.js: one page per API module (some are shipped gzipped)
for f in root/usr/share/doc/nodejs/api/*.html*; do
  case "$f" in
    *.gz) gunzip -c "$f" > "$OUT/nodejs-html/$(basename "${f%.gz}")" ;;
    *) cp "$f" "$OUT/nodejs-html/" ;;
  esac
done
rm -rf "$WORK"
