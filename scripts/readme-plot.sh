#!/usr/bin/env bash
# The README's and the docs home page's picture: the default comparison's mapping memory
# against latency (`ftlab compare`, the Quickstart's), regenerated into docs/assets/.
# Needs ftlab installed (`pip install .`) or PYTHONPATH=python.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 -m ftlab compare --out "$out" >/dev/null
cp "$out/memory_vs_latency.png" docs/assets/compare-memory-vs-latency.png
echo "docs/assets/compare-memory-vs-latency.png"
