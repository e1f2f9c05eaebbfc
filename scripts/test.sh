#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what the tests need, then checks format and
# lints, type-checks the Python (mypy, strict), runs the Rust tests and the Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each step's wall time, so that the loop's budget can be watched (CI's log shows them).
step() {
    local start=$SECONDS
    "$@"
    echo "== $((SECONDS - start)) s: $*" >&2
}

step bash scripts/install-deps.sh
step python3 -m pip install --quiet --upgrade pip
step python3 -m pip install --quiet ".[test]"
# The template of a scheme in its own crate, built and installed as its own wheel, as a
# user's would be (its `ftlab.schemes` entry point is what the tests exercise).
step python3 -m pip install --quiet ./examples/rust-scheme

step cargo fmt --all -- --check
step cargo fmt --manifest-path examples/rust-scheme/Cargo.toml -- --check
step cargo clippy --workspace --all-targets --quiet -- -D warnings
step cargo test --workspace --quiet
step python3 -m ruff check python tests examples
step python3 -m ruff format --check python tests examples
step python3 -m mypy python tests/python examples
step python3 -m pytest -q
