#!/usr/bin/env bash
# Reruns every paper reproduction and copies the reports they write (NAME.md, from each
# run's summary.json) and their figures into the documentation site, docs/reproductions/NAME/.
#   bash scripts/reproduction-reports.sh           # full runs (about 75 minutes on two cores)
#   bash scripts/reproduction-reports.sh --quick   # quick runs (minutes); the reports say so
# Needs ftlab installed (`pip install .`) or PYTHONPATH=python; real traces from
# ../shared/traces (or $FTLAB_SHARED/traces), else the runs that need them say so.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=()
if [[ "${1:-}" == "--quick" ]]; then
    quick=(--quick)
elif [[ $# -gt 0 ]]; then
    echo "usage: $0 [--quick]" >&2
    exit 2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 -m ftlab reproduce all "${quick[@]}" --out "$out"
for folder in "$out"/*/; do
    name=$(basename "$folder")
    if [[ -f "$folder/FAILED.txt" ]]; then
        echo "$name failed:" >&2
        cat "$folder/FAILED.txt" >&2
        exit 1
    fi
    [[ -f "$folder/$name.md" ]] || continue  # validation/, the scorecard
    rm -rf "docs/reproductions/$name"
    mkdir -p "docs/reproductions/$name"
    cp "$folder/$name.md" "$folder"/*.png "docs/reproductions/$name/"
    echo "docs/reproductions/$name/$name.md"
done
